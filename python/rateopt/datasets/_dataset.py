"""The container the benchmark loaders return, and its seeded splits."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from rateopt._language._data import Dataset
from rateopt._language._validation import readonly

__all__ = ["BenchmarkDataset", "split_sizes"]


def _paper_fractions(paper_split):
    total = float(sum(paper_split))
    return tuple(s / total for s in paper_split)


def split_sizes(n_samples, sizes):
    """Turn ``sizes`` into three counts that sum to ``n_samples``.

    Parameters
    ----------
    n_samples : int
        Number of rows to split.
    sizes : sequence of 3 numbers
        ``(train, valid, test)``: either integers summing to ``n_samples``, or
        non-negative fractions summing to 1. Fractions give
        ``n_valid = round(n * f_valid)``, ``n_test = round(n * f_test)`` and the
        rest to training.

    Returns
    -------
    tuple of int
        ``(n_train, n_valid, n_test)``.

    Raises
    ------
    ValueError
        If ``sizes`` is not three numbers of one of the two kinds above.
    """
    sizes = tuple(sizes)
    if len(sizes) != 3:
        raise ValueError(f"sizes must be (train, valid, test), got {sizes!r}")
    if all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in sizes):
        counts = tuple(int(s) for s in sizes)
        if min(counts) < 0 or sum(counts) != n_samples:
            raise ValueError(f"integer sizes must be >= 0 and sum to n_samples={n_samples}, got {counts}")
        return counts
    try:
        fr = tuple(float(s) for s in sizes)
    except (TypeError, ValueError):
        raise ValueError(f"sizes must be numbers, got {sizes!r}") from None
    if not all(math.isfinite(f) and f >= 0 for f in fr) or abs(sum(fr) - 1.0) > 1e-9:
        raise ValueError(f"fractional sizes must be >= 0 and sum to 1, got {sizes!r}")
    n_valid = round(n_samples * fr[1])
    n_test = round(n_samples * fr[2])
    return n_samples - n_valid - n_test, n_valid, n_test


@dataclass(frozen=True, eq=False)
class BenchmarkDataset:
    """A benchmark dataset: sparse features, 0/1 labels, protected groups and seeded splits.

    Returned by the loaders of :mod:`rateopt.datasets`; the arrays are
    read-only and may be shared between calls (the parsed file is cached).

    Parameters
    ----------
    name : str
        Short name, e.g. ``"adult"``.
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Features, float64: categoricals one-hot, numerics scaled (see the loader).
    y : ndarray of shape (n_samples,) of int8
        Labels in {0, 1} (1 is the positive class named by ``label``).
    groups : pandas.DataFrame
        Protected attributes as readable strings (e.g. ``sex`` is ``"Female"``
        / ``"Male"``), one row per example.
    feature_names : tuple of str
        One name per column of ``X`` (``"age"``, ``"sex=Female"``, ...).
    source : str
        Where the data came from: ``"<dist>==<version>:<path in package>"``
        (several joined by ``" + "``).
    label : str
        What ``y == 1`` means.
    paper_split : tuple of int or None, default=None
        The paper's (train, valid, test) sizes where a paper used the dataset;
        the default split then follows their proportions.
    weights : ndarray of shape (n_samples,) or None, default=None
        Per-example weights shipped with the data (census KDD's instance
        weights), else None.
    notes : str, default=""
        Preprocessing notes.
    file_order_split : bool, default=False
        The default split (``split()`` without ``sizes``) takes the rows in
        file order: the first ``paper_split[0]`` rows train, the next
        ``paper_split[1]`` validate and the last ``paper_split[2]`` test (a
        split shipped with the data, e.g. UCI Adult's ``adult.data`` /
        ``adult.test``); ``random_state`` is then not used.
    frame : pandas.DataFrame or None, default=None
        With ``as_frame=True`` (else None): one DataFrame, row ``i`` being row
        ``i`` of ``X``, ``y``, ``groups`` and ``weights`` (the same order), with
        the raw feature columns in ``X``'s order (numerics unscaled,
        categoricals as their labels, of pandas' ``category`` dtype, before
        the one-hot encoding; ``X`` is their encoding;
        ``load_adult(source="uci")``: the numbers ``X`` bins), then each group column that is not already one of them (named
        as in ``groups``, or ``<name>_group`` when a raw column has that name
        but other values, e.g. Adult's numeric ``age`` and its buckets
        ``age_group``), the label ``"label"`` (0/1, ``y``) and, where
        the data has weights, ``"weight"``. ``rateopt datasets export`` writes
        it to a file ``rateopt fit`` reads.
    frame_roles : dict or None, default=None
        With ``as_frame=True``: which of ``frame``'s columns is what:
        ``label`` (``"label"``), ``groups`` (group name -> its column),
        ``weight`` (``"weight"`` or None), ``features`` (the raw feature
        columns), ``categorical`` (those of them that are categorical) and
        ``drop`` (the group columns that are not features).
        ``rateopt fit --label label --groups <columns> --drop <drop>`` then
        trains on the features ``X`` encodes.

    Attributes
    ----------
    n_samples : int
        Number of rows.
    n_features : int
        Number of columns of ``X``.
    """

    name: str
    X: sp.csr_matrix
    y: np.ndarray
    groups: object
    feature_names: tuple
    source: str
    label: str
    paper_split: tuple | None = None
    weights: np.ndarray | None = None
    notes: str = field(default="", repr=False)
    file_order_split: bool = False
    frame: object = field(default=None, repr=False)
    frame_roles: dict | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.file_order_split and (self.paper_split is None or sum(self.paper_split) != self.n_samples):
            raise ValueError("file_order_split needs paper_split counts that sum to the number of rows, got "
                             f"{self.paper_split!r} for {self.n_samples} rows")

    @property
    def n_samples(self):
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def n_features(self):
        """Number of columns of ``X``."""
        return int(self.X.shape[1])

    def default_sizes(self):
        """The default ``(train, valid, test)`` fractions of :meth:`split`.

        Returns
        -------
        tuple of float
            The paper's proportions (``paper_split`` normalized) where a paper
            used this dataset, else ``(0.7, 0.1, 0.2)``.
        """
        if self.paper_split is None:
            return (0.7, 0.1, 0.2)
        return _paper_fractions(self.paper_split)

    def split(self, random_state=0, sizes=None):
        """Random, seeded, disjoint train/validation/test row indices covering every row.

        Parameters
        ----------
        random_state : int, default=0
            Seed of ``numpy.random.default_rng``; the same seed gives the same split.
        sizes : sequence of 3 numbers, default=None
            ``(train, valid, test)`` as integer counts summing to ``n_samples``
            or fractions summing to 1 (see :func:`split_sizes`). None: the
            paper's proportions where a paper used this dataset (e.g. Adult:
            34,190 / 4,884 / 9,768 of 48,842, the paper's 34,189 / 4,884 / 9,768
            plus the one row it left out), else 70 / 10 / 20 %; for a dataset
            with ``file_order_split`` (UCI Adult, ``load_adult(source="uci")``)
            the shipped split in file order, not random.

        Returns
        -------
        train_idx : ndarray of int64
            Sorted training row indices.
        valid_idx : ndarray of int64
            Sorted validation row indices.
        test_idx : ndarray of int64
            Sorted test row indices.
        """
        n = self.n_samples
        if sizes is None and self.file_order_split:
            a, b = self.paper_split[0], self.paper_split[0] + self.paper_split[1]
            return tuple(np.arange(lo, hi, dtype=np.int64) for lo, hi in ((0, a), (a, b), (b, n)))
        counts = split_sizes(n, self.default_sizes() if sizes is None else sizes)
        perm = np.random.default_rng(random_state).permutation(n)
        a, b = counts[0], counts[0] + counts[1]
        return tuple(np.sort(part).astype(np.int64) for part in (perm[:a], perm[a:b], perm[b:]))

    def subset(self, indices):
        """The rows ``indices`` as a new :class:`BenchmarkDataset` (same columns and scaling).

        Parameters
        ----------
        indices : array-like of int
            Row indices.

        Returns
        -------
        BenchmarkDataset
            With ``paper_split`` and ``file_order_split`` cleared (its default
            split is then 70/10/20); ``frame`` holds the same rows.
        """
        idx = np.asarray(indices, dtype=np.int64)
        X = self.X[idx]
        y = readonly(np.array(self.y[idx]))
        w = None if self.weights is None else readonly(np.array(self.weights[idx]))
        groups = self.groups.iloc[idx].reset_index(drop=True)
        frame = None if self.frame is None else self.frame.iloc[idx].reset_index(drop=True)
        return BenchmarkDataset(name=self.name, X=X, y=y, groups=groups, feature_names=self.feature_names,
                                source=self.source, label=self.label, paper_split=None, weights=w,
                                notes=self.notes, frame=frame, frame_roles=self.frame_roles)

    def to_dataset(self, indices=None, *, name="train", groups=None):
        """A :class:`rateopt.Dataset` of some rows, ready for goals and :func:`rateopt.train`.

        Parameters
        ----------
        indices : array-like of int, default=None
            Row indices (None: every row).
        name : str, default="train"
            The dataset's name.
        groups : sequence of str, default=None
            Group columns to pass (None: all of ``self.groups``).

        Returns
        -------
        rateopt.Dataset
            Features ``X[indices]`` (CSR), labels, weights and groups (object arrays).
        """
        idx = np.arange(self.n_samples) if indices is None else np.asarray(indices, dtype=np.int64)
        cols = list(self.groups.columns) if groups is None else list(groups)
        gdict = {c: np.asarray(self.groups[c].to_numpy(dtype=object)[idx], dtype=object) for c in cols}
        weights = None if self.weights is None else self.weights[idx]
        return Dataset(self.X[idx], self.y[idx], weights=weights, groups=gdict, name=name)

    def __repr__(self):
        return (f"BenchmarkDataset(name={self.name!r}, n_samples={self.n_samples}, "
                f"n_features={self.n_features}, nnz={self.X.nnz}, positives={int(self.y.sum())}, "
                f"groups={list(self.groups.columns)!r}, source={self.source!r})")
