"""Boosted trees as a model kind: :class:`BoostingModel`, its backends, and the prefixes it records.

The rate-constrained game runs *inside* boosting (FairGBM's setting, Cruz et al.,
ICLR 2023, on the proxy-Lagrangian game of Cotter et al., JMLR 2019): each
iteration of :func:`rateopt.train` grows one tree on the per-row gradient and
Hessian of the proxy Lagrangian, through the backend's custom-objective entry
point (LightGBM's ``Booster.update(fobj=...)``, XGBoost's ``Booster.boost``).
The iterates are the booster's prefixes: iterate ``t`` is the ensemble of its
first ``t`` trees, which either backend predicts without copying the model
(``num_iteration=t``, ``iteration_range=(0, t)``). A solution mixes at most
m+1 prefixes of one booster.

The backends are optional (``pip install "rateopt[boosting]"``) and imported
only when a :class:`BoostingModel` starts training.
"""

from __future__ import annotations

import ctypes
import json
import weakref
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._utils._quantiles import quantile_positions
from ..core._boosting import kept_bin_codes
from ..exceptions import RateoptError

__all__ = ["BoostingModel", "BoosterPrefix", "BACKENDS", "BOOSTERS", "KEPT_BINS", "KeptPrefix",
           "return_free_memory"]

#: The supported backends and the package each needs.
BACKENDS = {"lightgbm": "lightgbm", "xgboost": "xgboost"}


def _import_backend(backend):
    try:
        return __import__(BACKENDS[backend])
    except ImportError:
        raise RateoptError(f"BoostingModel(backend={backend!r}) needs the {BACKENDS[backend]} package: "
                           'python -m pip install "rateopt[boosting]"') from None


def _seed(random_state):
    """The backend's 31-bit seed of a run's ``random_state`` (None: 0, the backends' own default)."""
    return 0 if random_state is None else int(random_state) % (2**31)


class BoostingModel:
    """Gradient-boosted trees trained by the rate-constrained game, one tree per iteration.

    Pass it as ``rateopt.train(problem, BoostingModel(...))``. Each training
    iteration grows one tree on the gradient and Hessian of the proxy
    Lagrangian (the objective and the multiplier-weighted constraints, each
    rate's indicator replaced by the logistic upper bound, so that the
    Hessian exists), while the multipliers see the true 0-1 rates of the
    current ensemble. This differs from ``oracle=EstimatorOracle(LGBMClassifier())``,
    which retrains a whole model at every step: here the game costs one
    boosting run.

    Parameters
    ----------
    backend : {"lightgbm", "xgboost"}, default="lightgbm"
        The boosting library.
    n_rounds : int or None, default=None
        Number of trees, one per iteration: sets ``n_iter`` of
        :func:`rateopt.train` (giving both with different values is refused).
        None: the training method's ``n_iter``. The run records ``n_rounds + 1``
        iterates: iterate ``t`` is the ensemble of the first ``t`` trees (the
        first is the empty ensemble, every score 0).
    learning_rate : float, default=0.1
        The shrinkage of each tree (the backend's ``learning_rate``/``eta``).
    max_depth : int, default=6
        Largest tree depth (``-1``: no limit, LightGBM only).
    num_leaves : int, default=31
        Largest number of leaves per tree (LightGBM's ``num_leaves``; XGBoost's
        ``max_leaves``).
    min_child_weight : float, default=1e-3
        Smallest Hessian sum in a leaf.
    params : dict or None, default=None
        Further backend parameters, passed through unchanged (e.g.
        ``{"feature_fraction": 0.8}``); they may not set the objective.

    Notes
    -----
    The model has no L2 penalty on a weight vector (``l2 = 0``); regularize
    with the backend's own parameters (``lambda_l2``/``lambda``). Training
    needs the groups only on the training data: prediction is group-blind
    unless the groups are features.
    """

    #: A boosted model has no weight vector to penalize or project (the driver's model fields).
    l2 = 0.0
    radius = None
    fit_intercept = True

    def __init__(self, backend="lightgbm", n_rounds=None, *, learning_rate=0.1, max_depth=6, num_leaves=31,
                 min_child_weight=1e-3, params=None):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {sorted(BACKENDS)}, got {backend!r}")
        if n_rounds is not None and (isinstance(n_rounds, bool) or not isinstance(n_rounds, (int, np.integer))
                                     or n_rounds < 1):
            raise ValueError(f"n_rounds must be a positive integer or None, got {n_rounds!r}")
        if not (isinstance(learning_rate, (int, float, np.floating)) and not isinstance(learning_rate, bool)
                and 0 < float(learning_rate) <= 1):
            raise ValueError(f"learning_rate must be in (0, 1], got {learning_rate!r}")
        if isinstance(max_depth, bool) or not isinstance(max_depth, (int, np.integer)) or not (
                max_depth >= 1 or (max_depth == -1 and backend == "lightgbm")):
            raise ValueError(f"max_depth must be a positive integer (or -1 with lightgbm), got {max_depth!r}")
        if isinstance(num_leaves, bool) or not isinstance(num_leaves, (int, np.integer)) or num_leaves < 2:
            raise ValueError(f"num_leaves must be an integer >= 2, got {num_leaves!r}")
        if not (isinstance(min_child_weight, (int, float, np.floating)) and not isinstance(min_child_weight, bool)
                and np.isfinite(min_child_weight) and min_child_weight >= 0):
            raise ValueError(f"min_child_weight must be a finite number >= 0, got {min_child_weight!r}")
        params = {} if params is None else dict(params)
        taken = {"objective", "obj", "objective_type", "application", "app", "loss", "fobj"} & set(params)
        if taken:
            raise ValueError(f"params may not set {sorted(taken)}: the objective is the game's proxy Lagrangian")
        self.backend = backend
        self.n_rounds = None if n_rounds is None else int(n_rounds)
        self.learning_rate = float(learning_rate)
        self.max_depth = int(max_depth)
        self.num_leaves = int(num_leaves)
        self.min_child_weight = float(min_child_weight)
        self.params = params

    def __repr__(self):
        return (f"BoostingModel(backend={self.backend!r}, n_rounds={self.n_rounds}, learning_rate="
                f"{self.learning_rate}, max_depth={self.max_depth}, num_leaves={self.num_leaves}, "
                f"min_child_weight={self.min_child_weight}, params={self.params})")

    def start(self, X, *, n_threads, random_state, inert=None, n_classes=1):
        """A booster with no tree on the training rows ``X`` (the backend's adapter in ``BOOSTERS``).

        ``inert``: None, or a boolean per row, True where the row weighs nothing in every rate (zero
        weight): such rows get zero derivatives, and XGBoost also leaves them out of its histogram cuts.
        ``n_classes``: 1 (one score per row, two classes), or K > 2 (K scores per row: the backend's
        multiclass booster, K trees a round).
        """
        if n_classes == 1:
            return BOOSTERS[self.backend].start(self, X, n_threads=n_threads, random_state=random_state,
                                                inert=inert)
        return BOOSTERS[self.backend].start(self, X, n_threads=n_threads, random_state=random_state,
                                            inert=inert, n_classes=n_classes)


#: Quantile bins per kept prefix: those of a thresholded solution's first LP (``_postprocess._mixture.AUTO_BINS``).
KEPT_BINS = 256


def _bin_codes(scores, lows):
    """Each score's bin: the last ``b`` with ``lows[b] <= score`` (``np.searchsorted(lows, scores,
    side="right") - 1``), as uint8.

    ``lows``: 1 to 256 strictly ascending bin bounds, the first at most every score, in the scores' dtype
    (the scores are finite). The core's branch-free binary search (:func:`rateopt.core._boosting.kept_bin_codes`).
    """
    return kept_bin_codes(np.ascontiguousarray(scores), np.ascontiguousarray(lows, dtype=scores.dtype))


class KeptPrefix(NamedTuple):
    """A kept prefix's training scores: a quantile bin per row, each bin's bounds, the exact scores if kept.

    ``codes[i]`` is row ``i``'s bin (bins ascending by score; a bin holds the
    rows whose scores lie in ``[lows[b], lows[b + 1])``); ``below[b]`` is the
    largest score under ``lows[b]`` (NaN for the first bin), so the bins are
    those :func:`rateopt._postprocess._bins.bin_chains` cuts at
    :data:`KEPT_BINS` quantiles (every distinct score while there are at most
    that many), with the edges it gives them. ``exact``: the scores
    themselves (the backend's dtype), or None.
    """

    codes: np.ndarray
    lows: np.ndarray
    below: np.ndarray
    exact: object


class _KeptScores:
    """The training rows' scores of chosen prefixes, kept while the trees are grown (a booster adapter's part).

    A boosted run's thresholded solution re-fits the threshold rules of a few
    prefixes on the training rows (:func:`rateopt._predictors._boosted_mixture.candidate_rounds`):
    a first LP over :data:`KEPT_BINS` quantile bins of every candidate, then
    an exact re-fit of the few it keeps. The training loop already holds every
    prefix's training scores (the backend's running sums, bit for bit a fresh
    prediction's), so it keeps each candidate's quantile bins as it passes:
    one byte per row and the bins' bounds, which is all the first LP reads.
    The last prefix's exact scores are kept too (the support of most
    solutions); the exact re-fit scores any other support prefix again, on
    the problem's features. Once the result is asked for a classifier it calls
    :meth:`release_training`: the adapter then holds the trees and these kept
    scores, no training data.
    """

    #: Whether the run hands the heap's free pages back between its phases (:func:`return_free_memory`):
    #: LightGBM's on Adult peaked 1 to 2 MiB higher without; XGBoost's did not (its cells are within the
    #: memory budget), and its next tree re-faults the pages handed back (Adult, demographic parity: 0.05 to
    #: 0.14 CPU s more a fit), so it does not.
    trims_heap = False

    def keep_training_scores(self, scores, exact=False):
        """Keep the quantile bins of ``scores`` (the training rows' scores of the current ensemble) as those of
        its prefix, and the scores themselves when ``exact``."""
        scores = np.asarray(scores)
        n = scores.shape[0]
        s = self._sorted_training_scores(scores)
        first = np.empty(n, dtype=bool)  # the first of its score in sorted order (one byte a row, no index)
        first[:1] = True
        np.not_equal(s[1:], s[:-1], out=first[1:])
        if np.count_nonzero(first) > KEPT_BINS:  # the first row of each quantile's score (as bin_chains cuts)
            pos = quantile_positions(np.array([n], dtype=np.int64), KEPT_BINS)[0]
            starts = np.unique(np.concatenate(([0], np.searchsorted(s, s[pos], side="left"))))
        else:
            starts = np.flatnonzero(first)
        del first
        lows = s[starts].astype(np.float64)
        below = np.full(lows.shape[0], np.nan)
        below[1:] = s[starts[1:] - 1]
        bounds = s[starts]
        del s
        scores = self._training_scores_in_row_order(scores)
        codes = _bin_codes(scores, bounds)
        self.kept[self.n_trees] = KeptPrefix(codes, lows, below, self._exact_scores(scores) if exact else None)
        if self.trims_heap:
            return_free_memory()  # the sort's and the bins' temporaries, so that the heap does not creep up

    def _sorted_training_scores(self, scores):
        """The training scores ``scores`` sorted, in the backend's precision: a sorted copy (an adapter that
        can read its scores again may sort its own buffer in place instead: see
        :meth:`_training_scores_in_row_order`)."""
        s = np.array(scores, dtype=self.score_dtype)
        s.sort()
        return s

    def _training_scores_in_row_order(self, scores):
        """``scores`` in row order after :meth:`_sorted_training_scores` (unchanged: it sorted a copy)."""
        return scores

    def _exact_scores(self, scores):
        """The exact scores to keep: a copy in the backend's dtype (an adapter that owns the buffer may hand it
        over instead)."""
        return np.array(scores, dtype=self.score_dtype)

    def release_training(self):
        """Drop the backend's training state (called once the trees are grown), so that the result and its
        solutions hold the trees and the kept scores, not the training data. The trees, hence every
        prediction, are unchanged; no tree may be grown after it."""

    def kept_prefix(self, n_trees):
        """The :class:`KeptPrefix` of the prefix of ``n_trees`` trees, or None if it was not kept."""
        return self.kept.get(int(n_trees)) if n_trees > 0 else None


class _LightGBMBooster(_KeptScores):
    """A LightGBM booster: grown a tree at a time from given gradients and Hessians, or loaded."""

    backend = "lightgbm"
    score_dtype = np.float64  # LightGBM sums its trees in float64
    trims_heap = True

    def __init__(self, booster):
        self.booster = booster
        self.n_trees = booster.current_iteration()
        #: Scores per row: 1, or K for a multiclass booster (K trees a round; its scores are (n, K)).
        self.n_classes = int(booster.num_model_per_iteration())
        #: The layout of a multiclass booster's training scores and custom gradients: (K, n).
        self.class_major = True
        self._train_scores = None  # the training rows' scores, written by LightGBM (direct calls only)
        self.kept = {}  # prefix length -> its training scores (_KeptScores)

    def __getstate__(self):
        """Pickled without the training-score buffer (of the training run)."""
        return {**self.__dict__, "_train_scores": None}

    @classmethod
    def start(cls, model, X, *, n_threads, random_state, inert=None, n_classes=1):
        """A booster with no tree on the training rows ``X`` (``inert`` rows need nothing: their derivatives
        are 0, and LightGBM's bins of a zero-weight row's values change no tree's training decisions).
        ``n_classes`` > 1: a multiclass booster (``num_class``), K trees a round on (K, n) derivatives."""
        lgb = _import_backend("lightgbm")
        params = {"objective": "none", "learning_rate": model.learning_rate, "max_depth": model.max_depth,
                  "num_leaves": model.num_leaves, "min_sum_hessian_in_leaf": model.min_child_weight,
                  "num_threads": int(n_threads), "seed": _seed(random_state), "deterministic": True,
                  "verbosity": -1, "boost_from_average": False, **model.params}
        if n_classes > 1:
            params["num_class"] = int(n_classes)
        # feature_pre_filter=False keeps the features min_data_in_leaf makes unsplittable (the trees are the
        # same): with none left, LightGBM refuses to grow a tree on few rows, where it should grow one leaf
        # no label: the custom objective's derivatives are the game's, so a label would be n float32 held twice
        # (LightGBM's copy and ours) for nothing; the bins, hence the trees, do not depend on it
        train_set = lgb.Dataset(X, params={"verbosity": -1, "feature_pre_filter": False}, free_raw_data=False)
        return cls(lgb.Booster(params=params, train_set=train_set))

    @classmethod
    def from_bytes(cls, data):
        """A booster from :meth:`to_bytes`'s output (LightGBM's text model format)."""
        lgb = _import_backend("lightgbm")
        return cls(lgb.Booster(model_str=bytes(data).decode("utf-8")))

    def to_bytes(self, n_trees):
        """The first ``n_trees`` trees in LightGBM's text model format."""
        return self.booster.model_to_string(num_iteration=max(int(n_trees), 1)).encode("utf-8")

    def add_tree(self, grad, hess):
        """Grow one tree; return the ensemble's scores on every training row.

        The scores are LightGBM's own running sums on the training rows
        (:meth:`scores`): no re-scoring of the rows, and the sums a fresh
        prediction forms. The array is a buffer LightGBM overwrites with the
        next tree's scores: read it before the next ``add_tree``. The tree is
        grown by LightGBM's ``LGBM_BoosterUpdateOneIterCustom`` on the float32
        arrays as given (what ``Booster.update(fobj=...)`` calls, without its
        copy of the scores for an objective that does not read them), or by
        ``update`` itself where that call is not available.
        """
        lib = _lightgbm_lib(self.booster)
        shape = self._score_shape()
        if lib is None or not (_is_f32(grad, shape) and _is_f32(hess, shape)):
            # update() ravels a multiclass fobj's (n, K) arrays class-major: the transposes of ours (K, n)
            self.booster.update(fobj=lambda preds, data: (grad.T, hess.T) if self.n_classes > 1 else (grad, hess))
        else:  # LightGBM's own call, without update()'s copy of the scores for an fobj that does not read them
            lib, safe_call = lib
            finished = ctypes.c_int(0)
            safe_call(lib.LGBM_BoosterUpdateOneIterCustom(self.booster._handle, _float_ptr(grad), _float_ptr(hess),
                                                          ctypes.byref(finished)))
        self.n_trees += 1
        return self.scores()

    def _n_train(self):
        return self.booster.train_set.num_data()

    def release_training(self):
        """As ``_KeptScores.release_training``: the booster is rebuilt from its own model string (what
        ``lightgbm.train`` returns by default), which frees LightGBM's copy of the binned training rows, its
        training scores and gradient buffers; the training ``Dataset`` is dropped."""
        self._train_scores = None
        if getattr(self.booster, "train_set", None) is None:  # loaded, or released already
            return
        lib = _lightgbm_lib(self.booster)
        if lib is None or not hasattr(lib[0], "LGBM_BoosterLoadModelFromString") \
                or not hasattr(self.booster, "_free_buffer"):
            model = self.booster.model_to_string(num_iteration=-1)
            self.booster.model_from_string(model)  # frees the training booster's handle first
            self.booster.free_dataset()  # then the training Dataset it pointed to (as lightgbm.train's order)
            return
        # LightGBM's own calls, with one copy of the model text alive at a time (model_to_string holds a
        # zeroed 1 MiB buffer, LightGBM's string, a bytes and a str copy, model_from_string one more): the
        # training Dataset is freed, the text is written into one buffer, the training booster is freed,
        # then the booster is loaded from that buffer. The Dataset goes first: LightGBM builds the text from
        # the trees alone (every tree's string, its stream and a copy: some 3x the text), and that transient
        # reuses the binned rows' memory instead of adding to the run's peak (Adult: 0.9-1.6 MiB, issue 33).
        # Nothing reads the Dataset once the trees are grown: LightGBM writes the text from the trees and the
        # booster's own fields, and the booster's destructor frees only its own buffers.
        lib, safe_call = lib
        booster = self.booster
        booster.free_dataset()
        return_free_memory()  # the binned rows' pages, before the text's transient
        model = _lightgbm_model_text(booster, lib, safe_call)
        safe_call(lib.LGBM_BoosterFree(booster._handle))
        booster._handle = ctypes.c_void_p()
        booster._free_buffer()
        handle, n_iterations = ctypes.c_void_p(), ctypes.c_int(0)
        text = model.ctypes.data_as(ctypes.c_char_p)
        safe_call(lib.LGBM_BoosterLoadModelFromString(text, ctypes.byref(n_iterations), ctypes.byref(handle)))
        booster._handle = handle  # the same trees: its classes, iterations and pandas categories are unchanged
        del model, text
        return_free_memory()  # the training booster's buffers and the text

    def _score_shape(self):
        """The training scores' shape: (n,), or (K, n) for a multiclass booster (LightGBM's class-major
        layout, which its custom gradients also take)."""
        n = self._n_train()
        return (n,) if self.n_classes == 1 else (self.n_classes, n)

    def _sorted_training_scores(self, scores):
        """``scores`` sorted: this adapter's own score buffer (LightGBM's running sums, read by the direct call)
        sorted in place, no copy (8 bytes a row less at each kept prefix); else a copy."""
        if scores is self._train_scores and scores.dtype == self.score_dtype and scores.ndim == 1:
            scores.sort()  # the sort of a copy: the same sorted values
            return scores
        return super()._sorted_training_scores(scores)

    def _training_scores_in_row_order(self, scores):
        """``scores`` in row order again: the buffer sorted in place is read again from LightGBM (its running
        sums, unchanged: the same values bit for bit)."""
        if scores is self._train_scores:
            return self.scores()
        return scores

    def _exact_scores(self, scores):
        """The last prefix's exact scores: this adapter's own score buffer, handed over rather than copied (a
        later :meth:`scores` allocates a new one)."""
        if scores is self._train_scores:
            self._train_scores = None
            return scores
        return super()._exact_scores(scores)

    def scores(self):
        """The ensemble's scores on every training row, a float64 buffer LightGBM overwrites after each tree.

        Read through LightGBM's ``LGBM_BoosterGetPredict`` (its running sums on the training rows, no
        re-scoring) into one buffer of this booster's, or through ``eval_train`` (which hands LightGBM's own
        buffer to an evaluation function) where the direct call is not available.
        """
        lib = _lightgbm_lib(self.booster)
        if lib is not None:
            lib, safe_call = lib
            shape = self._score_shape()
            n = int(np.prod(shape))
            if self._train_scores is None:
                self._train_scores = np.empty(shape)
            length = ctypes.c_int64(0)
            safe_call(lib.LGBM_BoosterGetPredict(self.booster._handle, ctypes.c_int(0), ctypes.byref(length),
                                                 self._train_scores.ctypes.data_as(ctypes.POINTER(ctypes.c_double))))
            if length.value != n:
                raise RateoptError(f"LightGBM returned {length.value} training scores for {n} rows")
            return self._train_scores
        box = []

        def capture(preds, data):
            box.append(preds)  # refreshed in place after each tree
            return "scores", 0.0, False

        self.booster.eval_train(feval=capture)
        if self.n_classes > 1:  # (n, K) here: as the direct call's (K, n)
            return np.ascontiguousarray(np.reshape(box[0], (self._n_train(), self.n_classes)).T)
        return box[0]

    def raw_scores(self, X, n_trees):
        """The raw scores of the first ``n_trees`` trees on ``X`` (:data:`NEGATIVE_PREFIX`: -1 on every row)."""
        if n_trees <= 0:
            shape = X.shape[0] if self.n_classes == 1 else (X.shape[0], self.n_classes)
            return np.full(shape, -1.0 if n_trees == NEGATIVE_PREFIX else 0.0)
        return self.booster.predict(X, num_iteration=n_trees, raw_score=True)

    def prefix_scores(self, X, lengths):
        """The raw scores of the prefixes of each length in ``lengths`` on ``X``, shape (n_samples, len(lengths)).

        One pass over the trees: every row's leaf in each of the first ``max(lengths)`` trees, and the running
        sum of the leaves' outputs in tree order, which is the sum LightGBM's own prediction forms (so the
        columns equal :meth:`raw_scores` bit for bit; linear trees, whose leaves are not constants, and a
        single prefix, which LightGBM's own prediction scores faster, are scored prefix by prefix).
        """
        lengths = np.asarray(lengths, dtype=np.int64)
        top = int(lengths.max(initial=0))
        if np.count_nonzero(lengths > 0) <= 1 or str(self.booster.params.get("linear_tree", "")).lower() in (
                "true", "1"):  # one prefix (a thresholded solution's re-fit): LightGBM's own sums are faster
            return np.column_stack([self.raw_scores(X, int(t)) for t in lengths])
        leaves = self.booster.predict(X, num_iteration=top, pred_leaf=True).reshape(X.shape[0], top)
        sums = np.zeros(X.shape[0])
        out = np.empty((X.shape[0], lengths.shape[0]))
        for j in np.flatnonzero(lengths <= 0):
            out[:, j] = -1.0 if lengths[j] == NEGATIVE_PREFIX else 0.0
        for t in range(top):
            values = np.array([self.booster.get_leaf_output(t, leaf) for leaf in range(int(leaves[:, t].max()) + 1)])
            sums += values[leaves[:, t]]
            for j in np.flatnonzero(lengths == t + 1):
                out[:, j] = sums
        return out


class _XGBoostBooster(_KeptScores):
    """An XGBoost booster: grown a tree at a time from given gradients and Hessians, or loaded."""

    backend = "xgboost"
    score_dtype = np.float32  # XGBoost sums its trees in float32

    def __init__(self, booster, dtrain=None):
        self.booster = booster
        self.dtrain = dtrain
        self.kept = {}  # prefix length -> its training scores (_KeptScores)
        self.n_trees = booster.num_boosted_rounds()
        #: Scores per row: 1, or K for a multiclass booster (K trees a round; its scores are (n, K)).
        self.n_classes = max(1, int(json.loads(booster.save_config())["learner"]["learner_model_param"]
                                    .get("num_class", "0")))
        #: The layout of a multiclass booster's training scores and custom gradients: (n, K).
        self.class_major = False
        self._calls = None  # the direct calls' reusable arguments (_XGBoostCalls), made at the first tree

    def __getstate__(self):
        """Pickled without the training DMatrix and the direct calls' arguments (XGBoost's handles and
        ctypes objects, needed only while trees are grown)."""
        return {**self.__dict__, "dtrain": None, "_calls": None}

    @classmethod
    def start(cls, model, X, *, n_threads, random_state, inert=None, n_classes=1):
        """A booster with no tree on the training rows ``X`` (``n_classes`` > 1: a multiclass booster,
        ``num_class``, K trees a round on (n, K) derivatives, through ``Booster.boost``).

        XGBoost's histogram cuts come from the rows of its DMatrix: a row of weight 0 (``inert``) would add
        its feature values as cut candidates and move the split thresholds, so that a weight of 0 and a
        removed row would give different trees. Such rows get DMatrix weight 0, the others 1 (the game's
        derivatives carry the real weights); without any, the DMatrix has no weights.
        """
        xgb = _import_backend("xgboost")
        params = {"eta": model.learning_rate, "max_depth": model.max_depth, "max_leaves": model.num_leaves,
                  "min_child_weight": model.min_child_weight, "nthread": int(n_threads),
                  "seed": _seed(random_state), "base_score": 0.0, "tree_method": "hist",
                  "verbosity": 0, **model.params}
        if model.max_depth == -1:
            params["max_depth"] = 0
        if n_classes > 1:  # the objective only names the margins' shape: the gradients are the game's
            params.update(num_class=int(n_classes), objective="multi:softprob")
        dtrain = xgb.DMatrix(X) if inert is None or not inert.any() else xgb.DMatrix(
            X, weight=np.logical_not(inert).astype(np.float32))
        booster = cls(xgb.Booster(params, [dtrain]), dtrain)
        return booster

    @classmethod
    def from_bytes(cls, data):
        """A booster from :meth:`to_bytes`'s output (XGBoost's JSON model format)."""
        xgb = _import_backend("xgboost")
        booster = xgb.Booster()
        booster.load_model(bytearray(data))
        return cls(booster)

    def to_bytes(self, n_trees):
        """The first ``n_trees`` trees in XGBoost's JSON model format."""
        booster = self.booster[0:int(n_trees)] if 0 < n_trees < self.n_trees else self.booster
        return bytes(booster.save_raw("json"))

    def add_tree(self, grad, hess):
        """Grow one tree; return the ensemble's scores on every training row.

        XGBoost sums its trees in float32: the scores come from its prediction
        cache of the training rows (one pass, no re-scoring of the earlier
        trees), whose sums are the ones a fresh prediction forms. The tree is
        grown by XGBoost's ``XGBoosterTrainOneIter`` on the float32 arrays as
        given (what ``Booster.boost`` calls, without its per-call checks), or
        by ``boost`` itself where that call is not available.
        """
        calls = self._direct_calls()
        if calls is None or not calls.train_one_iter(self.n_trees, grad, hess):
            self.booster.boost(self.dtrain, self.n_trees, grad=grad, hess=hess)
        self.n_trees += 1
        return self.scores()

    def scores(self):
        """The ensemble's scores on every training row (float32, as the core's pass reads them).

        XGBoost's prediction cache of the training rows, read by its own ``XGBoosterPredictFromDMatrix``
        (the call ``predict(dtrain, output_margin=True)`` makes, without its per-call Python checks and
        copy): the array is XGBoost's own buffer, valid until the booster's next prediction (read it
        before the next :meth:`add_tree`).
        """
        calls = self._direct_calls()
        preds = None if calls is None else calls.margins()
        return self.booster.predict(self.dtrain, output_margin=True) if preds is None else preds

    def release_training(self):
        """As ``_KeptScores.release_training``: the training DMatrix and the direct calls on it are dropped
        (XGBoost frees the DMatrix, its histogram index and its prediction cache with them; the booster is
        not rebuilt, which would free nothing more: 0.46 MB of trees on Adult)."""
        self.dtrain = self._calls = None

    def _direct_calls(self):
        """The direct calls on this booster and its training DMatrix (None where XGBoost does not expose
        them: then the public API is used)."""
        if self._calls is None:
            lib = _xgboost_lib()
            if lib is None:
                return None
            self._calls = _XGBoostCalls(*lib, self.booster, self.dtrain)
        return self._calls

    def raw_scores(self, X, n_trees):
        """The raw scores of the first ``n_trees`` trees on ``X`` (:data:`NEGATIVE_PREFIX`: -1 on every row)."""
        if n_trees <= 0:
            shape = X.shape[0] if self.n_classes == 1 else (X.shape[0], self.n_classes)
            return np.full(shape, -1.0 if n_trees == NEGATIVE_PREFIX else 0.0)
        return self.booster.predict(self._dmatrix(X), iteration_range=(0, n_trees),
                                    output_margin=True).astype(np.float64)

    def _dmatrix(self, X):
        """``X`` as an XGBoost DMatrix (a new one, unless it is one)."""
        xgb = _import_backend("xgboost")  # not kept on the object, which pickles
        if isinstance(X, xgb.DMatrix):
            return X
        return xgb.DMatrix(X)

    def prefix_scores(self, X, lengths):
        """The raw scores of the prefixes of each length in ``lengths`` on ``X``, shape (n_samples, len(lengths)).

        One pass over the trees: every row's leaf in each of the first ``max(lengths)`` trees
        (``pred_leaf=True``), and the float32 running sum of the leaves' values in tree order, which is the sum
        XGBoost's own prediction forms (so the columns equal :meth:`raw_scores` bit for bit). A single prefix
        (XGBoost's own prediction is faster) and boosters that are not plain scalar-leaf tree ensembles with a
        zero base score are scored prefix by prefix.
        """
        lengths = np.asarray(lengths, dtype=np.int64)
        top = int(lengths.max(initial=0))
        # one prefix (a thresholded solution's re-fit): XGBoost's own prediction is faster than the leaf pass
        values = self._leaf_values(top) if np.count_nonzero(lengths > 0) > 1 else None
        if values is None:
            return np.column_stack([self.raw_scores(X, int(t)) for t in lengths])
        data = self._dmatrix(X)
        leaves = self.booster.predict(data, iteration_range=(0, top), pred_leaf=True)
        leaves = leaves.reshape(data.num_row(), top).astype(np.int64)
        sums = np.zeros(leaves.shape[0], dtype=np.float32)
        out = np.empty((leaves.shape[0], lengths.shape[0]))
        for j in np.flatnonzero(lengths <= 0):
            out[:, j] = -1.0 if lengths[j] == NEGATIVE_PREFIX else 0.0
        for t in range(top):
            sums += values[t][leaves[:, t]]
            for j in np.flatnonzero(lengths == t + 1):
                out[:, j] = sums
        return out

    def _leaf_values(self, n_trees):
        """Each of the first ``n_trees`` trees' node values (float32, indexed by node id; a leaf's is its
        output), or None where a prefix's margin is not the float32 sum of one leaf value per tree."""
        model = json.loads(bytes(self.to_bytes(n_trees)))
        learner = model["learner"]
        booster = learner["gradient_booster"]
        params = learner["learner_model_param"]
        if (booster.get("name") != "gbtree" or int(params.get("num_target", "1")) != 1
                or int(params.get("num_class", "0")) > 1
                or float(params["base_score"].strip("[]")) != 0.0):
            return None
        trees = booster["model"]["trees"]
        if len(trees) != n_trees or any(int(t["tree_param"].get("size_leaf_vector", "1")) > 1 for t in trees):
            return None
        return [np.asarray(t["split_conditions"], dtype=np.float32) for t in trees]


#: ``XGBoosterPredictFromDMatrix``'s configuration of ``predict(data, output_margin=True)`` (XGBoost 2 and 3).
_MARGIN_CONFIG = json.dumps({"type": 1, "training": False, "iteration_begin": 0, "iteration_end": 0,
                             "strict_shape": False}).encode("utf-8")


def _is_f32(a, n):
    """Whether ``a`` is a C-contiguous float32 array of ``n`` entries, or of the shape ``n`` (a tuple): what
    the backends' direct calls read."""
    shape = n if isinstance(n, tuple) else (n,)
    return isinstance(a, np.ndarray) and a.dtype == np.float32 and a.shape == shape and a.flags.c_contiguous


def _float_ptr(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def _array_interface(a):
    """The ``__array_interface__`` JSON of a 1-D float32 array, as XGBoost's C API reads gradients."""
    return json.dumps({"data": [int(a.ctypes.data), False], "strides": None, "descr": [["", "<f4"]],
                       "typestr": "<f4", "shape": [int(a.shape[0])], "version": 3}).encode("utf-8")


class _XGBoostCalls:
    """XGBoost's C calls that grow a tree and read the training margins, with their arguments made once.

    A boosted run hands XGBoost the same two gradient buffers every round and
    reads the same prediction buffer back. What would otherwise be built
    every round is built once: each gradient array's interface JSON (checked
    and built at its first use; while a weak reference to the array still
    gives that array, its identity stands for its address, length and dtype,
    all an interface names), the ctypes out-parameters, and the NumPy view of
    XGBoost's margins (made again only when XGBoost's buffer moves).
    """

    #: Gradient arrays whose interfaces are kept (a caller that hands new arrays every round: the oldest go).
    MAX_ARRAYS = 4

    def __init__(self, lib, check_call, booster, dtrain):
        self.lib, self.check_call = lib, check_call
        self.booster, self.dtrain = booster.handle, dtrain.handle
        self.n = dtrain.num_row()
        self._arrays = {}  # id(array) -> (weak ref to it, its interface JSON or None: the direct call cannot read it)
        self._shape = ctypes.POINTER(ctypes.c_uint64)()
        self._dims = ctypes.c_uint64()
        self._preds = ctypes.c_void_p()  # XGBoost writes the address of its float32 margins here
        self._out = (ctypes.byref(self._shape), ctypes.byref(self._dims), ctypes.byref(self._preds))
        self._view = (None, None)  # (address, the float32 view of XGBoost's buffer there)

    def _interface(self, a):
        """``a``'s interface JSON, or None unless it is a C-contiguous float32 array of the rows' length."""
        if not isinstance(a, np.ndarray):
            return None
        kept = self._arrays.get(id(a))
        if kept is None or kept[0]() is not a:
            if len(self._arrays) >= self.MAX_ARRAYS:
                self._arrays.pop(next(iter(self._arrays)))
            kept = self._arrays[id(a)] = (weakref.ref(a), _array_interface(a) if _is_f32(a, self.n) else None)
        return kept[1]

    def train_one_iter(self, iteration, grad, hess):
        """Grow one tree on ``grad`` and ``hess`` through ``XGBoosterTrainOneIter`` (what ``Booster.boost``
        calls, less its per-call checks); False, with nothing done, unless both are C-contiguous float32
        arrays of the training rows' length."""
        g, h = self._interface(grad), self._interface(hess)
        if g is None or h is None:
            return False
        self.check_call(self.lib.XGBoosterTrainOneIter(self.booster, self.dtrain, int(iteration), g, h))
        return True

    def margins(self):
        """The training rows' margins from XGBoost's prediction cache (``XGBoosterPredictFromDMatrix``):
        a float32 view of XGBoost's own buffer, or None if XGBoost gave another shape."""
        self.check_call(self.lib.XGBoosterPredictFromDMatrix(self.booster, self.dtrain, _MARGIN_CONFIG, *self._out))
        if self._dims.value != 1 or self._shape[0] != self.n:
            return None
        address = self._preds.value
        if self._view[0] != address:
            pointer = ctypes.cast(address, ctypes.POINTER(ctypes.c_float))
            self._view = (address, np.ctypeslib.as_array(pointer, shape=(self.n,)))
        return self._view[1]


def _malloc_trim():
    """glibc's ``malloc_trim`` (ctypes), or None where the C library has none (musl, macOS, Windows)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, TypeError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_MALLOC_TRIM = []  # [glibc's malloc_trim or None], looked up at the first call


def return_free_memory():
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim(0)``; nothing elsewhere).

    A boosted run and its default solution go through phases whose temporaries are freed (a kept prefix's
    bins, the backend's training state, the first LP): glibc keeps freed blocks in its heap, where a later
    phase's blocks of other sizes do not fit, so that the resident memory grows phase by phase above any
    phase's own peak (issue 33: Adult with LightGBM, +1 to +2 MiB). Called between those phases: the
    process's live memory is unchanged (only free pages go), at some 30 microseconds a call.
    """
    if not _MALLOC_TRIM:
        _MALLOC_TRIM.append(_malloc_trim())
    if _MALLOC_TRIM[0] is not None:
        _MALLOC_TRIM[0](0)


def _lightgbm_lib(booster):
    """``(LightGBM's C library, its error check)``, or None where this LightGBM does not expose them the
    way :meth:`_LightGBMBooster.add_tree` calls them (then the public API is used)."""
    basic = getattr(__import__("lightgbm"), "basic", None)
    lib, safe_call = getattr(basic, "_LIB", None), getattr(basic, "_safe_call", None)
    if lib is None or safe_call is None or not hasattr(booster, "_handle") \
            or getattr(booster, "train_set", None) is None or not hasattr(lib, "LGBM_BoosterUpdateOneIterCustom"):
        return None
    return lib, safe_call


def _lightgbm_model_text(booster, lib, safe_call):
    """The booster's every tree in LightGBM's text model format, one NUL-terminated uint8 buffer.

    One ``LGBM_BoosterSaveModelToString`` into an uninitialized buffer of
    ``_MODEL_TEXT_BYTES_PER_TREE`` a tree (at least 1 MiB; only the pages
    the text fills become resident), and a second into a buffer of the text's
    size where that was too short.
    """
    def save(buffer):
        length = ctypes.c_int64(0)
        safe_call(lib.LGBM_BoosterSaveModelToString(booster._handle, ctypes.c_int(0), ctypes.c_int(-1),
                                                    ctypes.c_int(0), ctypes.c_int64(buffer.shape[0]),
                                                    ctypes.byref(length), buffer.ctypes.data_as(ctypes.c_char_p)))
        return length.value  # with the terminating NUL

    n_trees = int(booster.current_iteration()) * int(booster.num_model_per_iteration())
    buffer = np.empty(max(_MODEL_TEXT_MIN_BYTES, _MODEL_TEXT_BYTES_PER_TREE * n_trees), dtype=np.uint8)
    size = save(buffer)
    if size > buffer.shape[0]:  # nothing was copied: once more into a buffer of the text's size
        buffer = np.empty(size, dtype=np.uint8)
        if save(buffer) != size:
            raise RateoptError("LightGBM's model text changed size between two calls")
    return buffer


#: Bytes a tree, and at least, to allocate for LightGBM's model text (a 31-leaf tree takes about 3,300).
_MODEL_TEXT_BYTES_PER_TREE = 8192
_MODEL_TEXT_MIN_BYTES = 1 << 20


def _xgboost_lib():
    """``(XGBoost's C library, its error check)``, or None where this XGBoost does not expose them (then
    the public API is used)."""
    core = getattr(__import__("xgboost"), "core", None)
    lib, check_call = getattr(core, "_LIB", None), getattr(core, "_check_call", None)
    if lib is None or check_call is None or not hasattr(lib, "XGBoosterTrainOneIter") \
            or not hasattr(lib, "XGBoosterPredictFromDMatrix"):
        return None
    return lib, check_call


#: The prefix "length" of the constant classifier that decides negative on every row (score -1): a trivial
#: candidate of every boosted run, beside the empty ensemble (length 0, score 0: positive on every row).
NEGATIVE_PREFIX = -1

#: The booster adapter of each backend.
BOOSTERS = {"lightgbm": _LightGBMBooster, "xgboost": _XGBoostBooster}


class BoosterPrefix:
    """Iterate ``t`` of a boosted run: the first ``n_trees`` trees of one booster (no copy of the trees).

    Parameters
    ----------
    booster : object
        The run's booster (it keeps growing; the prefix reads only its first
        ``n_trees`` trees).
    n_trees : int
        The prefix length (:data:`NEGATIVE_PREFIX`: the constant negative classifier).
    n_features : int
        Width of the inputs.
    """

    classes_ = np.array([0, 1])

    def __init__(self, booster, n_trees, n_features):
        self.booster = booster
        self.n_trees = int(n_trees)
        self.n_features_in_ = int(n_features)

    @property
    def n_classes(self):
        """Scores per row: 1 (two classes), or K for a prefix of a multiclass booster (``n_trees`` rounds)."""
        return getattr(self.booster, "n_classes", 1)

    def decision_function(self, X):
        """The prefix's raw score of every row (positive decision iff the score is >= 0), or its K scores
        (n_samples, K) for a multiclass booster."""
        if sp.issparse(X):
            X = sp.csr_matrix(X)
        return self.booster.raw_scores(X, self.n_trees)

    def predict(self, X):
        """0/1 decisions ``1[score >= 0]``; for a multiclass booster, each row's class position
        ``argmax_k`` of its K scores (lowest on ties, as the K-class linear predictor)."""
        scores = self.decision_function(X)
        if scores.ndim == 2:
            return np.argmax(scores, axis=1).astype(np.int64)
        return (scores >= 0).astype(np.int64)

    def __repr__(self):
        return f"BoosterPrefix(n_trees={self.n_trees})"
