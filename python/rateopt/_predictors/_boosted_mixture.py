"""The solution of a boosted run: a mixture of prefixes of one booster, saved with the trees it needs.

A :class:`BoostedMixture` classifies each row by one prefix of the booster,
drawn with the same row-keyed uniforms as every rateopt mixture
(:mod:`rateopt._predictors._draws`), so a row's decision does not depend on its
batch. Its file (format :data:`BOOSTED_FORMAT`) holds the first
``max(prefix_lengths)`` trees in the backend's own text or JSON model format,
the prefix lengths and the probabilities; the metadata record the SHA-256 of
the trees, checked on load, so a truncated or edited file is refused before
the backend parses it. Nothing is unpickled.
"""

from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse as sp

from ._draws import is_distribution
from ._boosting import BACKENDS, BOOSTERS, KEPT_BINS, NEGATIVE_PREFIX, BoosterPrefix, KeptPrefix
from ._ensembles import EstimatorMixture
from ._archive import class_labels_from_meta, class_labels_meta, feature_names_from_meta, feature_names_meta
from ._scoring import checked_feature_names
from .._utils._archive import damaged, write_archive
from ..exceptions import RateoptError

__all__ = ["BoostedMixture", "ClassBoostedMixture", "KeptBins",
           "BOOSTED_FORMAT", "CANDIDATE_ROUNDS", "THRESHOLDED_KIND", "candidate_rounds", "boosted_mixture_from_file", "booster_from_file", "booster_payload",
           "booster_of", "models_mixture", "prefixes_scorer", "prefix_lengths_from_file"]

#: The format name of a boosted model file.
BOOSTED_FORMAT = "rateopt-boosted-model"
#: The file kind of a thresholded solution of boosted prefixes (each prefix followed by its threshold rule).
THRESHOLDED_KIND = "boosted-thresholded"

#: Candidate prefixes of a boosted run's thresholded solution: the ``K + 1`` prefixes ``round(j T / K)``,
#: ``j = 0..K``, of a run of ``T`` trees. Chosen by measurement (bench/boosting_candidates.py).
CANDIDATE_ROUNDS = 16


def candidate_rounds(n_trees, k=CANDIDATE_ROUNDS):
    """The prefix lengths whose threshold rules a boosted run's thresholded solution re-fits.

    ``round(j n_trees / k)`` for ``j = 0..k`` (distinct; every prefix when
    ``n_trees <= k``), from the empty ensemble to the whole booster. Fixed by
    the number of trees alone, so that the training loop knows them before it
    grows the trees and keeps their training scores
    (``keep_training_scores`` of the booster adapters).

    Parameters
    ----------
    n_trees : int
    k : int, default=CANDIDATE_ROUNDS

    Returns
    -------
    ndarray of int64
    """
    return np.unique(np.round(np.linspace(0, int(n_trees), int(k) + 1)).astype(np.int64))


class BoostedMixture(EstimatorMixture):
    """A mixture of prefixes of one boosted ensemble; each row is classified by one drawn prefix.

    An :class:`~rateopt.EstimatorMixture` whose support models are prefixes of
    one booster (``predict_proba``, ``predict`` and the row-keyed draws are the
    same), which, unlike arbitrary estimators, saves and loads.

    Parameters
    ----------
    booster : object
        The backend's booster adapter (``raw_scores(X, n_trees)``, ``to_bytes(n_trees)``).
    prefix_lengths : array-like of int of shape (n_models,)
        The number of trees of each support prefix (0: the empty ensemble,
        whose score is 0 and whose decision is positive; -1: the constant
        classifier that decides negative on every row).
    probabilities : array-like of shape (n_models,)
        Mixture probabilities (non-negative, summing to 1).
    n_features : int
        Width of the inputs.
    feature_names : sequence of str, default=None
        The training columns: a DataFrame's columns are checked against them.

    Notes
    -----
    A prefix decides positive iff its raw score is ``>= 0``.
    """

    kind = "boosted-mixture"

    def __init__(self, booster, prefix_lengths, probabilities, n_features, *, feature_names=None):
        lengths = np.asarray(prefix_lengths)
        if lengths.ndim != 1 or lengths.shape[0] < 1 or lengths.dtype.kind not in "iu":
            raise ValueError("prefix_lengths must be a non-empty 1-D array of integers")
        if np.any(lengths < NEGATIVE_PREFIX) or np.any(lengths > booster.n_trees):
            raise ValueError(f"prefix_lengths must be in [-1, {booster.n_trees}] (the booster's trees; -1: the "
                             "constant negative classifier)")
        super().__init__([BoosterPrefix(booster, t, n_features) for t in lengths], probabilities, n_features)
        self.booster = booster
        self.prefix_lengths_ = lengths.astype(np.int64)
        self.feature_names_in_ = checked_feature_names(feature_names, self.n_features_in_)

    @property
    def backend(self):
        """The boosting library: ``"lightgbm"`` or ``"xgboost"``."""
        return self.booster.backend

    def _scores(self, Xm):
        data = sp.csr_matrix(Xm.data) if sp.issparse(Xm.data) else Xm.data
        if hasattr(self.booster, "prefix_scores"):  # every prefix in one pass over the trees
            return self.booster.prefix_scores(data, self.prefix_lengths_)
        return np.column_stack([self.booster.raw_scores(data, int(t)) for t in self.prefix_lengths_])

    def _decisions(self, Xm):
        return (self._scores(Xm) >= 0).astype(np.float64)

    def decision_function(self, X):
        """Every support prefix's raw score, shape (n_samples, n_models)."""
        return self._scores(self._features(X))

    def scores(self, X):
        """Every support prefix's raw score, shape (n_samples, n_models): the scorer of a thresholded solution.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_models)
        """
        return self.decision_function(X)

    def kept_training_scores(self):
        """The training rows' quantile bins of every support prefix, kept while the trees were grown, or None
        unless every prefix's were kept (the constant rules need none: their scores are -1 and 0).

        Returns
        -------
        KeptBins or None
        """
        if getattr(self.booster, "kept_prefix", None) is None:
            return None
        kept = {int(t): self.booster.kept_prefix(int(t)) for t in self.prefix_lengths_ if t > 0}
        if not kept or any(v is None for v in kept.values()):
            return None
        n = next(iter(kept.values())).codes.shape[0]
        constant = {NEGATIVE_PREFIX: -1.0, 0: 0.0}
        prefixes = [kept[int(t)] if t > 0 else KeptPrefix(np.zeros(n, dtype=np.uint8), np.array([constant[int(t)]]),
                                                         np.array([np.nan]), np.full(n, constant[int(t)]))
                    for t in self.prefix_lengths_]
        return KeptBins(prefixes, trims_heap=getattr(self.booster, "trims_heap", False))

    def subset(self, keep, probabilities):
        """The mixture of the support prefixes ``keep`` with new ``probabilities``.

        Parameters
        ----------
        keep : array-like of int
            Indices of the support prefixes to keep.
        probabilities : array-like of shape (len(keep),)

        Returns
        -------
        BoostedMixture
        """
        return BoostedMixture(self.booster, self.prefix_lengths_[np.asarray(keep, dtype=np.int64)], probabilities,
                              self.n_features_in_, feature_names=self.feature_names_in_)

    def save(self, path):
        """Save to ``path`` (``.npz``; no pickle): the trees up to the longest prefix. See :func:`rateopt.load`.

        Parameters
        ----------
        path : str or os.PathLike
        """
        self.save_as(path, self.kind)

    def save_as(self, path, kind, arrays=None, meta=None):
        """Save the trees, prefix lengths and probabilities under the file kind ``kind``, with more ``arrays``
        and metadata fields ``meta`` (e.g. a thresholded solution's rules, file kind ``"boosted-thresholded"``).

        Parameters
        ----------
        path : str or os.PathLike
        kind : str
        arrays : dict of str to ndarray, default=None
        meta : dict, default=None
        """
        meta_extra = meta
        meta, payload = booster_payload(self.booster, max(0, int(self.prefix_lengths_.max())), self.n_features_in_)
        meta.update(feature_names_meta(self.feature_names_in_))
        write_archive(path, {"kind": kind, **meta, **(meta_extra or {})},
                      {**payload, "prefix_lengths": self.prefix_lengths_, "probabilities": self.probabilities_,
                       **(arrays or {})}, BOOSTED_FORMAT)

    def __repr__(self):
        return (f"BoostedMixture(backend={self.backend!r}, n_models={self.n_models}, "
                f"prefix_lengths={self.prefix_lengths_.tolist()})")


class ClassBoostedMixture(BoostedMixture):
    """A mixture of prefixes of one multiclass booster (K classes); each row is classified by one drawn prefix.

    A prefix of ``t`` rounds (``t K`` trees) predicts the class of its largest
    raw score (lowest position on ties, as :class:`~rateopt.MulticlassClassifier`);
    the empty prefix (every score 0) predicts ``classes[0]``. The draws are
    the row-keyed ones of every rateopt mixture.

    Parameters
    ----------
    booster : object
        The backend's multiclass booster adapter (``n_classes`` = K).
    prefix_lengths : array-like of int of shape (n_models,)
        The rounds of each support prefix, in ``[0, booster.n_trees]``.
    probabilities : array-like of shape (n_models,)
        Mixture probabilities (non-negative, summing to 1).
    n_features : int
        Width of the inputs.
    classes : array-like of shape (K,)
        The class labels, in the order of the score columns.
    feature_names : sequence of str, default=None
        The training columns: a DataFrame's columns are checked against them.
    """

    def __init__(self, booster, prefix_lengths, probabilities, n_features, *, classes, feature_names=None):
        classes = np.asarray(classes)
        if classes.ndim != 1 or classes.shape[0] != getattr(booster, "n_classes", 1) or classes.shape[0] < 3:
            raise ValueError(f"classes must hold one label per score column of the booster "
                             f"({getattr(booster, 'n_classes', 1)}, at least 3), got shape {classes.shape}")
        if np.any(np.asarray(prefix_lengths) < 0):
            raise ValueError("prefix_lengths of a multiclass booster must be >= 0 (no constant negative prefix)")
        super().__init__(booster, prefix_lengths, probabilities, n_features, feature_names=feature_names)
        self.classes_ = classes

    @property
    def n_classes(self):
        """Number of classes K."""
        return self.classes_.shape[0]

    def _all_scores(self, Xm):
        """Every support prefix's K scores, shape (n_samples, n_models, K)."""
        data = sp.csr_matrix(Xm.data) if sp.issparse(Xm.data) else Xm.data
        return np.stack([self.booster.raw_scores(data, int(t)) for t in self.prefix_lengths_], axis=1)

    def _votes(self, Xm):
        """Every support prefix's predicted class position, shape (n_samples, n_models)."""
        return np.argmax(self._all_scores(Xm), axis=2).astype(np.int64)

    def decision_function(self, X):
        """Every support prefix's K raw scores, shape (n_samples, n_models, K)."""
        return self._all_scores(self._features(X))

    def scores(self, X):
        """Refused: the thresholded solutions of boosted runs are two-class (a K-class run's default is
        the m-stochastic mixture)."""
        raise RateoptError("a K-class boosted mixture has no one score per prefix: use decision_function(X)")

    def kept_training_scores(self):
        """None: no training scores are kept for K-class prefixes (no thresholded solution re-fits them)."""
        return None

    def subset(self, keep, probabilities):
        """The mixture of the support prefixes ``keep`` with new ``probabilities``.

        Parameters
        ----------
        keep : array-like of int
        probabilities : array-like of shape (len(keep),)

        Returns
        -------
        ClassBoostedMixture
        """
        return ClassBoostedMixture(self.booster, self.prefix_lengths_[np.asarray(keep, dtype=np.int64)],
                                   probabilities, self.n_features_in_, classes=self.classes_,
                                   feature_names=self.feature_names_in_)

    def save_as(self, path, kind, arrays=None, meta=None):
        """As ``BoostedMixture.save_as``, with the class labels (``metadata.classes``).

        Parameters
        ----------
        path : str or os.PathLike
        kind : str
        arrays : dict of str to ndarray, default=None
        meta : dict, default=None
        """
        super().save_as(path, kind, arrays, {"classes": class_labels_meta(self.classes_), **(meta or {})})

    def __repr__(self):
        return (f"ClassBoostedMixture(backend={self.backend!r}, n_models={self.n_models}, "
                f"n_classes={self.n_classes}, prefix_lengths={self.prefix_lengths_.tolist()})")


class KeptBins:
    """A boosted mixture's prefixes' training scores as the run kept them: quantile bins, and some exact scores.

    What a thresholded solution's first LP over every candidate reads
    (:data:`~rateopt._predictors._boosting.KEPT_BINS` quantile bins a prefix,
    as ``bin_chains`` cuts them) without scoring a row; the exact re-fit of
    the prefixes it keeps reads their exact scores, kept for the last prefix
    and the constant rules (``exact``) and scored again for the others.

    Parameters
    ----------
    prefixes : list of KeptPrefix
        One per model of the mixture, in its order.
    trims_heap : bool, default=False
        Whether the solution hands the heap's free pages back after its first LP (the booster's
        ``trims_heap``: :func:`rateopt._predictors._boosting.return_free_memory`).
    """

    n_bins = KEPT_BINS

    def __init__(self, prefixes, trims_heap=False):
        self.prefixes = list(prefixes)
        self.trims_heap = bool(trims_heap)

    def binned_scores(self):
        """Every model's bin of every row (as float64, shape (n_models, n_rows)), each model's rows by bin
        (stable: rows of one bin in row order), and each model's ``(lows, below)`` bin bounds."""
        codes = np.stack([p.codes for p in self.prefixes])
        order = np.argsort(codes, axis=1, kind="stable")  # a radix sort of the one-byte codes
        return codes.astype(np.float64), order, [(p.lows, p.below) for p in self.prefixes]

    def codes(self):
        """Every model's bin of every row (its one-byte codes, as kept) and each model's ``(lows, below)`` bin
        bounds; model ``j`` has ``len(lows)`` bins, each holding a row."""
        return [p.codes for p in self.prefixes], [(p.lows, p.below) for p in self.prefixes]

    def exact(self, keep):
        """The exact training scores (float64) of the models ``keep``, None for those not kept."""
        return [None if self.prefixes[j].exact is None else np.asarray(self.prefixes[j].exact, dtype=np.float64)
                for j in np.asarray(keep).tolist()]


def booster_payload(booster, n_trees, n_features):
    """The metadata and arrays that store a booster's first ``n_trees`` trees (read by :func:`booster_from_file`)."""
    trees = booster.to_bytes(n_trees)
    meta = {"backend": booster.backend, "n_features": int(n_features),
            "booster_sha256": hashlib.sha256(trees).hexdigest()}
    return meta, {"booster": np.frombuffer(trees, dtype=np.uint8)}


def booster_from_file(meta, arrays, path, where="metadata."):
    """``(booster, n_features)`` of :func:`booster_payload`'s fields, every one validated before the backend
    parses the trees."""
    backend = meta.get("backend")
    if backend not in BACKENDS:
        raise damaged(path, where + "backend", f"is {backend!r}, expected one of {sorted(BACKENDS)}")
    n_features = meta.get("n_features")
    if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
        raise damaged(path, where + "n_features", f"is {n_features!r}, expected an integer >= 1")
    if "booster" not in arrays:
        raise damaged(path, "booster", "is missing")
    raw = arrays["booster"]
    if raw.dtype != np.uint8 or raw.ndim != 1 or raw.shape[0] == 0:
        raise damaged(path, "booster", "must be a non-empty 1-D array of bytes")
    trees = raw.tobytes()
    if hashlib.sha256(trees).hexdigest() != meta.get("booster_sha256"):
        raise damaged(path, "booster", f"does not match {where}booster_sha256 (the trees were changed or cut)")
    try:
        booster = BOOSTERS[backend].from_bytes(trees)
    except RateoptError:
        raise
    except Exception as exc:  # the backend's own parse error, whatever its type
        raise damaged(path, "booster", f"is not a {backend} model ({type(exc).__name__})") from None
    return booster, n_features


def prefix_lengths_from_file(arrays, path, booster, n=None):
    """Validated prefix lengths: integers in [-1, the booster's trees] (-1: always negative), ``n`` of them when
    given."""
    if "prefix_lengths" not in arrays:
        raise damaged(path, "prefix_lengths", "is missing")
    lengths = arrays["prefix_lengths"]
    if lengths.dtype.kind not in "iu" or lengths.ndim != 1 or lengths.shape[0] < 1 \
            or (n is not None and lengths.shape[0] != n):
        raise damaged(path, "prefix_lengths", "must be a 1-D array of integers, one per model"
                      + ("" if n is None else f" ({n})"))
    if np.any(lengths < NEGATIVE_PREFIX) or np.any(lengths > booster.n_trees):
        raise damaged(path, "prefix_lengths", f"must be in [-1, {booster.n_trees}] (the trees in the file; -1: "
                      "the constant negative classifier)")
    return lengths.astype(np.int64)


def boosted_mixture_from_file(meta, arrays, path, kind=BoostedMixture.kind):
    """Rebuild a :class:`BoostedMixture` saved under :data:`BOOSTED_FORMAT` (every field validated) with the
    file kind ``kind``."""
    if meta.get("kind") != kind:
        raise RateoptError(f"{path!r} holds an unknown boosted model kind {meta.get('kind')!r}")
    booster, n_features = booster_from_file(meta, arrays, path)
    lengths = prefix_lengths_from_file(arrays, path, booster)
    p = arrays.get("probabilities")
    if p is None:
        raise damaged(path, "probabilities", "is missing")
    if p.dtype.kind != "f" or p.shape != lengths.shape or not is_distribution(p):
        raise damaged(path, "probabilities", "must be finite, non-negative, sum to 1 and have one entry per prefix")
    names = feature_names_from_meta(meta, n_features, path)
    if "classes" in meta or getattr(booster, "n_classes", 1) > 1:  # a K-class mixture: its labels, one per score
        classes = class_labels_from_meta(meta.get("classes"), path)
        if len(classes) != getattr(booster, "n_classes", 1) or np.any(lengths < 0):
            raise damaged(path, "metadata.classes", f"holds {len(classes)} labels for a booster of "
                          f"{getattr(booster, 'n_classes', 1)} score columns (or a prefix length is negative)")
        return ClassBoostedMixture(booster, lengths, p, n_features, classes=classes, feature_names=names)
    return BoostedMixture(booster, lengths, p, n_features, feature_names=names)


def models_mixture(models, probabilities, feature_names=None, classes=None):
    """The mixture of classifier iterates: a :class:`BoostedMixture` of prefixes of one booster (a
    :class:`ClassBoostedMixture` with the labels ``classes`` for a multiclass booster), or else an
    :class:`~rateopt._predictors._ensembles.EstimatorMixture` of fitted estimators."""
    if booster_of(models) is not None:
        if models[0].n_classes > 1:
            return ClassBoostedMixture(models[0].booster, [m.n_trees for m in models], probabilities,
                                       models[0].n_features_in_, classes=classes, feature_names=feature_names)
        return BoostedMixture(models[0].booster, [m.n_trees for m in models], probabilities,
                              models[0].n_features_in_, feature_names=feature_names)
    return EstimatorMixture(models, probabilities, models[0].n_features_in_)


def prefixes_scorer(models, feature_names=None):
    """Every model of ``models`` as one :class:`BoostedMixture` scorer (uniform probabilities) when they are all
    prefixes of one booster, else None: ``scores(X)`` is (n_samples, len(models))."""
    if booster_of(models) is None:
        return None
    return models_mixture(models, np.full(len(models), 1.0 / len(models)), feature_names)


def booster_of(models):
    """The one booster whose prefixes ``models`` all are, or None (fitted estimators, or several boosters)."""
    if models and all(isinstance(m, BoosterPrefix) for m in models) and len({id(m.booster) for m in models}) == 1:
        return models[0].booster
    return None
