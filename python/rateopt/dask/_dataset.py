"""A dataset partitioned across a Dask cluster, usable wherever a :class:`rateopt.Dataset` is."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import CancelledError
from types import MappingProxyType

import numpy as np

from rateopt._language._data import DEFAULT_DATASET_NAME
from rateopt._language._data import Dataset as LocalDataset
from rateopt._language._lowering import WeightSum
from rateopt._language._predicates import All
from rateopt._language._validation import parse_labels, unique
from rateopt.exceptions import RateoptError

from . import _partitions as P
from ._blocks import RemoteBlock
from ._cluster import check_workers, gather, get_client, holders, lift_lost_pins, lost_cluster_error, submit_on
from ._compile import PartitionedData, PartitionedTable, SubsetStats, partition_block, subset_stats

__all__ = ["Dataset"]

_BASELINE_KINDS = ("auto", "decisions", "scores", "labels")


class Dataset(LocalDataset):
    """A :class:`rateopt.Dataset` whose rows are partitions on a Dask cluster.

    Every column is split into the same partitions as ``X``; partition ``i``
    of each column holds the same rows. Each partition becomes a plain
    :class:`rateopt.Dataset` on a worker, validated there once (labels mapped
    with the classes of the whole dataset, features in the kernel's layout),
    and stays there: contexts, rates, goals and problems are stated on this
    object exactly as on an in-memory dataset, the problem is compiled
    partition-wise (:mod:`rateopt.dask._compile`) and :func:`rateopt.train`
    runs every iteration's kernel pass on the workers.

    Parameters
    ----------
    X : dask array, dask DataFrame, or sequence of partitions
        Features: a 2-D ``dask.array`` (dense, or with scipy sparse chunks), a
        ``dask.dataframe.DataFrame`` of numeric columns, or a list of
        partitions (scipy sparse matrices or arrays, ``dask.delayed`` objects
        or ``distributed`` futures producing them; in-memory ones are scattered
        to the workers, without a source to recompute them from if a worker is
        lost).
    y : 1-D dask array, dask Series or sequence of partitions, default=None
        Labels partitioned like ``X``, in any two-valued form; the positive
        label is decided from all partitions as :class:`rateopt.Dataset` does.
    weights : 1-D dask array, dask Series or sequence of partitions, default=None
        Non-negative finite per-example weights, partitioned like ``X``.
    groups : dask DataFrame, dask Series, 1-D dask array or mapping, default=None
        Group columns partitioned like ``X``: a DataFrame (its columns), a
        named Series, a 1-D array (named by ``group_names``, default
        ``"group"``), or a mapping from column name to a column.
    baseline : 1-D dask array, dask Series or sequence of partitions, default=None
        A deployed model's decisions or scores, partitioned like ``X``; its
        reading (``baseline_kind="auto"``) is decided from all partitions.
    name : str, default="train"
        As in :class:`rateopt.Dataset`.
    positive_label : scalar, default=None
        As in :class:`rateopt.Dataset`.
    group_names : sequence of str, default=None
        Column names of a 1-D array of groups.
    baseline_kind : {"auto", "decisions", "scores", "labels"}, default="auto"
        As in :class:`rateopt.Dataset`.
    client : distributed.Client, default=None
        The cluster (default: the current client).

    Attributes
    ----------
    partitions : list of distributed.Future
        One validated partition per entry, in row order.
    sizes : ndarray of int64
        Rows of each partition.
    n_samples, n_features : int
    classes : tuple or None
        ``(negative_label, positive_label)`` of the whole dataset.

    Raises
    ------
    RateoptError
        If no client runs or a worker cannot import rateopt, a column has a
        different number of partitions than ``X`` or a partition a different
        number of rows, every partition is empty, or a value is invalid (the
        message names the argument and the partition).

    Notes
    -----
    Empty partitions (a filtered dask DataFrame routinely has some) are
    skipped: the dataset is made of the others. Every task that reads a
    partition runs on the worker holding it and only there, so a worker
    holds its own partitions and no copies of others'; a worker that leaves
    the cluster releases the tasks pinned to it, and Dask recomputes the
    partitions it held from their source. Partitions given as in-memory
    arrays have no source: losing a worker that holds one ends the fit with
    an error that says so.
    """

    compile_backend = PartitionedData

    def __init__(self, X, y=None, weights=None, groups=None, baseline=None, *, name: str = DEFAULT_DATASET_NAME,
                 positive_label=None, group_names=None, baseline_kind: str = "auto", client=None):
        if not isinstance(name, str) or not name:
            raise RateoptError(f"name must be a non-empty string, got {name!r}")
        if baseline_kind not in _BASELINE_KINDS:
            raise RateoptError(f"baseline_kind must be 'auto', 'decisions', 'scores' or 'labels', got {baseline_kind!r}")
        if y is None and positive_label is not None:
            raise RateoptError("positive_label was given but y is None")
        self.name = name
        self.client = get_client(client)
        check_workers(self.client)
        lift_lost_pins(self.client)
        x_parts, lengths = P.split(X, "X", two_d=True)
        n = len(x_parts)

        def column(v, what):
            return None if v is None else P.split(v, what, n_parts=n, lengths=lengths)[0]

        # every column is split and checked before anything is sent to the cluster
        y_parts, w_parts, b_parts = column(y, "y"), column(weights, "weights"), column(baseline, "baseline")
        g_parts, gcols = self._group_parts(groups, group_names, n, lengths)
        # partitions known to be empty are skipped (the others' are, once built on the workers)
        keep = [i for i, size in enumerate(lengths) if size != 0]
        if not keep:
            raise RateoptError("X has no rows: every partition is empty")
        x_parts, y_parts, w_parts, b_parts = ([p[i] for i in keep] if p is not None else None
                                              for p in (x_parts, y_parts, w_parts, b_parts))
        if isinstance(g_parts, dict):
            g_parts = {c: [v[i] for i in keep] for c, v in g_parts.items()}
        elif g_parts is not None:
            g_parts = [g_parts[i] for i in keep]
        xf = self._futures(x_parts)
        yf, wf, bf = (None if p is None else self._futures(p) for p in (y_parts, w_parts, b_parts))
        gf = None if g_parts is None else self._group_futures(g_parts)
        self.X, self.y, self.weights, self.baseline = X, y, weights, baseline
        self.groups = MappingProxyType(gcols)
        pos, self.classes = (None, None) if yf is None else self._global_labels(yf, positive_label)
        kind, check_labels = ("auto", False) if bf is None else self._baseline_reading(bf, baseline_kind)
        partitions = [
            self.client.submit(P.make_partition, i, name, xf[j], None if yf is None else yf[j],
                               None if wf is None else wf[j], None if gf is None else gf[j],
                               None if bf is None else bf[j], positive_label=pos, classes=self.classes,
                               baseline_kind=kind, check_labels=check_labels, pure=False)
            for j, i in enumerate(keep)]
        self.partitions = partitions
        self._wait(partitions)  # built: each task reading one is pinned to its holder
        shapes = self._on_partitions(_shape)
        nonempty = [j for j, (rows, _) in enumerate(shapes) if rows]
        if not nonempty:
            raise RateoptError("X has no rows: every partition is empty")
        self.partitions = [partitions[j] for j in nonempty]
        first = keep[nonempty[0]]
        self.n_features = int(shapes[nonempty[0]][1])
        for j in nonempty:
            if shapes[j][1] != self.n_features:
                raise RateoptError(f"partition {keep[j]} of X has {shapes[j][1]} features but partition {first} has "
                                   f"{self.n_features}")
        self.sizes = np.array([shapes[j][0] for j in nonempty], dtype=np.int64)
        self.n_samples = int(self.sizes.sum())

    # -- building ---------------------------------------------------------------------------

    def _futures(self, parts):
        """Every partition as a future: delayed ones computed on the cluster (keeping their source),
        in-memory ones scattered."""
        import dask
        from distributed import Future

        out = list(parts)
        lazy = [i for i, p in enumerate(out) if dask.is_dask_collection(p)]
        local = [i for i, p in enumerate(out) if not dask.is_dask_collection(p) and not isinstance(p, Future)]
        for i, f in zip(lazy, self.client.compute([out[i] for i in lazy])):
            out[i] = f
        if local:
            # unique keys: a content-hashed key released by an earlier (failed) call could drop the new data
            for i, f in zip(local, self.client.scatter([out[i] for i in local], hash=False)):
                out[i] = f
        return out

    def _group_futures(self, g_parts):
        """Per partition, its group columns as futures (of a DataFrame partition, or a dict of futures)."""
        if not isinstance(g_parts, dict):
            return self._futures(g_parts)
        split = {c: self._futures(v) for c, v in g_parts.items()}
        return [{c: split[c][i] for c in split} for i in range(len(next(iter(split.values()))))]

    def _group_parts(self, groups, group_names, n, lengths):
        """The partitions of the group columns (of a DataFrame, or a dict per column) and the columns by name."""
        if groups is None:
            if group_names is not None:
                raise RateoptError("group_names was given but groups is None")
            return None, {}
        if P._is_dask_collection(groups) and getattr(groups, "ndim", None) == 2 and hasattr(groups, "columns"):
            if group_names is not None:
                raise RateoptError("group_names applies to array groups; a DataFrame has columns")
            parts = P.split(groups, "groups", n_parts=n, lengths=lengths, two_d=True)[0]
            return parts, {c: groups[c] for c in groups.columns}
        if isinstance(groups, Mapping):
            if group_names is not None:
                raise RateoptError("group_names applies to array groups; a mapping has keys")
            cols = dict(groups)
        elif P._is_dask_collection(groups) and getattr(groups, "ndim", None) == 1:
            if hasattr(groups, "name") and not hasattr(groups, "chunks"):  # dask Series
                cols = {groups.name if groups.name is not None else "group": groups}
            else:
                names = list(group_names) if group_names is not None else ["group"]
                if len(names) != 1:
                    raise RateoptError(f"groups is 1-D (one column) but {len(names)} group_names were given")
                cols = {names[0]: groups}
        else:
            raise TypeError("groups must be a dask DataFrame, a dask Series, a 1-D dask array or a mapping of "
                            f"column name to partitioned column, got {type(groups).__name__}")
        return {c: P.split(v, f"group column {c!r}", n_parts=n, lengths=lengths)[0] for c, v in cols.items()}, cols

    def _global_labels(self, yf, positive_label):
        """The positive label and classes of all partitions (the rule of :class:`rateopt.Dataset`)."""
        summaries = gather(self.client, [self.client.submit(P.label_summary, f, pure=False) for f in yf], self.name)
        summaries = [s for s in summaries if s is not None]  # empty partitions say nothing
        if not summaries:
            raise RateoptError("y has no entries: every partition is empty")
        if any(missing for _, _, missing in summaries):
            raise RateoptError("y contains missing values (NaN or None); drop or label them")
        dtype = summaries[0][0]
        values = [v for _, vals, _ in summaries for v in vals]
        rep = np.array(values, dtype=dtype) if values else np.array([], dtype=dtype)
        _, classes = parse_labels(rep, rep.shape[0], positive_label)
        return classes[1], classes

    def _baseline_reading(self, bf, kind):
        """``(kind, check_labels)``: ``"auto"`` resolved from all partitions as :class:`rateopt.Dataset` reads it."""
        if kind == "labels" and self.classes is None:
            raise RateoptError("baseline_kind='labels' but y is None")
        if kind != "auto":
            return kind, False
        summaries = gather(self.client, [self.client.submit(P.baseline_summary, f, self.classes, pure=False)
                                         for f in bf], self.name)
        summaries = [s for s in summaries if s is not None]  # empty partitions say nothing
        if not summaries:
            raise RateoptError("baseline has no entries: every partition is empty")
        in_labels = all(s[2] for s in summaries)
        kinds = {s[0] for s in summaries}
        if not kinds <= set("biuf"):
            if not in_labels:
                raise RateoptError("baseline must hold boolean/0-1 decisions, real scores or the label values, "
                                   f"got dtype kind(s) {sorted(kinds)}")
            return "labels", False
        if kinds == {"b"} or all(s[1] for s in summaries):
            return "decisions", in_labels
        return "scores", in_labels

    # -- tasks on the partitions, each where its partition lives ----------------------------------

    def _wait(self, futures):
        """Wait until every future is done (a cancellation raised as the loss of partitions)."""
        from distributed import wait

        try:
            with self.client.as_current():  # distributed.wait uses the current client: make it this dataset's
                wait(futures)
        except (CancelledError, OSError) as exc:  # OSError: distributed's CommClosedError
            raise lost_cluster_error(self.client, self.name, exc) from None

    def _submit_on_partitions(self, fn, *args):
        """``fn(partition, *args)`` for every partition, each pinned to the worker holding it (futures)."""
        where = holders(self.client, self.partitions, self.name)
        return [submit_on(self.client, w, fn, p, *args) for p, w in zip(self.partitions, where)]

    def _on_partitions(self, fn, *args):
        """The results of ``fn(partition, *args)`` for every partition, each run on the worker holding it."""
        return gather(self.client, self._submit_on_partitions(fn, *args), self.name)

    # -- what the compiler and the driver ask ---------------------------------------------------

    def subset_stats(self, predicate):
        """A subset's member count, total weight and per-partition mask digests (one global reduction).

        Parameters
        ----------
        predicate : object
            The subset's predicate (a context's ``_predicate``), evaluated on every partition.

        Returns
        -------
        SubsetStats
            ``count``, ``weight`` (a ``WeightSum``, partial sums added in partition order) and ``digests``.
        """
        stats = self._on_partitions(subset_stats, predicate)
        total = WeightSum()
        for _, mant, exp, _ in stats:  # partition order: deterministic
            total = total + WeightSum(mant, exp)
        return SubsetStats(sum(s[0] for s in stats), total, tuple(s[3] for s in stats))

    def membership_tables(self, predicates, weights, offset):
        """Build every partition's membership table on its worker, with the atoms' global weight sums.

        Parameters
        ----------
        predicates : list
            The predicate of each of the dataset's atoms, in local atom order.
        weights : list of WeightSum
            Each atom's global total weight (the denominators).
        offset : int
            Global id of the dataset's first atom.

        Returns
        -------
        PartitionedTable
            Futures of the partitions' :class:`~rateopt.dask._compile.PartitionBlock`.
        """
        exps = [w.exp for w in weights]
        mants = [w.mant for w in weights]
        blocks = self._submit_on_partitions(partition_block, predicates, exps, mants)
        return PartitionedTable(self.name, self.n_samples, len(predicates), offset, blocks)

    def game_block(self, table):
        """The training game's block of this dataset.

        Parameters
        ----------
        table : PartitionedTable
            The dataset's compiled tables.

        Returns
        -------
        RemoteBlock
            Raises the first partition's error if a table could not be built.
        """
        self._wait(table.blocks)
        for f in table.blocks:
            if f.status == "error":
                f.result()  # raises the partition's error
        return RemoteBlock(self.client, table.blocks, self.sizes, np.asarray(table.atom_ids, dtype=np.int64),
                           self.name, self.n_features)

    # -- the rest of rateopt.Dataset's interface --------------------------------------------------

    @property
    def total_weight(self) -> float:
        """Sum of the example weights, by one reduction over the partitions."""
        return self.subset_stats(All()).weight.value()

    def group_values(self, column) -> np.ndarray:
        """Distinct non-missing values of a group column, by one reduction over the partitions.

        Parameters
        ----------
        column : str
            Name of a group column.

        Returns
        -------
        ndarray
            The sorted distinct values.
        """
        self._group_column(column)
        parts = self._on_partitions(_group_values, column)
        return unique(np.concatenate(parts))

    def __getstate__(self):
        raise TypeError("a rateopt.dask.Dataset refers to data on a cluster and cannot be pickled; "
                        "ship its partitions (dataset.partitions) instead")

    def __repr__(self) -> str:
        parts = [f"name={self.name!r}", f"n_samples={self.n_samples}", f"n_partitions={len(self.partitions)}"]
        parts.append("labeled" if self.has_labels else "unlabeled")
        if self.groups:
            parts.append(f"groups={list(self.groups)!r}")
        if self.has_baseline:
            parts.append("baseline")
        return f"rateopt.dask.Dataset({', '.join(parts)})"


def _shape(part):
    return (0, None) if part is None else (part.n_samples, part.X.n_features)


def _group_values(part, column):
    return part.data.group_values(column)
