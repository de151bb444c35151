"""K-class threshold re-fit over recorded iterates: the best mixture of (iterate, plug-in rule) pairs.

The K-class twin of :mod:`rateopt._postprocess._mixture`. Every recorded
iterate ``t`` gives each row ``K`` scores ``s_t(x)``. A *rule* on an iterate
turns them into a class, with one of two forms:

``"offsets"``
    ``argmax_k s_tk(x) + o[c, k]``: per-class score offsets, one row of
    offsets per cell ``c`` of the problem (or one row shared by every row in
    the group-blind variant). With the cells' group indicators among the
    features, such a rule is again a multinomial linear model (the offsets
    move the intercepts), so it stays inside rateopt's model class.
``"plugin"``
    ``argmin_k sum_y eta_ty(x) C[c, y, k]`` with ``eta_t = softmax(s_t)``:
    the plug-in rule of Narasimhan et al. (:mod:`rateopt._postprocess._plugin`)
    on the iterate's softmax probabilities (per cell; group-aware only).

Both forms contain the iterate as trained (zero offsets), so a mixture of
rules is never worse on the training data than the m+1 shrink over the same
iterates. The mixture weights come from one LP over rules whose rates are
counted **on the true training labels** (exact 0-1 confusion counts), solved
by column generation: the restricted LP's duals ``mu`` give the Lagrangian
cost tensor ``C = A_0 + sum_i mu_i A_i``; for every candidate iterate the
pricing step proposes the plug-in rule at ``C`` and the offsets that minimize
the row-weighted Lagrangian by exact coordinate search (each class's offset in
turn: a row switches to class ``k`` at one breakpoint, so one sort per class
and cell finds the best offset); a rule enters while its reduced cost is
negative. The pricing step is a heuristic over the offsets (the search is
exact per coordinate, not jointly), so the LP is optimal over the rules found,
which always include:

* every candidate iterate as trained;
* the plug-in mixture of the *reference* iterate (by default the candidate of
  the best rank, Cotter et al. (2019) Eq. 18), fitted exactly as
  :func:`~rateopt._postprocess._plugin.fit_plugin_rule` does (rates read in
  expectation under its softmax probabilities), then recounted on the true
  labels.

Hence on the training data the result is never worse than the plug-in of the
reference iterate whenever that plug-in meets the goals on the true labels
(always, for goals that do not read the labels, such as demographic parity),
and never worse than any single candidate as trained.

**Groups at prediction.** A group-aware rule (the default) reads each row's
cell, so it needs the goals' group columns at prediction time (the two-class
thresholded solution does not, unless the groups are features). With
``group_blind=True`` every rule is an offsets rule shared by all cells: no
groups at prediction, and the mixture is a mixture of multinomial linear
models (the offsets folded into the intercepts, see
:meth:`ClassThresholdRule.linear_models`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._compiler import confusion_counts
from .._predictors._archive import class_labels_from_meta, class_labels_meta, feature_names_from_meta, read_model, \
    write_model
from .._predictors._draws import is_distribution, normalized_proba, pick_votes, row_uniforms
from .._predictors._multiclass import MulticlassClassifier
from .._utils._archive import damaged, real_array
from .._utils._group_columns import split_group_columns
from ..exceptions import RateoptError
from ._cell_map import fold_cell_offsets
from ._plugin import column_generation, fit_plugin_rule, plugin_decisions
from ._rule import cell_codes, checked_cells, is_group_columns

__all__ = ["CLASS_MIXTURE_FORMAT", "ClassThresholdRule", "ClassThresholdedFit", "ClassThresholdedMixture",
           "N_CANDIDATES", "class_thresholded_mixture_from_file", "fit_class_thresholded_mixture", "group_cell_table",
           "iterate_candidates", "thresholded_from_iterates", "softmax"]

#: The file format of a saved :class:`ClassThresholdedMixture`.
CLASS_MIXTURE_FORMAT = "rateopt-class-thresholded-mixture"

#: Recorded iterates :func:`iterate_candidates` keeps by default (evenly spaced, the last always among them).
N_CANDIDATES = 20
#: Coordinate-search sweeps over the classes per pricing step.
SWEEPS = 2
#: Scores are clipped to this magnitude (log-probabilities of 0 are -inf).
_SCORE_CAP = 1e6


def softmax(scores) -> np.ndarray:
    """Row-wise softmax of (n, K) scores (stable)."""
    S = np.asarray(scores, dtype=np.float64)
    E = np.exp(S - S.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def _rule_decisions(kind, params, scores, cells):
    """The class positions (n,) of one rule on one iterate's (n, K) scores."""
    if kind == "offsets":
        o = params[0] if params.shape[0] == 1 else params[cells]
        return np.argmax(scores + o, axis=1).astype(np.int64)
    return plugin_decisions(softmax(scores), cells if params.shape[0] > 1 else np.zeros(scores.shape[0], np.int64),
                            params)


@dataclass(frozen=True)
class ClassThresholdRule:
    """A randomized mixture of per-iterate K-class rules.

    Attributes
    ----------
    iterate : ndarray of int64 of shape (n_rules,)
        The score array (iterate) each rule reads.
    kinds : tuple of str
        ``"offsets"`` or ``"plugin"`` per rule.
    params : tuple of ndarray
        Per rule: offsets (n_cells or 1, K), or plug-in costs (n_cells, K, K).
    probabilities : ndarray of shape (n_rules,)
    group_blind : bool
        True when no rule reads the cells.
    """

    iterate: np.ndarray
    kinds: tuple
    params: tuple
    probabilities: np.ndarray
    group_blind: bool = False

    @property
    def n_rules(self) -> int:
        """Rules of positive probability."""
        return int(self.iterate.shape[0])

    def _votes(self, scores, cells):
        n = np.asarray(scores[0]).shape[0]
        if not self.group_blind:
            if cells is None:
                raise ValueError("cells is required: the rules are per cell of the problem (fit with "
                                 "group_blind=True for rules that need no groups)")
            cells = np.asarray(cells, dtype=np.int64)
            if cells.shape != (n,):
                raise RateoptError(f"cells must have shape ({n},), got {cells.shape}")
        return np.stack([_rule_decisions(k, p, np.asarray(scores[t], dtype=np.float64), cells)
                         for t, k, p in zip(self.iterate, self.kinds, self.params)], axis=1)

    def distribution(self, scores, cells=None) -> np.ndarray:
        """The exact decision distribution (n, K) of the mixture.

        Parameters
        ----------
        scores : sequence of ndarray of shape (n_samples, K)
            The scores of every iterate the rules read (indexed by ``iterate``).
        cells : ndarray of int of shape (n_samples,), default=None
            Each row's cell (required unless ``group_blind``).

        Returns
        -------
        ndarray of shape (n_samples, K)
        """
        K = np.asarray(scores[self.iterate[0]]).shape[1]
        return normalized_proba(self._votes(scores, cells), self.probabilities, K)

    def decisions(self, scores, cells, uniforms) -> np.ndarray:
        """Class positions (n,): each row's rule drawn by its uniform number in [0, 1)."""
        return pick_votes(self._votes(scores, cells), self.probabilities, uniforms)

    def linear_models(self, coefs, intercepts, cell_map=None):
        """An offsets mixture as multinomial linear models: the offsets folded into the models.

        A group-blind rule's offsets move the intercepts. A group-aware rule's
        per-cell offsets fold through ``cell_map`` (the groups are features:
        :func:`~rateopt._postprocess._cell_map.cell_indicator_map`), so the
        models need no groups at prediction and decide as the rule does on
        every row whose features encode its cell.

        Parameters
        ----------
        coefs : ndarray of shape (T, K, d)
            The iterates' weights (indexed by ``iterate``).
        intercepts : ndarray of shape (T, K)
        cell_map : tuple, default=None
            ``(A (d, n_cells), b (n_cells,))``; required for a group-aware rule.

        Returns
        -------
        coefs : ndarray of shape (n_rules, K, d)
        intercepts : ndarray of shape (n_rules, K)
        """
        if any(k != "offsets" for k in self.kinds):
            raise ValueError("only an offsets mixture is a mixture of linear models (a plug-in rule is not)")
        W = np.asarray(coefs, dtype=np.float64)[self.iterate]
        b = np.asarray(intercepts, dtype=np.float64)[self.iterate]
        if self.group_blind:
            return W, b + np.stack([p[0] for p in self.params])
        if cell_map is None:
            raise ValueError("a group-aware offsets mixture folds into linear models only through cell_map (the "
                             "groups must be features of X)")
        folded = [fold_cell_offsets(W[r], b[r], self.params[r], cell_map) for r in range(self.n_rules)]
        return np.stack([f[0] for f in folded]), np.stack([f[1] for f in folded])


@dataclass(frozen=True)
class ClassThresholdedFit:
    """What :func:`fit_class_thresholded_mixture` found.

    Attributes
    ----------
    rule : ClassThresholdRule
    objective : float
        The mixture's training objective (exact expected value on the true labels).
    constraint_values : ndarray of shape (m,)
    max_violation : float
        ``max(0, max_i g_i - epsilon)``: 0 when the goals are met.
    counts : ndarray of shape (n_cells, K, K)
        The mixture's expected confusion counts on the training data.
    reference : int
        The reference iterate whose plug-in mixture seeded the LP.
    reference_plugin_objective : float or None
        That plug-in mixture's objective recounted on the true labels (None in the group-blind variant).
    """

    rule: ClassThresholdRule
    objective: float
    constraint_values: np.ndarray
    max_violation: float
    counts: np.ndarray
    reference: int
    reference_plugin_objective: float | None


def _check_scores(scores, n, K):
    out = []
    for t, S in enumerate(scores):
        S = np.asarray(S, dtype=np.float64)
        if S.shape != (n, K):
            raise RateoptError(f"scores[{t}] must have shape ({n}, {K}) (training rows x classes), got {S.shape}")
        if np.isnan(S).any():
            raise RateoptError(f"scores[{t}] holds NaN")
        out.append(np.clip(S, -_SCORE_CAP, _SCORE_CAP))
    if not out:
        raise ValueError("scores must hold at least one iterate's (n_samples, K) scores")
    return out


def _best_offsets(S, rowcost, cid, o):
    """Coordinate search: offsets (n_cid, K) lowering ``sum_i rowcost[i, argmax_k S[i,k] + o[cid[i], k]]``."""
    n, K = S.shape
    o = o.copy()
    rows = np.arange(n)
    for _ in range(SWEEPS):
        for k in range(K):
            Z = S + o[cid]
            Z[:, k] = -np.inf
            j = np.argmax(Z, axis=1)
            # row i takes class k once o[c, k] passes t_i (exact ties aside: the new offset is a midpoint,
            # and every proposed rule is recounted exactly by argmax afterwards)
            t = Z[rows, j] - S[:, k]
            delta = rowcost[:, k] - rowcost[rows, j]  # cost change when the row switches to k
            order = np.lexsort((t, cid))
            ts, ds, cs = t[order], delta[order], cid[order]
            cut = np.flatnonzero(np.diff(cs)) + 1
            for seg_t, seg_d, seg_c in zip(np.split(ts, cut), np.split(ds, cut), np.split(cs, cut)):
                if not seg_t.size:
                    continue
                c = seg_c[0]
                # o just above the p smallest t's switches those p rows to k (ties of t move together)
                csum = np.concatenate(([0.0], np.cumsum(seg_d)))
                last = np.concatenate((seg_t[1:] != seg_t[:-1], [True]))
                valid = np.concatenate(([True], last))
                csum = np.where(valid, csum, np.inf)
                p = int(np.argmin(csum))
                if p == 0:
                    new = seg_t[0] - 1.0
                elif p == seg_t.size:
                    new = seg_t[-1] + 1.0
                else:
                    new = 0.5 * (seg_t[p - 1] + seg_t[p])
                cur_cost = float(np.sum(seg_d[seg_t < o[c, k]]))
                if csum[p] < cur_cost - 1e-15:
                    o[c, k] = new
        o -= o[:, :1]  # offsets are defined up to a shift per cell
    return o


def fit_class_thresholded_mixture(problem, scores, *, epsilon=0.0, group_blind=False, rules=("offsets", "plugin"),
                                  reference=None, max_rounds=100, tol=1e-10) -> ClassThresholdedFit:
    """The best mixture of recorded K-class iterates, each followed by its own plug-in rule.

    Parameters
    ----------
    problem : MulticlassProblem
        The training problem (a linear objective); its dataset's rows are the rows of ``scores``.
    scores : sequence of array-like of shape (n_samples, K)
        The candidate iterates' scores on the training rows (logits; any
        scores whose argmax is the iterate's prediction, e.g. log-probabilities).
    epsilon : float, default=0.0
        Allowed violation of every constraint.
    group_blind : bool, default=False
        Only offsets rules shared by all cells (no groups at prediction).
    rules : tuple of str, default=("offsets", "plugin")
        The rule forms the pricing step proposes (``"plugin"`` only when not
        ``group_blind``). Without ``"plugin"`` the reference iterate's plug-in
        mixture is not added either.
    reference : int, default=None
        The iterate whose exact plug-in mixture seeds the LP (a training run
        passes its best iterate; None: the candidate of least objective among
        those meeting the goals, else of least largest violation). Ignored
        when ``group_blind`` or without ``"plugin"`` rules.
    max_rounds : int, default=100
        A cap on the column-generation rounds.
    tol : float, default=1e-10
        A rule enters when its reduced cost is below ``-tol``.

    Returns
    -------
    ClassThresholdedFit

    Raises
    ------
    RateoptError
        If the objective is not linear (macro-F1).
    ValueError
        On scores of the wrong shape, a negative ``epsilon`` or an out-of-range ``reference``.
    """
    c, ds = problem.compiled, problem.dataset
    if c.objective is None:
        raise RateoptError("the K-class thresholded mixture takes a linear objective (error, balanced_error or a "
                           "linear rate expression), not macro-F1")
    epsilon = float(epsilon)
    if not np.isfinite(epsilon) or epsilon < 0:
        raise ValueError(f"epsilon must be a non-negative number, got {epsilon!r}")
    rules = tuple(rules)
    if not rules or any(r not in ("offsets", "plugin") for r in rules):
        raise ValueError(f"rules must be a non-empty subset of ('offsets', 'plugin'), got {rules!r}")
    use_plugin = "plugin" in rules and not group_blind
    K, G, m = ds.n_classes, c.n_cells, c.n_constraints
    n = ds.n_samples
    S = _check_scores(scores, n, K)
    T = len(S)
    cells = np.asarray(c.cells, dtype=np.int64)
    cid, n_cid = (np.zeros(n, dtype=np.int64), 1) if group_blind else (cells, G)
    w, y = ds.weights, ds.label_index
    A0, A, b = c.objective, c.constraints, c.offsets

    def fg(N):
        f = float(np.tensordot(A0, N, axes=3) + c.objective_constant)
        g = (np.tensordot(A, N, axes=([1, 2, 3], [0, 1, 2])) - b) if m else np.zeros(0)
        return f, g

    def column(t, kind, params):
        d = _rule_decisions(kind, params, S[t], cells)
        N = confusion_counts(c, ds, d)
        f, g = fg(N)
        return {"t": t, "kind": kind, "params": params, "f": f, "g": g, "N": N}

    zero = np.zeros((n_cid, K))
    cols = [column(t, "offsets", zero) for t in range(T)]
    state = [zero] * T  # each iterate's last offsets (the next search starts there)

    ref_obj = None
    if not use_plugin:
        ref = -1 if reference is None else int(reference)
    else:
        if reference is None:
            ref = _least_violating(np.array([col["f"] for col in cols]),
                                   np.stack([col["g"] for col in cols]) if m else np.zeros((T, 0)), epsilon)
        else:
            ref = int(reference)
            if not 0 <= ref < T:
                raise ValueError(f"reference must index one of the {T} iterates, got {reference!r}")
        # the reference iterate's exact plug-in mixture under its own softmax probabilities, recounted on the labels
        soft = fit_plugin_rule(problem, softmax(S[ref]), epsilon=epsilon, max_rounds=max_rounds, tol=tol).rule
        true_cols = [column(ref, "plugin", C) for C in soft.costs]
        ref_N = sum(p * tc["N"] for p, tc in zip(soft.probabilities, true_cols))
        ref_obj = fg(ref_N)[0]
        cols.extend(true_cols)

    def price(mu, lam0):
        C = lam0 * A0 + (np.tensordot(mu, A, axes=1) if m else 0.0)
        rowcost = w[:, None] * C[cells, y]  # (n, K): each row's Lagrangian cost per predicted class
        new = []
        for t in range(T):
            if "offsets" in rules:
                state[t] = _best_offsets(S[t], rowcost, cid, state[t])
                new.append(column(t, "offsets", state[t]))
            if use_plugin:
                new.append(column(t, "plugin", C))
        return new

    out = column_generation(cols, price, m, epsilon, max_rounds, tol)
    x, cols = out["x"], out["cols"]
    keep = np.flatnonzero(x)
    p = x[keep]
    N = np.tensordot(p, np.stack([cols[i]["N"] for i in keep]), axes=1)
    f, g = fg(N)
    rule = ClassThresholdRule(iterate=np.array([cols[i]["t"] for i in keep], dtype=np.int64),
                              kinds=tuple(cols[i]["kind"] for i in keep),
                              params=tuple(cols[i]["params"] for i in keep), probabilities=p,
                              group_blind=group_blind)
    return ClassThresholdedFit(rule=rule, objective=f, constraint_values=g,
                               max_violation=float(max(0.0, (g - epsilon).max(initial=0.0))), counts=N,
                               reference=ref, reference_plugin_objective=ref_obj)


def _least_violating(f, G, epsilon):
    """The candidate of least objective among those with every ``g_i <= epsilon``, else of least largest ``g_i``."""
    v = np.maximum(G.max(axis=1, initial=-np.inf) - epsilon, 0.0) if G.shape[1] else np.zeros(f.shape[0])
    return int(np.lexsort((f, v))[0])


class ClassThresholdedMixture:
    """A K-class thresholded mixture as a classifier: recorded iterates, each followed by its own rule.

    Parameters
    ----------
    rule : ClassThresholdRule
        Its ``iterate`` indexes the models of ``coefs``.
    coefs : array-like of shape (n_models, n_classes, n_features)
    intercepts : array-like of shape (n_models, n_classes)
    classes : array-like of shape (n_classes,)
    feature_map : NystroemMap, default=None
    feature_names : sequence of str, default=None
        The training DataFrame's columns: a DataFrame given at prediction must
        have them in this order (see :class:`~rateopt.MulticlassClassifier`).
    cell_table : tuple, default=None
        ``(columns, cells, cell_index)``: the group columns whose value
        combinations make the rule's cells, those combinations, and the
        rule's cell of each (:func:`group_cell_table`). None: the cells are
        not combinations of group values (a subset given by a mask), and
        only ``cells=`` can give them at prediction.
    group_columns : sequence of str or int, default=None
        Columns of ``X`` at prediction that hold the groups (names of a
        DataFrame's columns, or positions of an array's), taken out of ``X``
        before scoring, as :class:`~rateopt.ThresholdClassifier`'s
        ``group_columns`` are: the classifier then works in a ``Pipeline``.

    cell_map : tuple, default=None
        ``(A (n_features, n_cells), b (n_cells,))`` when the groups are
        features (:func:`~rateopt._postprocess._cell_map.cell_indicator_map`):
        a row's cell is then read from its features, ``argmax_c x . A[:, c] + b[c]``.

    Attributes
    ----------
    cell_columns_ : tuple of str or None
        The group columns the rule's cells are made of (empty: one cell).
    cells_ : list of tuple or None
        The value combinations of ``cell_columns_`` seen in training.

    Notes
    -----
    A group-aware rule needs each row's cell at prediction: from the groups
    (``groups=``, or ``group_columns`` of ``X``), or directly as ``cells=``
    (the problem's cell numbering: ``problem.compiled.cells`` on the training
    rows). A group value combination not seen in training is refused. With
    ``cell_map`` (the groups are features of ``X``) the cell is read from
    the features when neither is given.
    """

    kind = "thresholded"

    def __init__(self, rule, coefs, intercepts, *, classes, feature_map=None, feature_names=None,
                 cell_table=None, group_columns=None, cell_map=None):
        self.cell_map = cell_map
        used = np.unique(rule.iterate)
        remap = np.full(int(used.max()) + 1, -1, dtype=np.int64)
        remap[used] = np.arange(used.size)
        self.rule = ClassThresholdRule(iterate=remap[rule.iterate], kinds=rule.kinds, params=rule.params,
                                       probabilities=rule.probabilities, group_blind=rule.group_blind)
        self.scorer = MulticlassClassifier(np.asarray(coefs)[used], np.asarray(intercepts)[used],
                                           np.full(used.size, 1.0 / used.size), classes=classes,
                                           feature_map=feature_map, feature_names=feature_names)
        self.classes_ = self.scorer.classes_
        self.feature_names_in_ = self.scorer.feature_names_in_
        self.n_features_in_ = self.scorer.n_features_in_
        columns, cells, index = (None, None, None) if cell_table is None else cell_table
        self.cell_columns_ = None if columns is None else tuple(columns)
        self.cells_ = None if cells is None else [tuple(c) for c in cells]
        self._cell_index = None if index is None else np.asarray(index, dtype=np.int64)
        self.group_columns = None if group_columns is None else list(group_columns)

    def _inputs(self, X, cells, groups):
        """``(features, cells)``: the group columns taken out of ``X``, and each row's cell for the rule."""
        X, groups = split_group_columns(X, self.group_columns, groups, predicting=True,
                                        n_features=self.n_features_in_)
        if self.rule.group_blind:
            return X, None
        if cells is not None:
            if groups is not None:
                raise ValueError("give the rows' cells= or their groups (groups= or group_columns), not both")
            return X, cells
        if groups is None and self.cell_map is not None:
            return X, None  # the cell is read from the features (_cells)
        if groups is None:
            where = f"groups= (the columns {list(self.cell_columns_)!r})" if self.cell_columns_ else "groups="
            raise ValueError(f"the rule is per cell of the problem: give {where}, set group_columns to read them "
                             "from X, or give cells= (or fit with group_blind=True for rules that need no groups)")
        if self.cell_columns_ is None:
            raise ValueError("the rule's cells are not combinations of group values (a subset given by a mask): "
                             "give cells=")
        codes, _ = cell_codes(groups, self.cell_columns_, self.cells_, where="groups")
        return X, self._cell_index[codes]

    def _scores(self, X):
        Xm = self.scorer._features(X)
        A = self.scorer._all_scores(Xm)
        return Xm, [A[:, t, :] for t in range(A.shape[1])]

    def _cells(self, Xm, cells):
        if cells is not None or self.cell_map is None or self.rule.group_blind:
            return cells
        A, b = self.cell_map
        return np.asarray(np.argmax(Xm.data @ A + b, axis=1), dtype=np.int64).reshape(-1)

    def predict_proba(self, X, cells=None, *, groups=None):
        """The exact decision distribution (n, n_classes).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The features, and the ``group_columns`` when set.
        cells : ndarray of int of shape (n_samples,), default=None
            Each row's cell in the problem's numbering (instead of the groups).
        groups : DataFrame or dict of arrays, default=None
            The rows' group columns (not with ``group_columns``).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        X, cells = self._inputs(X, cells, groups)
        Xm, scores = self._scores(X)
        return self.rule.distribution(scores, self._cells(Xm, cells))

    def predict(self, X, cells=None, random_state=0, row_key=None, *, groups=None):
        """The drawn class labels: each row draws one rule (rateopt's per-row draw, :mod:`rateopt._predictors._draws`).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The features, and the ``group_columns`` when set.
        cells : ndarray of int of shape (n_samples,), default=None
        random_state : int, default=0
        row_key : array-like of shape (n_samples,), default=None
            Row ids keying the draws (the same decision in any batch and order).
        groups : DataFrame or dict of arrays, default=None
            The rows' group columns (not with ``group_columns``).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        X, cells = self._inputs(X, cells, groups)
        Xm, scores = self._scores(X)
        u = row_uniforms(Xm.data, random_state, row_key)
        return self.classes_[self.rule.decisions(scores, self._cells(Xm, cells), u)]

    def save(self, path):
        """Save to ``path`` (``.npz``, no pickle); :func:`rateopt.load` reads it back.

        Parameters
        ----------
        path : str or os.PathLike
        """
        if self.cell_map is not None:
            raise ValueError("a rule that reads its cells from the features (cell_map) cannot be saved yet: save "
                             "thresholded(problem, group_blind=True) or the m-stochastic solution instead")
        rule, sc = self.rule, self.scorer
        offsets = [p for k, p in zip(rule.kinds, rule.params) if k == "offsets"]
        costs = [p for k, p in zip(rule.kinds, rule.params) if k == "plugin"]
        K = len(self.classes_)
        meta = {"kind": "class-thresholded", "classes": class_labels_meta(self.classes_),
                "rule": {"iterate": rule.iterate.tolist(), "kinds": list(rule.kinds),
                         "group_blind": bool(rule.group_blind)},
                "columns": None if self.cell_columns_ is None else list(self.cell_columns_),
                "cells": None if self.cells_ is None else [list(c) for c in self.cells_],
                "cell_index": None if self._cell_index is None else self._cell_index.tolist(),
                "group_columns": self.group_columns}
        extra = {"rule_probabilities": np.asarray(rule.probabilities, dtype=np.float64),
                 "rule_offsets": np.stack(offsets) if offsets else np.zeros((0, 1, K)),
                 "rule_costs": np.stack(costs) if costs else np.zeros((0, 1, K, K))}
        write_model(path, meta, sc.coefs_, sc.intercepts_, sc.probabilities_, sc.feature_map, CLASS_MIXTURE_FORMAT,
                    self.feature_names_in_, extra_arrays=extra)

    def __repr__(self):
        return f"ClassThresholdedMixture(n_rules={self.rule.n_rules}, group_blind={self.rule.group_blind})"


def iterate_candidates(coefs, intercepts, *, n_candidates=N_CANDIDATES, averages=True, include=()):
    """The candidate models of the thresholded mixture: evenly spaced recorded iterates and their averages.

    The game's iterates oscillate (the multipliers chase the constraints), so
    single iterates are poor scorers; the average of the iterates'
    parameters is a steadier one and, being a multinomial linear model, stays
    inside the model class (see ``docs/defaults.md``, K classes).

    Parameters
    ----------
    coefs : ndarray of shape (T, K, d)
    intercepts : ndarray of shape (T, K)
    n_candidates : int, default=20
        Recorded iterates kept (evenly spaced over ``0..T-1``, the last included).
    averages : bool, default=True
        Add the parameter averages over all iterates and over the second half.
    include : sequence of int, default=()
        Iterates kept in any case (e.g. the run's best iterate).

    Returns
    -------
    coefs : ndarray of shape (R, K, d)
    intercepts : ndarray of shape (R, K)
    names : list of str
        ``"iterate t"``, ``"average 0:T"`` or ``"average T/2:T"`` per candidate.
    """
    W, b = np.asarray(coefs, dtype=np.float64), np.asarray(intercepts, dtype=np.float64)
    if W.ndim != 3 or b.shape != W.shape[:2] or W.shape[0] < 1:
        raise ValueError(f"coefs must be (T, K, d) and intercepts (T, K), got {W.shape} and {b.shape}")
    if int(n_candidates) < 1:
        raise ValueError(f"n_candidates must be a positive integer, got {n_candidates!r}")
    T = W.shape[0]
    extra = np.asarray(include, dtype=np.int64).reshape(-1)
    if np.any((extra < 0) | (extra >= T)):
        raise ValueError(f"include must index the {T} iterates, got {list(extra)}")
    idx = np.unique(np.concatenate((np.round(np.linspace(0, T - 1, min(int(n_candidates), T))).astype(np.int64),
                                    extra)))
    Ws, bs, names = [W[idx]], [b[idx]], [f"iterate {t}" for t in idx]
    if averages and T > 1:
        for a in sorted({0, T // 2}):
            Ws.append(W[a:].mean(axis=0)[None])
            bs.append(b[a:].mean(axis=0)[None])
            names.append(f"average {a}:{T}")
    return np.concatenate(Ws), np.concatenate(bs), names


def thresholded_from_iterates(problem, coefs, intercepts, *, best=None, include=(), extra_models=None, classes=None,
                              feature_map=None, feature_names=None, cell_map=None, n_candidates=N_CANDIDATES,
                              averages=True, **options):
    """The K-class thresholded solution of a training run: candidates, scores, the mixture and its classifier.

    Parameters
    ----------
    problem : MulticlassProblem
        The training problem (its dataset's ``X`` is scored).
    coefs : ndarray of shape (T, K, d)
        The recorded iterates' weights.
    intercepts : ndarray of shape (T, K)
    best : int, default=None
        The run's best iterate (its ``"best"`` solution): always a candidate,
        and the reference whose plug-in mixture the result never does worse
        than on the training data.
    include : sequence of int, default=()
        More iterates kept as candidates, e.g. the m-stochastic solution's
        support: the result is then never worse on the training data than
        that mixture either.
    extra_models : tuple of ndarray, default=None
        ``(coefs (R, K, d), intercepts (R, K))``: more candidates on the same
        features, always kept (named ``"extra r"``), e.g. the last iterate of
        an objective-only (unconstrained) run: see ``docs/defaults.md``, K classes.
    classes : array-like, default=None
        The class labels (default ``problem.classes``).
    feature_map : NystroemMap, default=None
        A kernel model's feature map.
    feature_names : sequence of str, default=None
        The training DataFrame's columns, checked by the classifier at prediction.
    cell_map : tuple, default=None
        Given to the classifier: the cells read from the features (see :class:`ClassThresholdedMixture`).
    n_candidates : int, default=20
    averages : bool, default=True
        See :func:`iterate_candidates`.
    **options
        Passed to :func:`fit_class_thresholded_mixture` (``epsilon``, ``group_blind``, ...).

    Returns
    -------
    classifier : ClassThresholdedMixture
    fit : ClassThresholdedFit
        Its ``rule.iterate`` indexes the candidates.
    names : list of str
        The candidates (:func:`iterate_candidates`).
    """
    include = tuple(int(i) for i in np.asarray(include, dtype=np.int64).reshape(-1))
    include += () if best is None else (int(best),)
    Wc, bc, names = iterate_candidates(coefs, intercepts, n_candidates=n_candidates, averages=averages,
                                       include=include)
    if best is not None:
        options.setdefault("reference", names.index(f"iterate {int(best)}"))
    if extra_models is not None:
        We, be = (np.asarray(a, dtype=np.float64) for a in extra_models)
        if We.ndim != 3 or We.shape[1:] != Wc.shape[1:] or be.shape != We.shape[:2]:
            raise ValueError(f"extra_models must be (coefs (R, {Wc.shape[1]}, {Wc.shape[2]}), intercepts "
                             f"(R, {Wc.shape[1]})), got {We.shape} and {be.shape}")
        Wc, bc = np.concatenate((Wc, We)), np.concatenate((bc, be))
        names = names + [f"extra {r}" for r in range(We.shape[0])]
    classes = problem.classes if classes is None else classes
    scorer = MulticlassClassifier(Wc, bc, np.full(Wc.shape[0], 1.0 / Wc.shape[0]), classes=classes,
                                  feature_map=feature_map)
    A = scorer._all_scores(scorer._features(problem.dataset.X))
    fit = fit_class_thresholded_mixture(problem, [A[:, r, :] for r in range(A.shape[1])], **options)
    return ClassThresholdedMixture(fit.rule, Wc, bc, classes=classes, feature_map=feature_map,
                                   feature_names=feature_names, cell_table=group_cell_table(problem),
                                   cell_map=cell_map), fit, names


def group_cell_table(problem):
    """The group value combinations that make a compiled K-class problem's cells, or None.

    A cell is a set of rows that every subset of the goals treats alike; a
    subset given by group values makes cells that are combinations of those
    values. The table keeps the fewest group columns (dropping each column
    whose removal still leaves one cell per combination of the others).

    Parameters
    ----------
    problem : Problem
        A K-class problem (its training dataset's groups and compiled cells).

    Returns
    -------
    tuple or None
        ``(columns, cells, cell_index)``: the columns, their value
        combinations seen in training, and each combination's cell; None
        when a combination of all group values holds rows of two cells (a
        subset given by a mask).
    """
    ds = problem.dataset
    cell = np.asarray(problem.compiled.cells, dtype=np.int64)

    def table(columns):
        codes, combos = cell_codes(ds.groups, columns) if columns else (np.zeros(cell.size, np.int64), [()])
        index = np.full(len(combos), -1, dtype=np.int64)
        index[codes] = cell
        return (combos, index) if np.array_equal(index[codes], cell) else None

    columns = list(ds.group_names)
    if table(columns) is None:
        return None
    for c in list(columns):
        if table([k for k in columns if k != c]) is not None:
            columns.remove(c)
    combos, index = table(columns)
    return tuple(columns), combos, index


def class_thresholded_mixture_from_file(meta, arrays, path):
    """The :class:`ClassThresholdedMixture` of a saved file (a reader of ``rateopt._io.READERS``)."""
    classes = class_labels_from_meta(meta.get("classes"), path)
    W, b, _, fmap = read_model(meta, arrays, path, 3)
    K, n_models = len(classes), W.shape[0]
    if W.shape[1] != K:
        raise damaged(path, "weights", f"has shape {W.shape}, expected (n_models >= 1, {K}, n_features)")
    rule = meta.get("rule")
    if not isinstance(rule, dict):
        raise damaged(path, "metadata.rule", f"is {rule!r}, expected a dict")
    iterate, kinds, blind = rule.get("iterate"), rule.get("kinds"), rule.get("group_blind")
    if not isinstance(blind, bool):
        raise damaged(path, "metadata.rule.group_blind", f"is {blind!r}, expected true or false")
    if not isinstance(iterate, list) or not iterate or not all(
            isinstance(t, int) and not isinstance(t, bool) and 0 <= t < n_models for t in iterate):
        raise damaged(path, "metadata.rule.iterate", f"is {iterate!r}, expected a non-empty list of model "
                                                     f"indices in [0, {n_models})")
    if not isinstance(kinds, list) or len(kinds) != len(iterate) or not all(k in ("offsets", "plugin")
                                                                            for k in kinds):
        raise damaged(path, "metadata.rule.kinds", f"is {kinds!r}, expected {len(iterate)} of 'offsets' or "
                                                   "'plugin'")
    p = real_array(arrays, "rule_probabilities", 1, path)
    if p.shape[0] != len(iterate) or not is_distribution(p):
        raise damaged(path, "rule_probabilities", f"must hold {len(iterate)} non-negative numbers summing to 1")
    offsets = real_array(arrays, "rule_offsets", 3, path)
    costs = real_array(arrays, "rule_costs", 4, path)
    n_off, n_plug = kinds.count("offsets"), kinds.count("plugin")
    if offsets.shape[0] != n_off or offsets.shape[2] != K:
        raise damaged(path, "rule_offsets", f"has shape {offsets.shape}, expected ({n_off}, n_cells, {K})")
    if costs.shape[0] != n_plug or costs.shape[2:] != (K, K):
        raise damaged(path, "rule_costs", f"has shape {costs.shape}, expected ({n_plug}, n_cells, {K}, {K})")
    if blind and (n_plug or offsets.shape[1] != 1):
        raise damaged(path, "metadata.rule.group_blind", "is true but a rule reads the cells")
    n_cells = max([offsets.shape[1] if n_off else 1] + ([costs.shape[1]] if n_plug else []))
    if (n_off and offsets.shape[1] not in (1, n_cells)) or (n_plug and costs.shape[1] != n_cells):
        raise damaged(path, "rule_costs", f"has {costs.shape[1]} cells, and 'rule_offsets' {offsets.shape[1]}")
    it_off, it_plug = iter(offsets), iter(costs)
    params = tuple(next(it_off) if k == "offsets" else next(it_plug) for k in kinds)
    table = None
    if meta.get("columns") is not None:
        columns, cells = checked_cells(meta, lambda what: damaged(path, "metadata", what))
        index = meta.get("cell_index")
        top = 2**31 if blind else n_cells  # a group-blind rule reads no cell: any cell number
        if not isinstance(index, list) or len(index) != len(cells) or not all(
                isinstance(c, int) and not isinstance(c, bool) and 0 <= c < top for c in index):
            raise damaged(path, "metadata.cell_index", f"is {index!r}, expected {len(cells)} cell numbers in "
                                                       f"[0, {top})")
        table = (columns, cells, index)
    group_columns = meta.get("group_columns")
    if not is_group_columns(group_columns):
        raise damaged(path, "metadata.group_columns", f"is {group_columns!r}, expected a list of column names or "
                                                      "of positions")
    names = feature_names_from_meta(meta, W.shape[2] if fmap is None else fmap.n_features_in_, path)
    rule = ClassThresholdRule(iterate=np.asarray(iterate, dtype=np.int64), kinds=tuple(kinds), params=params,
                              probabilities=p, group_blind=blind)
    return ClassThresholdedMixture(rule, W, b, classes=classes, feature_map=fmap, feature_names=names,
                                   cell_table=table, group_columns=group_columns)
