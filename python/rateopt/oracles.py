"""Oracles: models that minimize a weighted sum of atom rates (Cotter et al., 2019, Definition 1).

Given a coefficient for every atom of a compiled problem, an oracle returns a
model ``(theta, bias)`` that (approximately) minimizes

    ``sum_a coef_a p+(S_a)``,

the positive-prediction rates of the atoms weighted by ``coef``: a
cost-sensitive classification problem. The oracle games (``"oracle-lagrangian"``,
Cotter et al. (2019) Algorithm 1 [1]_; ``"oracle-proxy"``, Algorithm 2) call one each round with
the current Lagrangian's coefficients [2]_. An :class:`Oracle` holds only its
parameters; :meth:`Oracle.bind` prepares it for one problem (its data and atom
tables) and returns a callable ``coef, warm_start -> (theta, bias)``.

Every rate is linear in a model's decisions, so the objective is
``sum_j u_j 1[s_j >= 0]`` with the per-row *net coefficients*
``u_j = sum_{a ni j} coef_a w_j / W(S_a)`` (:func:`net_coefficients`); an exact
oracle over a model class minimizes that sum over the class.

* :class:`PoolOracle` -- exact over a finite set of linear models (for tests and
  for checking the theorems: Cotter et al. (2019) Theorems 2 and 6 hold with rho = 0).
* :class:`ThresholdOracle` -- exact over the thresholds of a fixed linear score,
  one threshold overall or one per group when one-hot group columns of ``X``
  partition the rows.
* :class:`HingeOracle` -- the exact minimizer of the net-hinge proxy (plus the
  L2 term) over linear models, by the core's SDCA solver: exact for the
  proxy-Lagrangian's model player (Cotter et al., 2019, Algorithm 2), a convex surrogate
  for the 0-1 games.
* :class:`EstimatorOracle` -- any scikit-learn classifier with ``sample_weight``,
  fitted on the cost-sensitive reduction.
* :class:`PlugInOracle` -- the Bayes rule under a class-probability estimate
  (counterfactual memberships; Narasimhan et al. (2019)'s COCO baseline with
  ``method="three-player-oracle"``): a per-group rule on ``eta_hat``.

References
----------
.. [1] A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You,
   K. Sridharan. "Optimization with Non-Differentiable Constraints with
   Applications to Fairness, Recall, Churn, and Other Goals". JMLR 20(172),
   2019, Definition 1, Algorithms 1 and 2 (the oracle games first appeared
   in A. Cotter, H. Jiang, K. Sridharan, "Two-Player Games for Efficient
   Non-Convex Constrained Optimization", ALT 2019).
.. [2] ``../shared/papers/notes/methods_spec.md`` §1.3, §D.2-D.4.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.sparse as sp

from . import core
from ._language._predictions import positive_decisions
from ._predictors._ensembles import ConstantClassifier
from ._training._counterfactual import counterfactual_memberships
from ._training._row_coefficients import problem_row_coefficients
from ._training._spec import kernel_pass

__all__ = ["Oracle", "PoolOracle", "ThresholdOracle", "PlugInOracle", "PlugInRule", "HingeOracle", "EstimatorOracle",
           "net_coefficients"]


def net_coefficients(spec, coef):
    """Per-row net coefficients ``u`` with ``sum_j u_j 1[s_j >= 0] == coef . rates``, block by block.

    Parameters
    ----------
    spec : GameSpec
        The compiled problem (its atom tables).
    coef : ndarray of shape (n_atoms,)
        Global atom coefficients.

    Returns
    -------
    list of ndarray
        One vector of shape (n_samples of the block,) per block of ``spec``
        (:func:`rateopt._training._row_coefficients.problem_row_coefficients`, in block order).
    """
    return list(problem_row_coefficients(spec, coef).values())


class Oracle:
    """Base class: an oracle's parameters; :meth:`bind` prepares it for one problem.

    Subclasses implement :meth:`bind`, returning a callable
    ``(coef, warm_start=None) -> (theta, bias)``, and name in :attr:`reads`
    the training parameters they read (the oracle games accept those).
    """

    #: The game-specific training parameters :meth:`bind` reads (e.g. ``margin``).
    reads = frozenset()

    def bind(self, spec, settings):  # pragma: no cover - abstract
        """Prepare the oracle for the problem ``spec`` (called once per training run).

        Parameters
        ----------
        spec : GameSpec
            The compiled problem (features, atom tables, rate maps).
        settings : TrainSettings
            The training settings (threads, margin).

        Returns
        -------
        callable
            ``(coef, warm_start=None) -> (theta, bias)``.
        """
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


# --------------------------------------------------------------------------- pool


class PoolOracle(Oracle):
    """The exact minimizer over a finite pool of linear models.

    Parameters
    ----------
    models : sequence of (theta, bias)
        The pool: weight vectors (length n_features of the problem; kernel
        features for a kernel model) and biases. Ties go to the first model.

    Notes
    -----
    :meth:`bind` evaluates every model's atom rates once (one kernel pass per
    model); each call is then one matrix-vector product, ``argmin_k R[k] . coef``.
    """

    def __init__(self, models):
        pool = []
        for k, m in enumerate(models):
            try:
                theta, bias = m
            except (TypeError, ValueError):
                raise ValueError(f"models[{k}] must be a pair (theta, bias)") from None
            theta = np.array(theta, dtype=np.float64).reshape(-1)
            bias = float(bias)
            if not (np.all(np.isfinite(theta)) and np.isfinite(bias)):
                raise ValueError(f"models[{k}] holds a non-finite value")
            pool.append((theta, bias))
        if not pool:
            raise ValueError("models must hold at least one (theta, bias) pair")
        if len({t.shape[0] for t, _ in pool}) != 1:
            raise ValueError("models must all have the same number of weights")
        self.models = tuple(pool)

    def bind(self, spec, settings):
        d = self.models[0][0].shape[0]
        if d != spec.n_features:
            raise ValueError(f"PoolOracle: the pool's models have {d} weights, the problem has "
                             f"{spec.n_features} features")
        R = np.array([kernel_pass(spec, t, b, np.zeros(spec.n_atoms), margin=settings.margin,
                                  n_threads=settings.n_threads).rates for t, b in self.models])
        models = self.models

        def best(coef, warm_start=None):
            k = int(np.argmin(R @ np.asarray(coef, dtype=np.float64)))
            return models[k][0].copy(), models[k][1]

        return best

    def __repr__(self):
        return f"PoolOracle(n_models={len(self.models)})"


# --------------------------------------------------------------------------- thresholds


class ThresholdOracle(Oracle):
    """The exact minimizer over thresholds of a fixed linear score ``s = X . direction``.

    With ``group_columns=None`` the models are ``1[s >= t]`` for every threshold
    ``t`` (``theta = direction``, ``bias = -t``). With ``group_columns`` (indices
    of 0/1 indicator columns of ``X``, at most one 1 per row) the rows with a 1
    in column ``c_k`` form group ``k`` and the rows with none the base group 0;
    each gets its own threshold ``t_k``: ``bias = -t_0`` and the weight of
    ``c_k`` is ``-(t_k - t_0)``. The objective separates over the groups, so
    this is exact too.

    Parameters
    ----------
    direction : array-like of shape (n_features,)
        The score's weights (e.g. a fitted logistic regression's ``coef_``).
        With ``group_columns``, its entries on those columns must be 0.
    group_columns : sequence of int, default=None
        Group indicator columns of the features (one column per non-base group).

    Notes
    -----
    Exact: the rows are sorted by score once (at :meth:`bind`); a call takes the
    prefix sums of the net coefficients in that order and the best cut between
    distinct scores (O(n) per call). The threshold is the midpoint of the two
    scores around the cut, so ``1[s >= t]`` selects exactly the rows above it.
    """

    def __init__(self, direction, group_columns=None):
        self.direction = np.array(direction, dtype=np.float64).reshape(-1)
        if self.direction.size == 0 or not np.all(np.isfinite(self.direction)):
            raise ValueError("direction must be a non-empty vector of finite weights")
        if group_columns is not None:
            cols = _group_columns(group_columns, self.direction.size)
            if np.any(self.direction[list(cols)] != 0):
                raise ValueError("direction must be 0 on the group_columns (their weights are the thresholds)")
            group_columns = cols
        self.group_columns = group_columns

    def bind(self, spec, settings):
        d = self.direction.shape[0]
        if d != spec.n_features:
            raise ValueError(f"ThresholdOracle: direction has {d} weights, the problem has {spec.n_features} "
                             "features")
        scores, groups = [], []
        for blk in spec.blocks:
            X = blk.X.data
            scores.append(np.asarray(X @ self.direction, dtype=np.float64).reshape(-1))
            if self.group_columns is not None:
                groups.append(_group_ids(X, self.group_columns, f"ThresholdOracle: the group_columns of dataset "
                                                                f"{blk.name!r}"))
        s = np.concatenate(scores)
        g = np.concatenate(groups) if groups else np.zeros(s.shape[0], dtype=np.int64)
        n_groups = 1 if self.group_columns is None else len(self.group_columns) + 1
        plans = [_ThresholdPlan(s, np.flatnonzero(g == k)) for k in range(n_groups)]
        direction, cols = self.direction, self.group_columns

        def best(coef, warm_start=None):
            u = np.concatenate(net_coefficients(spec, coef))
            t = [plan.best(u) for plan in plans]
            theta = direction.copy()
            if cols is not None:  # s - t_0 - (t_k - t_0) on group k: its own threshold
                theta[list(cols)] = -(np.asarray(t[1:]) - t[0])
            return theta, -t[0]

        return best

    def __repr__(self):
        return f"ThresholdOracle(n_features={self.direction.shape[0]}, group_columns={self.group_columns})"


def _group_columns(group_columns, n_features=None):
    """Validated group indicator columns: a tuple of distinct non-negative ints (below ``n_features``)."""
    cols = np.asarray(group_columns)
    if cols.ndim != 1 or cols.size == 0 or not np.issubdtype(cols.dtype, np.integer):
        raise ValueError("group_columns must be a non-empty sequence of column indices")
    top = np.inf if n_features is None else n_features
    if np.unique(cols).size != cols.size or cols.min() < 0 or cols.max() >= top:
        raise ValueError(f"group_columns must be distinct indices in [0, {top}), got {cols.tolist()}")
    return tuple(int(c) for c in cols)


def _group_ids(X, group_columns, what):
    """Group of every row: k + 1 for a 1 in ``group_columns[k]``, 0 (the base) for rows with none."""
    G = X[:, list(group_columns)]
    G = G.toarray() if sp.issparse(G) else np.asarray(G)
    if not (np.all((G == 0) | (G == 1)) and np.all(G.sum(axis=1) <= 1)):
        raise ValueError(f"{what} are not one-hot (0/1 values, at most one 1 per row)")
    return np.where(G.sum(axis=1) > 0, np.argmax(G, axis=1) + 1, 0).astype(np.int64)


class _ThresholdPlan:
    """The rows of one group sorted by score, and a threshold for every realizable cut."""

    def __init__(self, scores, rows):
        self.order = rows[np.argsort(-scores[rows], kind="stable")]
        s = scores[self.order]  # descending
        n = s.shape[0]
        # Cut k keeps the top k rows: realizable at k = 0, k = n and between distinct scores.
        inner = np.flatnonzero(s[:-1] != s[1:]) + 1 if n > 1 else np.zeros(0, dtype=np.int64)
        self.cuts = np.unique(np.concatenate(([0, n], inner))).astype(np.int64)
        t = np.empty(self.cuts.shape[0])
        for i, k in enumerate(self.cuts):
            if n == 0:
                t[i] = 0.0
            elif k == 0:  # above every score
                t[i] = s[0] + max(1.0, abs(s[0]))
            elif k == n:  # below every score
                t[i] = s[-1] - max(1.0, abs(s[-1]))
            else:  # the midpoint keeps a margin on both sides; adjacent floats: the kept score itself
                mid = 0.5 * s[k - 1] + 0.5 * s[k]
                t[i] = mid if s[k] < mid <= s[k - 1] else s[k - 1]
        self.thresholds = t

    def best(self, u):
        """The threshold minimizing ``sum_j u_j 1[s_j >= t]`` over the group's rows (first minimum)."""
        prefix = np.concatenate(([0.0], np.cumsum(u[self.order])))
        return float(self.thresholds[int(np.argmin(prefix[self.cuts]))])


# --------------------------------------------------------------------------- plug-in (class probabilities)


def _probabilities(eta_hat, X):
    """``eta_hat``'s estimate of ``P(y = 1 | x)`` for every row of ``X``, validated."""
    if hasattr(eta_hat, "predict_proba"):
        P = np.asarray(eta_hat.predict_proba(X), dtype=np.float64)
        if P.ndim != 2 or P.shape[1] != 2:
            raise ValueError(f"eta_hat.predict_proba returned shape {P.shape}; a binary classifier gives (n, 2)")
        classes = list(getattr(eta_hat, "classes_", [0, 1]))
        p = P[:, classes.index(1) if 1 in classes else 1]
    else:
        p = np.asarray(eta_hat(X), dtype=np.float64)
    p = p.reshape(-1) if p.ndim == 2 and 1 in p.shape else p
    if p.shape != (X.shape[0],):
        raise ValueError(f"eta_hat returned shape {p.shape} for {X.shape[0]} rows; expected ({X.shape[0]},)")
    if not (np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))):
        raise ValueError("eta_hat returned a probability outside [0, 1] (or a non-finite value)")
    return p


class PlugInRule:
    """The plug-in classifier: positive iff ``eta(x) a1[g(x)] + (1 - eta(x)) a0[g(x)] < 0``.

    ``eta`` is the class-probability estimate, ``g`` the row's group (from
    one-hot group columns of ``X``), and ``a1[k]``, ``a0[k]`` the counterfactual
    net coefficients of group ``k``'s rows per unit weight. In each group this
    is a threshold on ``eta``: with ``c = a1 - a0``, positive iff
    ``eta > -a0 / c`` when ``c < 0`` (the usual direction), ``eta < -a0 / c``
    when ``c > 0``, and a constant decision when ``c = 0`` (:meth:`thresholds`).

    Parameters
    ----------
    eta_hat : fitted classifier or callable
        As :class:`PlugInOracle`'s.
    group_columns : tuple of int or None
        The one-hot group columns of ``X`` (None: one group).
    a1, a0 : ndarray of shape (n_groups,)
        Per-group coefficients under labels 1 and 0.
    n_features : int
        Width of the inputs.
    """

    def __init__(self, eta_hat, group_columns, a1, a0, n_features):
        self.eta_hat, self.group_columns = eta_hat, group_columns
        self.a1_, self.a0_ = np.asarray(a1, dtype=np.float64), np.asarray(a0, dtype=np.float64)
        self.n_features_in_ = int(n_features)

    def groups(self, X):
        """Every row's group (0 for the base group, ``k + 1`` for a 1 in ``group_columns[k]``)."""
        if self.group_columns is None:
            return np.zeros(X.shape[0], dtype=np.int64)
        return _group_ids(X, self.group_columns, "PlugInRule: the group_columns of X")

    def decision_values(self, X):
        """``eta a1[g] + (1 - eta) a0[g]`` per row (per unit weight): negative is a positive decision."""
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, the rule was built for {self.n_features_in_}")
        eta, g = _probabilities(self.eta_hat, X), self.groups(X)
        return eta * self.a1_[g] + (1.0 - eta) * self.a0_[g]

    def predict(self, X):
        """0/1 decisions: 1 where the plug-in expected cost of a positive decision is negative."""
        return (self.decision_values(X) < 0).astype(np.int64)

    def thresholds(self):
        """Per group ``(t, side)``: positive iff ``eta > t`` (side ``"above"``), ``eta < t`` (``"below"``),
        or always / never (``t`` NaN, side ``"all"`` / ``"none"``)."""
        out = []
        for a1, a0 in zip(self.a1_, self.a0_):
            c = a1 - a0
            if c == 0:
                out.append((math.nan, "all" if a0 < 0 else "none"))
            else:
                out.append((float(-a0 / c), "above" if c < 0 else "below"))
        return out

    def __repr__(self):
        return f"PlugInRule(n_groups={self.a1_.shape[0]}, n_features={self.n_features_in_})"


class PlugInOracle(Oracle):
    """The Bayes rule of the cost-sensitive problem under a class-probability estimate (COCO's oracle).

    Each call takes the counterfactual net coefficients ``u_j^(1)``, ``u_j^(0)``
    that row ``j`` would have with label ``y_j := 1`` and ``y_j := 0``
    (:mod:`rateopt._training._counterfactual`: every atom's subset re-evaluated on
    relabeled data, normalizers ``W(S_a)`` of the real labels). With
    ``eta_j = P(y = 1 | x_j)`` estimated by ``eta_hat``, the expected cost of a
    positive decision is ``eta_j u_j^(1) + (1 - eta_j) u_j^(0)``, and the oracle
    predicts positive exactly where it is negative: the minimizer over *every*
    decision rule of the expected objective when ``eta_hat`` is the true
    conditional probability (and, with ``eta_hat`` the training labels
    themselves, of the sample objective: the sample Bayes rule ``u_j < 0``).

    The returned model is a :class:`PlugInRule`, which predicts on new data: the
    weight ``w_j`` factors out of ``u_j``, so a row's rule depends on its group
    and ``eta`` only -- a per-group threshold on ``eta`` (linear in
    ``logit(eta)`` plus group one-hots) when the atoms are group x label cells.

    Parameters
    ----------
    eta_hat : fitted classifier or callable
        A fitted scikit-learn classifier with ``predict_proba`` (the column of
        class 1 is used), or a callable ``X -> P(y = 1 | x)`` of shape (n,).
        Narasimhan et al. (2019)'s COCO uses a logistic regression fit on the training data.
    group_columns : sequence of int, default=None
        One-hot group indicator columns of ``X`` (as :class:`ThresholdOracle`'s:
        a 1 in column ``c_k`` is group ``k + 1``, none is group 0). Every atom's
        membership must be a function of the row's group and label: the oracle
        checks this on the training rows and refuses the problem otherwise.

    Notes
    -----
    Pitfall: a subset built from a mask *computed from the labels*
    (``ctx.subset(ds.y == 1)``) stays the same under relabeling, so its
    counterfactuals are silently wrong. State label conditions with
    ``ctx.positive()`` / ``ctx.negative()``. (Such a mask is usually caught
    anyway: its memberships are not a function of group and label.)

    One dataset per problem: the rule is one function of ``(group, eta)``,
    while two datasets would give the same row different coefficients.

    References
    ----------
    .. [1] H. Narasimhan. "Learning with Complex Loss Functions and
       Constraints". AISTATS 2018 (COCO).
    .. [2] ``../shared/papers/notes/methods_spec.md`` §1.3 item 4, §A.3.
    """

    returns_estimators = True

    def __init__(self, eta_hat, group_columns=None):
        if not (hasattr(eta_hat, "predict_proba") or callable(eta_hat)):
            raise TypeError("eta_hat must be a fitted classifier with predict_proba or a callable X -> P(y=1|x), "
                            f"got {type(eta_hat).__name__}")
        self.eta_hat = eta_hat
        self.group_columns = None if group_columns is None else _group_columns(group_columns)

    def bind(self, spec, settings):
        if len(spec.blocks) != 1:
            raise ValueError(f"PlugInOracle: the problem has {len(spec.blocks)} datasets; the plug-in rule is one "
                             "function of (group, eta), so state the problem on one dataset")
        blk = spec.blocks[0]
        X = blk.X.data
        d = spec.n_features
        if self.group_columns is not None and max(self.group_columns) >= d:
            raise ValueError(f"PlugInOracle: group_columns {list(self.group_columns)} exceed the problem's {d} "
                             "features")
        rule = PlugInRule(self.eta_hat, self.group_columns, np.zeros(1), np.zeros(1), d)
        g = rule.groups(X)
        cf = counterfactual_memberships(spec)[0]
        n_groups = 1 if self.group_columns is None else len(self.group_columns) + 1
        reps = np.zeros(n_groups, dtype=np.int64)
        for k in range(n_groups):
            rows = np.flatnonzero(g == k)
            if rows.size == 0:
                reps[k] = -1
                continue
            reps[k] = rows[0]
            for M, label in ((cf.M1, 1), (cf.M0, 0)):
                bad = np.flatnonzero(np.any(M[rows] != M[rows[0]], axis=0))
                if bad.size:
                    a = int(blk.atom_ids[bad[0]])
                    raise ValueError(
                        f"PlugInOracle: membership in atom {a} ({spec.atom_contexts[a][0].label!r}) differs between "
                        f"rows of group {k} with label {label}: every atom must be a function of the group "
                        "(group_columns) and the label. A mask computed from the labels gives this: use "
                        "positive()/negative()")
        # Per group, its rows' membership patterns (an absent group: no atom).
        P1 = np.where(reps[:, None] >= 0, cf.M1[np.maximum(reps, 0)], False)
        P0 = np.where(reps[:, None] >= 0, cf.M0[np.maximum(reps, 0)], False)
        inv = cf.inverse_normalizers()
        _probabilities(self.eta_hat, X)  # refuses a bad eta_hat here, before training
        eta_hat, cols = self.eta_hat, self.group_columns

        def best(coef, warm_start=None):
            c = np.asarray(coef, dtype=np.float64)[blk.atom_ids] * inv
            return PlugInRule(eta_hat, cols, P1 @ c, P0 @ c, d)

        return best

    def __repr__(self):
        return f"PlugInOracle({type(self.eta_hat).__name__}, group_columns={self.group_columns})"


# --------------------------------------------------------------------------- net hinge, exactly


class HingeOracle(Oracle):
    """The exact minimizer of the net-hinge proxy of ``coef . p`` plus ``l2/2 ||theta||^2`` (SDCA).

    Each call solves, with :func:`rateopt.core.sdca_two_sided_hinge`,
    ``min_theta (1/n) sum_j [A_j max(0, m + s_j) + B_j max(0, m - s_j)] + (l2/2) ||theta||^2``
    with ``A_j = n max(u_j, 0)``, ``B_j = n max(-u_j, 0)`` for the net per-row
    coefficients ``u`` and the hinge margin ``m``: the net-hinge proxy of the
    combination, up to the constant ``-sum_j max(-u_j, 0)`` (DESIGN.md's
    cost-sensitive oracle; methods_spec §1.3). Consecutive calls warm-start
    from the previous dual solution.

    Parameters
    ----------
    l2 : float, default=None
        The regularization (default: the model's ``l2`` when positive, else
        ``1 / n`` for the problem's ``n`` rows: scikit-learn's ``LinearSVC(C=1)``
        strength, at which SDCA converges in a few thousand epochs; a much
        smaller value, such as the former ``1e-4`` on 700 rows, makes the
        non-smooth problem ill-conditioned and SDCA needs tens of thousands of
        epochs or stops at the cap). SDCA needs it positive.
    bias_scale : float, default=1.0
        The intercept is a regularized constant feature of this value
        (LIBLINEAR's ``bias``); ``0`` fixes the intercept at 0.
    tol : float, default=1e-6
        Relative duality gap at which a solve stops.
    max_epochs : int, default=100000
        Epoch cap of each solve (the solver warns when it stops on it).

    Notes
    -----
    Datasets of a multi-dataset problem are stacked once when the oracle is
    bound (one copy of their features, made per training run).
    """

    reads = frozenset({"margin"})

    def __init__(self, l2=None, bias_scale=1.0, tol=1e-6, max_epochs=100_000):
        if l2 is not None and not (isinstance(l2, (int, float)) and l2 > 0 and np.isfinite(l2)):
            raise ValueError(f"l2 must be a positive number or None, got {l2!r}")
        if not (isinstance(bias_scale, (int, float)) and bias_scale >= 0 and np.isfinite(bias_scale)):
            raise ValueError(f"bias_scale must be a non-negative number, got {bias_scale!r}")
        if not (isinstance(tol, (int, float)) and tol > 0):
            raise ValueError(f"tol must be positive, got {tol!r}")
        if isinstance(max_epochs, bool) or not isinstance(max_epochs, (int, np.integer)) or max_epochs < 1:
            raise ValueError(f"max_epochs must be an integer >= 1, got {max_epochs!r}")
        self.l2, self.bias_scale, self.tol, self.max_epochs = l2, float(bias_scale), float(tol), int(max_epochs)

    def bind(self, spec, settings):
        blocks = [b.X.data for b in spec.blocks]
        if len(blocks) == 1:
            X = blocks[0]
        else:
            X = sp.vstack(blocks, format="csr") if any(sp.issparse(b) for b in blocks) else np.vstack(blocks)
        n = X.shape[0]
        lam = self.l2 if self.l2 is not None else (settings.l2 if settings.l2 > 0 else 1.0 / max(n, 1))
        margin = settings.margin
        state = {"xi": None}
        bias_mode = "regularized" if self.bias_scale > 0 else "fixed"

        def best(coef, warm_start=None):
            u = np.concatenate(net_coefficients(spec, coef))
            A, B = n * np.maximum(u, 0.0), n * np.maximum(-u, 0.0)
            res = core.sdca_two_sided_hinge(X, A, B, lam=lam, tau=margin, bias=bias_mode,
                                            bias_scale=self.bias_scale or 1.0, xi0=state["xi"], tol=self.tol,
                                            max_epochs=self.max_epochs, random_state=0)
            state["xi"] = res.xi
            return res.theta, float(res.bias)

        return best

    def __repr__(self):
        return f"HingeOracle(l2={self.l2}, bias_scale={self.bias_scale}, tol={self.tol})"


# --------------------------------------------------------------------------- any scikit-learn classifier


def _is_classifier(estimator):
    """scikit-learn's tags say a classifier; without tags, it has ``predict_proba`` or ``decision_function``."""
    from sklearn.utils import get_tags  # lazy: `import rateopt` loads no scikit-learn

    try:
        kind = get_tags(estimator).estimator_type
    except (AttributeError, TypeError):  # no __sklearn_tags__: a duck-typed model
        kind = None
    if kind is not None:
        return kind == "classifier"
    return hasattr(estimator, "predict_proba") or hasattr(estimator, "decision_function")


class EstimatorOracle(Oracle):
    """Fits a scikit-learn classifier on the cost-sensitive problem of each round.

    The reduction: minimizing ``sum_j u_j 1[h(x_j) = 1]`` over classifiers ``h``
    is weighted classification with labels ``z_j = 1[u_j < 0]`` (a row whose
    net coefficient is negative lowers the objective when predicted positive)
    and weights ``|u_j|`` (passed rescaled to average 1, which leaves the
    weighted problem's minimizers unchanged and keeps estimators' fixed
    penalties meaningful): the weighted error is ``sum_j u_j 1[h(x_j) = 1]`` plus
    the constant ``sum_j max(-u_j, 0)``. So each round fits
    ``clone(estimator)`` with ``sample_weight=|u|`` on every dataset of the
    problem stacked (rows with ``u_j = 0`` are dropped). The result is a fitted
    classifier, not a linear model: the training driver measures its rates from
    its predictions, and the solutions are :class:`~rateopt.EstimatorMixture` s
    (or the estimator itself for ``"best"``/``"last"``).

    Parameters
    ----------
    estimator : scikit-learn classifier
        Unfitted; its ``fit`` must take ``sample_weight``. A classifier by
        scikit-learn's tags (:func:`sklearn.base.is_classifier`), or, without
        tags, a model with ``predict_proba`` or ``decision_function``:
        regressors and other models are refused.

    Raises
    ------
    TypeError
        If ``estimator`` is not a classifier or its ``fit`` takes no ``sample_weight``.

    Warns
    -----
    UserWarning
        When a fitted model does worse on its weighted problem than both
        constant classifiers (the estimator may ignore ``sample_weight``).

    Notes
    -----
    This is fairlearn's reduction (Agarwal et al. 2018) under rateopt's games:
    with ``method="oracle-proxy"`` the multipliers minimize swap regret and the
    m-stochastic shrink keeps at most m + 1 fitted models.
    """

    returns_estimators = True

    def __init__(self, estimator):
        from sklearn.utils.validation import has_fit_parameter  # lazy: `import rateopt` loads no scikit-learn

        if not (hasattr(estimator, "fit") and hasattr(estimator, "predict")) or not _is_classifier(estimator):
            raise TypeError(f"estimator must be a scikit-learn classifier, got {type(estimator).__name__}")
        if not has_fit_parameter(estimator, "sample_weight"):
            raise TypeError(f"{type(estimator).__name__}.fit takes no sample_weight: the cost-sensitive reduction "
                            "needs it")
        self.estimator = estimator

    def bind(self, spec, settings):

        blocks = [b.X.data for b in spec.blocks]
        X = sp.vstack(blocks, format="csr") if any(sp.issparse(b) for b in blocks) else np.vstack(blocks)
        d = spec.n_features
        warned = []
        from sklearn.base import clone  # lazy: `import rateopt` loads no scikit-learn

        def best(coef, warm_start=None):
            u = np.concatenate(net_coefficients(spec, coef))
            keep = u != 0
            z = (u < 0).astype(np.int64)
            if not np.any(z[keep]) or np.all(z[keep]):  # one class: a constant is optimal
                return ConstantClassifier(int(np.any(z[keep])), d)
            # The best weighted classifier does not depend on the weights' scale, but estimators that weigh
            # their loss against a fixed penalty (C, min_hessian_to_split) do: weights average 1, as fairlearn's.
            weights = np.abs(u[keep])
            model = clone(self.estimator).fit(X[keep], z[keep], sample_weight=weights * (weights.size / weights.sum()))
            value = float(u @ positive_decisions(model, X))
            if value > min(0.0, float(u.sum())) + 1e-12 * np.abs(u).sum() and not warned:
                warned.append(True)
                warnings.warn(f"{type(self.estimator).__name__} did worse on a weighted problem than a constant "
                              "classifier: it may ignore sample_weight", UserWarning, stacklevel=2)
            return model

        return best

    def __repr__(self):
        return f"EstimatorOracle({type(self.estimator).__name__})"
