"""Seed 004: dataset constraints with ramp losses, by majorization-minimization (``rateopt.ramp_mm``).

Problem 2 of Goh et al. (2016) replaces every indicator ``1[s >= 0]`` of a
compiled problem by the ramp ``rho(s) = clip(1/2 + s, 0, 1)``:

    min  c0 . r + const0 + R(theta, b)    s.t.  C r - kappa <= 0,

with ``r`` the per-atom ramp rates (:func:`rateopt.core.ramp_rates`) and
``R = lam/2 (||theta||^2 [+ (b / bias_scale)^2])`` the regularizer. Each
function ``i`` (row 0 the objective) is a per-row sum
``sum_j [P_ij rho(s_j) + N_ij rho(-s_j)] - gamma_i`` with ``P, N >= 0`` and
``P - N = U = V [c0; C]^T`` (methods_spec.md §C.1): the **net** rule
``P = max(U, 0)``, ``N = max(-U, 0)`` (tightest, the default) or the paper's
**per-atom** rule ``P = V max([c0; C], 0)^T``, ``N = V max(-[c0; C], 0)^T``.
Both give the same Problem-2 values (``rho(-s) = 1 - rho(s)``); they differ in
the majorizer.

One MM step (Algorithm 1) at the anchor scores ``s'``:

1. masks ``s'_j <= 1/2`` (row keeps ``max(0, 1/2 + s)``, else the constant 1)
   and ``s'_j >= -1/2`` (``max(0, 1/2 - s)``, else 1): the majorizer ``M_i``,
   convex, ``>= `` Problem 2's values, equal at the anchor; the saturated
   rows' constants move to ``gamma_check``;
2. multipliers ``v in [0, V]^m`` by Algorithm 2's cutting plane on the concave
   dual ``F(v) = min Psi(., v)``: each cut is one weighted two-sided hinge SVM
   solved exactly by :func:`rateopt.core.sdca_two_sided_hinge` (margin 1/2,
   ``A_j = n 1[s'_j <= 1/2] sum_i v_i P_ij``, ``B_j = n 1[s'_j >= -1/2]
   sum_i v_i N_ij``), whose primal value at the solution gives the cut and
   whose dual value a lower bound; the next ``v`` is the exact centre of mass
   of the 2-D localization polygon for m = 1 and the LP maximizer of the cut
   model (HiGHS) for m > 1; with ``bias="unregularized"`` each such SVM is
   itself Algorithm 3, a cutting plane over the free intercept ``b`` whose
   cuts are fixed-bias SVMs' dual values (linear in ``b``);
3. the new iterate is the best **convex combination** of the anchor and the
   cutting plane's SVM solutions for Problem 3 (an LP over the columns, as in
   Dantzig-Wolfe primal recovery): Problem 3 is convex, so the combination's
   majorized values are at most the LP's. The anchor is a column, so the
   step never increases the Problem-2 objective and keeps Problem-2
   feasibility (a constraint's violation never exceeds the anchor's).

References
----------
.. [1] G. Goh, A. Cotter, M. Gupta, M. Friedlander. "Satisfying Real-world
   Goals with Dataset Constraints". NIPS 2016.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from .._predictors._linear import LinearClassifier, RampClassifier
from .._solutions import _shrink
from .._solutions._result import RateMap, TrainResult
from .._train import prepare_specs, resolve_model
from .._training._row_coefficients import problem_row_coefficients, row_coefficients
from .._utils._archive import damaged, real_array
from ..core import FeatureMatrix, ramp_rates, sdca_two_sided_hinge
from ..exceptions import RateoptError

__all__ = ["ramp_mm", "RampMMResult", "RAMP_RULES", "BIAS_MODES", "bias_cutting_plane"]

RAMP_RULES = ("net", "atom")
"""How the majorizer splits each function's per-row coefficients: ``"net"`` or ``"atom"``."""

BIAS_MODES = ("regularized", "fixed", "unregularized")
"""How :func:`ramp_mm` treats the intercept (``"unregularized"``: Algorithm 3's cutting plane over ``b``)."""


def _rho(s):
    return np.clip(0.5 + s, 0.0, 1.0)


# --------------------------------------------------------------------------- the data side


class _RampData:
    """Stacked rows of every dataset, the per-row coefficient pairs ``(P, N)`` and ``gamma``."""

    def __init__(self, spec, rule, lam, bias_mode, bias_scale):
        if rule not in RAMP_RULES:
            raise ValueError(f"rule must be one of {RAMP_RULES}, got {rule!r}")
        self.spec = spec
        rows = np.vstack([spec.c0[None, :], spec.C])  # (m + 1, n_atoms)
        if rule == "net":
            U = problem_row_coefficients(spec, rows)
            P = [np.maximum(U[b.name], 0.0) for b in spec.blocks]
            N = [np.maximum(-U[b.name], 0.0) for b in spec.blocks]
        else:
            P = [row_coefficients(b.atoms, np.maximum(rows, 0.0)[:, b.atom_ids]) for b in spec.blocks]
            N = [row_coefficients(b.atoms, np.maximum(-rows, 0.0)[:, b.atom_ids]) for b in spec.blocks]
        self.P = np.ascontiguousarray(np.vstack(P))  # (n, m + 1)
        self.N = np.ascontiguousarray(np.vstack(N))
        self.gamma = np.concatenate([[-spec.const0], spec.kappa]) + self.N.sum(axis=0)
        datas = [b.X.data for b in spec.blocks]
        if len(datas) == 1:
            self.X = spec.blocks[0].X
        elif any(sp.issparse(d) for d in datas):
            self.X = FeatureMatrix(sp.vstack([sp.csr_matrix(d) for d in datas], format="csr"))
        else:
            self.X = FeatureMatrix(np.vstack(datas))
        self.n = self.X.n_samples
        self.m = spec.n_constraints
        Xd = self.X.data
        sq = Xd.multiply(Xd).sum(axis=1) if sp.issparse(Xd) else np.einsum("ij,ij->i", Xd, Xd)
        self.row_norm_max = float(np.sqrt(np.max(np.asarray(sq, dtype=np.float64)))) if self.n else 0.0
        self.lam, self.bias_mode, self.bias_scale = lam, bias_mode, bias_scale

    def scores(self, theta, bias):
        return np.asarray(self.X.data @ theta, dtype=np.float64).reshape(-1) + bias

    def regularizer(self, theta, bias):
        r = float(theta @ theta)
        if self.bias_mode == "regularized":
            r += (bias / self.bias_scale) ** 2
        return 0.5 * self.lam * r

    def problem2(self, s):
        """Problem-2 values of every function (objective first, without the regularizer)."""
        return self.P.T @ _rho(s) + self.N.T @ _rho(-s) - self.gamma

    def majorized(self, s, anchor):
        """Majorizer values ``M_i`` at scores ``s`` for the anchor scores (objective first)."""
        mp = np.where(anchor <= 0.5, np.maximum(0.0, 0.5 + s), 1.0)
        mn = np.where(anchor >= -0.5, np.maximum(0.0, 0.5 - s), 1.0)
        return self.P.T @ mp + self.N.T @ mn - self.gamma


@dataclasses.dataclass
class _Candidate:
    theta: np.ndarray
    bias: float
    f: float  # majorized objective + regularizer
    g: np.ndarray  # majorized constraint values


class _Step:
    """One MM step at an anchor: the masks, ``gamma_check`` and the weighted SVMs for given multipliers."""

    def __init__(self, data, anchor_scores, inner_tol, max_epochs, random_state, max_bias_cuts=60):
        self.d = data
        self.s0 = anchor_scores
        self.pmask = anchor_scores <= 0.5
        self.nmask = anchor_scores >= -0.5
        d = data
        self.gamma_check = d.gamma - d.P[~self.pmask].sum(axis=0) - d.N[~self.nmask].sum(axis=0)
        self.inner_tol, self.max_epochs, self.random_state = inner_tol, max_epochs, random_state
        self.max_bias_cuts = max_bias_cuts
        self.xi = None
        self.n_solves = 0
        self.n_inexact = 0
        self.max_gap = 0.0
        self.n_bias_solves = 0  # Algorithm 3's fixed-bias SVMs (bias="unregularized")
        self.bias = 0.0  # the last bias of Algorithm 3 (its next first query)

    def candidate(self, theta, bias):
        s = self.d.scores(theta, bias)
        M = self.d.majorized(s, self.s0)
        return _Candidate(np.array(theta, dtype=np.float64), float(bias), float(M[0] + self.d.regularizer(theta, bias)),
                          M[1:].copy())

    def solve(self, v_full):
        """Minimize ``Psi(., v)`` exactly; returns the candidate and the dual lower bound on ``F(v)``."""
        d = self.d
        A = d.n * np.where(self.pmask, d.P @ v_full, 0.0)
        B = d.n * np.where(self.nmask, d.N @ v_full, 0.0)
        if d.bias_mode == "unregularized":
            return self._solve_free_bias(A, B, v_full)
        regularized = d.bias_mode == "regularized"
        with warnings.catch_warnings():
            # An inexact solve is counted, not raised: its dual value is still a valid lower bound,
            # and the step's primal recovery keeps descent and feasibility whatever the candidates.
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = sdca_two_sided_hinge(d.X, A, B, lam=d.lam, tau=0.5, bias="regularized" if regularized else "fixed",
                                       bias_scale=d.bias_scale, xi0=self.xi, tol=self.inner_tol,
                                       max_epochs=self.max_epochs, random_state=self.random_state)
        self.n_inexact += int(not res.converged)
        self.xi = res.xi
        self.n_solves += 1
        self.max_gap = max(self.max_gap, res.gap)
        const = float(v_full @ self.gamma_check)
        return self.candidate(res.theta, res.bias), res.dual - const, res

    def _fixed_bias_svm(self, A, B, b):
        d = self.d
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = sdca_two_sided_hinge(d.X, A, B, lam=d.lam, tau=0.5, beta=b, bias="fixed", xi0=self.xi,
                                       tol=self.inner_tol, max_epochs=self.max_epochs, random_state=self.random_state)
        self.n_inexact += int(not res.converged)
        self.xi = res.xi
        self.n_bias_solves += 1
        self.max_gap = max(self.max_gap, res.gap)
        return res

    def _solve_free_bias(self, A, B, v_full):
        """Algorithm 3: the unregularized bias by a cutting plane over ``b``, one fixed-bias SVM per cut."""
        n = self.d.n
        # An optimal b lies in [-R, R]: lam/2 ||theta*||^2 <= P(0, 0) = (1/n) sum_j tau (A_j + B_j), and
        # beyond tau + max_j |x_j . theta*| every row is on one side of both hinges (G is monotone there).
        R = 0.5 + self.d.row_norm_max * math.sqrt(2.0 * 0.5 * float(np.sum(A + B)) / n / self.d.lam)
        solves = []

        def solve_at(b):
            res = self._fixed_bias_svm(A, B, b)
            solves.append(res)
            return res.primal, res.dual, res.sum_xi / n, len(solves) - 1

        out = bias_cutting_plane(solve_at, R, tol=4.0 * self.inner_tol, max_cuts=self.max_bias_cuts,
                                 b_start=float(np.clip(self.bias, -R, R)))
        self.n_inexact += int(not out["converged"])
        self.n_solves += 1
        best = solves[out["best"]]
        self.bias = float(best.bias)
        const = float(v_full @ self.gamma_check)
        return self.candidate(best.theta, best.bias), out["L"] - const, _FreeBiasSolve(out["U"] - out["L"], out)


@dataclasses.dataclass
class _FreeBiasSolve:
    gap: float  # U - L of Algorithm 3 (the bound on F(v)'s error)
    info: dict


# --------------------------------------------------------------------------- Algorithm 3: the bias cutting plane


def _min_of_max_lines(lines, R):
    """``min_{|b| <= R} max_s (a_s + g_s b)`` and a minimizer, exactly (breakpoints and ends)."""
    a = np.array([ln[0] for ln in lines])
    g = np.array([ln[1] for ln in lines])
    cand = [-R, R]
    for i in range(len(lines)):
        for j in range(i + 1, len(lines)):
            if g[i] != g[j]:
                b = (a[j] - a[i]) / (g[i] - g[j])
                if -R < b < R:
                    cand.append(b)
    cand = np.array(cand)
    vals = np.max(a[:, None] + g[:, None] * cand[None, :], axis=0)
    k = int(np.argmin(vals))
    return float(vals[k]), float(cand[k])


def bias_cutting_plane(solve_at, R, *, tol=1e-8, max_cuts=60, b_start=0.0):
    """Seed 004 Algorithm 3: minimize the convex ``G(b) = min_w Psi(w, b)`` over ``[-R, R]``.

    Each query solves the SVM at a fixed bias; its dual value is a linear
    function of ``b`` (the slope is ``sum_j xi_j / n``) that lower-bounds
    ``G`` everywhere, so the cuts build a convex lower model ``h(b) = max_s
    (l_s + g_s (b - b_s))``; ``U`` is the best primal value found and
    ``L = min_{[-R, R]} h``. The next query is the centre of mass of the
    localization polygon ``{(b, z): |b| <= R, h(b) <= z <= U}`` (Lemma 7), or
    the minimizer of ``h`` when the polygon is too thin for floating point.

    Parameters
    ----------
    solve_at : callable
        ``solve_at(b) -> (primal, dual, slope, payload)`` with
        ``dual + slope (b' - b) <= G(b')`` for every ``b'`` and
        ``primal >= G(b)`` the value of a model at bias ``b``.
    R : float
        The interval ``[-R, R]`` (it must hold a minimizer for ``L`` to bound
        ``min G``).
    tol : float, default=1e-8
        Stop when ``U - L <= tol * max(1, |U|)``.
    max_cuts : int, default=60
        At most this many queries.
    b_start : float, default=0.0
        The first query.

    Returns
    -------
    dict
        ``best`` (the payload of the best primal value), ``b`` (its bias),
        ``U``, ``L``, the histories ``U_hist``/``L_hist``, the queries,
        ``n_calls`` and ``converged``.
    """
    lines, queries, U_hist, L_hist = [], [], [], []
    U, best, best_b, L = math.inf, None, None, -math.inf
    b = float(b_start)
    for _ in range(max_cuts):
        primal, dual, slope, payload = solve_at(b)
        queries.append(b)
        lines.append((dual - slope * b, slope))
        if primal < U:
            U, best, best_b = float(primal), payload, b
        L, b_min = _min_of_max_lines(lines, R)
        U_hist.append(U)
        L_hist.append(L)
        if U - L <= tol * max(1.0, abs(U)):
            break
        # The polygon in (b, -z): -U <= -z <= min_s (-a_s - g_s b), clipped like Algorithm 2's (shifted to [0, 2R]).
        cuts = [(-(a_ - g_ * R), -g_) for a_, g_ in lines]  # -a - g (v - R), v = b + R
        _, c = polygon_centroid(localization_polygon(cuts, 2.0 * R, -U, -L))
        ok = c is not None and L < -c[1] < U and -R < c[0] - R < R and (c[0] - R) not in queries
        b = c[0] - R if ok else b_min
    return {"best": best, "b": best_b, "U": U, "L": L, "U_hist": U_hist, "L_hist": L_hist, "queries": queries,
            "n_calls": len(queries), "converged": bool(U - L <= tol * max(1.0, abs(U)))}


# --------------------------------------------------------------------------- Algorithm 2: the cutting plane


def _cut_model_max(cuts, V):
    """``max_{0 <= v <= V} min_s (f_s + g_s . v)`` and its maximizer (an LP through HiGHS)."""
    from scipy.optimize import linprog

    F = np.array([c[0] for c in cuts])
    G = np.array([c[1] for c in cuts]).reshape(len(cuts), V.shape[0])
    m = V.shape[0]
    # variables (v, z): max z s.t. z - g_s . v <= f_s
    cost = np.zeros(m + 1)
    cost[-1] = -1.0
    A_ub = np.hstack([-G, np.ones((len(cuts), 1))])
    bounds = [(0.0, float(Vi)) for Vi in V] + [(None, None)]
    res = linprog(cost, A_ub=A_ub, b_ub=F, bounds=bounds, method="highs")
    if res.status != 0:  # pragma: no cover - the LP is feasible and bounded (v in a box)
        raise RuntimeError(f"HiGHS failed on the cutting-plane LP: {res.message}")
    return float(-res.fun), np.clip(res.x[:m], 0.0, V)


def _clip_polygon(poly, a, b):
    """Clip a convex polygon (list of (v, z)) to the half-plane ``z <= a + b v`` (Sutherland-Hodgman)."""
    out = []
    n = len(poly)
    for k in range(n):
        p, q = poly[k], poly[(k + 1) % n]
        fp, fq = a + b * p[0] - p[1], a + b * q[0] - q[1]
        if fp >= 0:
            out.append(p)
        if (fp >= 0) != (fq >= 0):
            t = fp / (fp - fq)
            out.append((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])))
    return out


def polygon_centroid(poly):
    """Area and centroid ``(v, z)`` of a simple polygon by the shoelace formula."""
    if len(poly) < 3:
        return 0.0, None
    P = np.asarray(poly, dtype=np.float64)
    origin = P.mean(axis=0)  # local coordinates: the cross products of a thin sliver would cancel
    x, y = P[:, 0] - origin[0], P[:, 1] - origin[1]
    x1, y1 = np.roll(x, -1), np.roll(y, -1)
    cross = x * y1 - x1 * y
    area = 0.5 * cross.sum()
    if abs(area) <= 1e-300:
        return 0.0, None
    cx = ((x + x1) * cross).sum() / (6.0 * area) + origin[0]
    cy = ((y + y1) * cross).sum() / (6.0 * area) + origin[1]
    return abs(area), (float(cx), float(cy))


def localization_polygon(cuts, V, L, U):
    """``{(v, z): 0 <= v <= V, L <= z <= min_s (f_s + g_s v)}`` for m = 1, as a vertex list."""
    poly = [(0.0, L), (V, L), (V, U), (0.0, U)]
    for f, g in cuts:
        poly = _clip_polygon(poly, float(f), float(np.asarray(g).reshape(-1)[0]))
        if not poly:
            break
    return poly


def cutting_plane(oracle, cuts, V, *, tol=1e-7, max_cuts=60, chooser=None, v_start=None):
    """Seed 004 Algorithm 2: maximize the concave ``F(v) = min_w Psi(w, v)`` over ``[0, V]^m``.

    Parameters
    ----------
    oracle : callable
        ``oracle(v) -> (f, g, lower)``: a minimizer's cut ``Psi(w, .) = f + g . v``
        (exact: ``Psi`` is linear in ``v``) and a lower bound ``lower <= F(v)``.
    cuts : list of (float, ndarray)
        Valid cuts known up front (``F(v) <= f + g . v`` for all v), e.g. the anchor's.
    V : ndarray of shape (m,)
        The box.
    tol : float
        Stop when ``U - L <= tol * max(1, |L|)``.
    max_cuts : int
        At most this many oracle calls.
    chooser : {"centroid", "max"}, default=None
        None: the centre of mass for m = 1, the maximizer of the cut model otherwise.
    v_start : ndarray, default=None
        The first query (default 0).

    Returns
    -------
    dict
        ``v`` (the query with the best lower bound), ``L``, ``U``, the histories
        ``L_hist``/``U_hist`` (before each query, then the final pair), the
        queries and ``n_calls``.
    """
    m = V.shape[0]
    chooser = chooser or ("centroid" if m == 1 else "max")
    cuts = list(cuts)
    L, best_v = -math.inf, None
    L_hist, U_hist, queries = [], [], []
    v = np.zeros(m) if v_start is None else np.asarray(v_start, dtype=np.float64)
    for _ in range(max_cuts):
        f, g, lower = oracle(v)
        queries.append(v.copy())
        cuts.append((f, np.asarray(g, dtype=np.float64)))
        if lower > L:
            L, best_v = lower, v.copy()
        U, v_max = _cut_model_max(cuts, V)
        L_hist.append(L)
        U_hist.append(U)
        if U - L <= tol * max(1.0, abs(L)):
            break
        if chooser == "centroid":
            _, c = polygon_centroid(localization_polygon(cuts, float(V[0]), L, U))
            # A sliver too thin for floating point (or a centroid rounded out of it): the max chooser.
            ok = c is not None and L < c[1] < U and not any(np.array_equal([c[0]], q) for q in queries)
            v = np.array([c[0]]) if ok else v_max
        else:
            v = v_max
    return {"v": best_v, "L": L, "U": U_hist[-1], "L_hist": L_hist, "U_hist": U_hist, "queries": queries,
            "n_calls": len(queries)}


# --------------------------------------------------------------------------- the result


class RampMMResult(TrainResult):
    """The outcome of :func:`ramp_mm`: a :class:`~rateopt.TrainResult` of the MM iterates plus their ramp values.

    Every recorded iterate is an MM iterate (the start first). The inherited
    records (``atom_rates``, ``objectives``, ``constraints``) are the 0-1
    values of the deterministic rule ``1[s >= 0]``; the ``ramp_*`` records are
    Problem 2's values, i.e. the exact expected values of the randomized rule
    ``P(+|x) = clip(1/2 + s, 0, 1)``.

    Parameters
    ----------
    ramp_atom_rates : ndarray of shape (n_recorded, n_atoms)
        The per-atom ramp rates of every iterate.
    regularizers : ndarray of shape (n_recorded,)
        ``R(theta, b)`` of every iterate.
    info : list of dict
        Per MM step: cutting-plane calls, bounds, the largest inner gap, time.
    **kwargs
        The :class:`~rateopt.TrainResult` fields.

    Attributes
    ----------
    ramp_atom_rates : ndarray of shape (n_recorded, n_atoms)
        Per-atom ramp rates ``r_p``.
    ramp_objectives : ndarray of shape (n_recorded,)
        Problem-2 objective ``c0 . r + const0`` (without the regularizer).
    ramp_constraints : ndarray of shape (n_recorded, n_constraints)
        Problem-2 constraint values ``C r - kappa`` (<= 0 holds).
    regularizers : ndarray of shape (n_recorded,)
        The regularizer; ``ramp_objectives + regularizers`` is what MM descends.
    info : list of dict
        Per MM step diagnostics.
    """

    def __init__(self, *, ramp_atom_rates, regularizers, info, **kwargs):
        super().__init__(**kwargs)
        self.ramp_atom_rates = ramp_atom_rates
        self.ramp_objectives = self.rate_map.objectives(ramp_atom_rates)
        self.ramp_constraints = self.rate_map.constraints(ramp_atom_rates)
        self.regularizers = np.asarray(regularizers, dtype=np.float64)
        self.info = info

    def classifier(self, kind="deterministic", iterate=-1):
        """The deterministic or the randomized classifier of an MM iterate.

        Parameters
        ----------
        kind : {"deterministic", "randomized"}, default="deterministic"
            ``1[s >= 0]`` (a :class:`~rateopt.LinearClassifier`), or
            ``P(+|x) = clip(1/2 + s, 0, 1)`` (a :class:`~rateopt.RampClassifier`,
            whose expected training rates are the ``ramp_*`` records).
        iterate : int, default=-1
            Which recorded iterate (default the last MM iterate).

        Returns
        -------
        LinearClassifier or RampClassifier
            The classifier.
        """
        w, b = self.weights[iterate], float(self.biases[iterate])
        if kind == "deterministic":
            return LinearClassifier(w, b, feature_map=self.feature_map)
        if kind == "randomized":
            return RampClassifier(w, b, feature_map=self.feature_map)
        raise ValueError(f"kind must be 'deterministic' or 'randomized', got {kind!r}")

    def save(self, path):
        """Save to ``path`` with the ramp records; :func:`rateopt.load` gives back a :class:`RampMMResult`.

        The file is :meth:`TrainResult.save`'s ``.npz`` (arrays plus JSON
        metadata, no pickle) with the metadata kind ``"ramp-mm-result"``, the
        arrays ``ramp_atom_rates`` and ``regularizers``, and ``info`` in the
        metadata.

        Parameters
        ----------
        path : str or os.PathLike
            Where to write.
        """
        super().save(path)

    def _payload(self):
        meta, arrays = super()._payload()
        meta = dict(meta, kind=RAMP_RESULT_KIND, info=_plain(self.info))
        arrays = dict(arrays, ramp_atom_rates=self.ramp_atom_rates, regularizers=self.regularizers)
        return meta, arrays

    def __repr__(self):
        return (f"RampMMResult(n_iter={self.n_iter}, n_recorded={self.weights.shape[0]}, "
                f"n_constraints={self.constraints.shape[1]})")


RAMP_RESULT_KIND = "ramp-mm-result"


def _plain(obj):
    """``obj`` with NumPy scalars and arrays turned into Python numbers and lists (for JSON)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    return obj


def ramp_result_from_file(fields, meta, arrays, path):
    """A :class:`RampMMResult` from a loaded archive: the :class:`TrainResult` fields plus the ramp records."""
    T, n_atoms = fields["atom_rates"].shape
    R = real_array(arrays, "ramp_atom_rates", 2, path)
    if R.shape != (T, n_atoms):
        raise damaged(path, "ramp_atom_rates", f"has shape {R.shape}, expected {(T, n_atoms)}")
    reg = real_array(arrays, "regularizers", 1, path)
    if reg.shape != (T,):
        raise damaged(path, "regularizers", f"has shape {reg.shape}, expected ({T},)")
    info = meta.get("info")
    if not isinstance(info, list) or not all(isinstance(i, dict) for i in info):
        raise damaged(path, "metadata.info", f"is {info!r}, expected a list of dicts (one per MM step)")
    return RampMMResult(ramp_atom_rates=R, regularizers=reg, info=info, **fields)


# --------------------------------------------------------------------------- the driver


def _ramp_atom_rates(spec, theta, bias, n_threads):
    r = np.zeros(spec.n_atoms)
    z = np.zeros(spec.n_atoms)
    for blk in spec.blocks:
        res = ramp_rates(blk.X, theta, bias, blk.atoms, n_threads=n_threads)
        r[blk.atom_ids] = res.ramp_pos
        z[blk.atom_ids] = res.rates
    return r, z


def _default_box(data):
    """``V_i = 1e3 * sum_j |u_0j| / sum_j |u_ij|``: multipliers up to 1000x the objective's weight scale."""
    w = (data.P + data.N).sum(axis=0)
    w0 = w[0] if w[0] > 0 else 1.0
    return 1e3 * w0 / np.maximum(w[1:], 1e-300)


def _feasible_start(data, step_kwargs, feas_tol, names):
    """A Problem-2 feasible ``(theta, bias)``: ``w = 0``, else a bias/scale search, else a phase-1 MM."""
    d = data
    theta0 = np.zeros(d.X.n_features)

    def worst(theta, bias):
        g = d.problem2(d.scores(theta, bias))[1:]
        return float(g.max()) if g.size else -math.inf, g

    w0, g0 = worst(theta0, 0.0)
    if w0 <= feas_tol:
        return theta0, 0.0, "zero"
    # Bias-shifted constant and unconstrained fits: the randomized rule's rates are then
    # constants (w = 0) or follow the unconstrained scores, shifted and scaled.
    step = _Step(d, np.zeros(d.n), **step_kwargs)
    unc, _, _ = step.solve(np.concatenate([[1.0], np.zeros(d.m)]))
    s_unc = d.scores(unc.theta, 0.0)
    best = (w0, theta0, 0.0)
    shifts = np.linspace(-0.5, 0.5, 41)
    for alpha in (0.0, 0.25, 0.5, 1.0, 2.0, 4.0):
        centre = -alpha * np.quantile(s_unc, np.linspace(0.02, 0.98, 25)) if alpha else [0.0]
        for c in centre:
            for sh in shifts:
                b = float(c + sh)
                val, _ = worst(alpha * unc.theta, b)
                if val < best[0]:
                    best = (val, alpha * unc.theta, b)
    if best[0] <= feas_tol:
        return np.array(best[1]), best[2], "shifted"
    # Phase 1: MM steps on the Hedge-weighted sum of the constraints (min_w max_i g_i = min_w max_{v in simplex}).
    theta, bias = np.array(best[1]), best[2]
    v = np.full(d.m, 1.0 / d.m)
    scale = 1.0 / np.maximum((d.P + d.N).sum(axis=0)[1:], 1e-300)
    for _ in range(30):
        anchor = _Step(d, d.scores(theta, bias), **step_kwargs)
        cand, _, _ = anchor.solve(np.concatenate([[0.0], v * scale]))
        val, g = worst(cand.theta, cand.bias)
        if val < best[0]:
            best = (val, cand.theta, cand.bias)
            theta, bias = cand.theta, cand.bias
        if best[0] <= feas_tol:
            return np.array(best[1]), best[2], "phase-1"
        v = v * np.exp(5.0 * np.clip(g / max(abs(val), 1e-12), -1, 1))
        v /= v.sum()
    _, g = worst(best[1], best[2])
    bad = [f"{names[i]} ({g[i]:+.4g})" for i in np.flatnonzero(g > feas_tol)]
    raise RateoptError("ramp_mm found no Problem-2 feasible start (w = 0, bias-shifted and scaled unconstrained fits, "
                       f"a phase-1 MM on max_i g_i): the ramp constraints {', '.join(bad)} stay violated; relax them "
                       "or pass start=(theta, bias)")


def ramp_mm(problem, model=None, *, rule="net", multipliers=None, max_iter=10, tol=1e-6, max_cuts=60,
            cut_tol=1e-7, multiplier_box=None, lam=None, bias="regularized", bias_scale=1.0, inner_tol=1e-8,
            max_epochs=10_000, start=None, feas_tol=1e-9, n_threads=None, random_state=0, callback=None):
    """Train a linear or kernel model under ramp-loss dataset constraints by MM (seed 004).

    Solves Problem 2 of Goh et al. (2016), the compiled problem with every
    indicator replaced by the ramp ``rho(s) = clip(1/2 + s, 0, 1)``, plus the
    L2 regularizer, from a feasible start by majorization-minimization: every
    step minimizes the convex majorizer at the current iterate (Problem 3)
    with the multipliers of Algorithm 2's cutting plane and an exact weighted
    SVM per cut. See the module notes for the step.

    Parameters
    ----------
    problem : Problem or GameSpec
        Objective and constraints (affine in the rates; metrics are refused).
    model : LinearModel or KernelModel, default=None
        The model (default ``LinearModel()``); a kernel model trains on its
        Nystroem features. ``model.l2`` is ``lam`` unless ``lam`` is given.
    rule : {"net", "atom"}, default="net"
        The majorizer's per-row split of each function: the tight
        per-constraint net rule, or the paper's per-atom rule.
    multipliers : array-like of shape (n_constraints,), default=None
        None: the constrained MM (cutting-plane multipliers every step). Given:
        MM on the fixed Lagrangian ``g0 + R + sum_i v_i g_i`` (no feasibility
        guarantee; each step solves one SVM).
    max_iter : int, default=10
        At most this many MM steps (the paper: 5 to 10).
    tol : float, default=1e-6
        Stop when a step lowers the Problem-2 objective plus regularizer by
        less than ``tol * max(1, |value|)``.
    max_cuts : int, default=60
        At most this many SVM solves per step's cutting plane.
    cut_tol : float, default=1e-7
        The cutting plane stops at ``U - L <= cut_tol * max(1, |L|)``.
    multiplier_box : float or array-like of shape (n_constraints,), default=None
        ``V``: multipliers lie in ``[0, V]``. None: ``1e3 * sum_j |u_0j| /
        sum_j |u_ij|`` per constraint (a thousand times the ratio of the
        objective's to the constraint's total row weight).
    lam : float, default=None
        L2 strength (> 0). None: ``model.l2`` if a positive number, else (0 or
        ``"auto"``) ``2 / n`` (n the rows of all datasets: LIBLINEAR's ``C = 1``
        on ``f~ = 2 f``, the paper's Adult setting).
    bias : {"regularized", "fixed", "unregularized"}, default="regularized"
        ``"regularized"``: the intercept is the weight of a constant feature
        ``bias_scale`` penalized like ``theta`` (LIBLINEAR's, the paper's Adult
        run); ``"fixed"``: the intercept stays 0 (``model.fit_intercept=False``
        implies it); ``"unregularized"``: a free intercept, found for every
        SVM of the multiplier search by Algorithm 3's cutting plane over ``b``
        (:func:`bias_cutting_plane`: one fixed-bias SVM per cut, up to 60 cuts,
        stopped at a relative gap of ``4 inner_tol``), so ``R`` has no bias
        term. Each SVM then costs several fixed-bias solves (warm-started).
    bias_scale : float, default=1.0
        The constant feature of the regularized intercept.
    inner_tol : float, default=1e-8
        Relative duality gap of every SVM solve.
    max_epochs : int, default=10_000
        SDCA epochs per solve. A solve stopped here before ``inner_tol`` is
        counted in ``info[k]["n_inexact"]``, not raised: its dual value is still
        a valid lower bound, and each step's primal recovery keeps the descent
        and the feasibility, whatever the quality of the candidates.
    start : tuple of (ndarray, float), default=None
        A Problem-2 feasible ``(theta, bias)``. None: ``w = 0`` when feasible,
        else a bias-shifted and scaled unconstrained fit, else a phase-1 MM on
        the constraints; an error names the constraints when none is found.
    feas_tol : float, default=1e-9
        A Problem-2 constraint counts as met when its value is ``<= feas_tol``.
    n_threads : int, default=None
        Threads of the rate kernel (the SVM solver is sequential).
    random_state : int, default=0
        Seed of the SVM solver's row permutations.
    callback : callable, default=None
        ``callback(step, info)`` after every MM step; return True to stop.

    Returns
    -------
    RampMMResult
        The MM iterates (start first) with 0-1 and ramp records;
        ``result.classifier("deterministic" | "randomized")``.

    Raises
    ------
    ValueError
        On invalid parameters or a problem with metrics or trainable thresholds.
    rateopt.exceptions.RateoptError
        When no feasible start is found (the message names the constraints).

    References
    ----------
    .. [1] G. Goh, A. Cotter, M. Gupta, M. Friedlander. "Satisfying Real-world
       Goals with Dataset Constraints". NIPS 2016 (Algorithms 1-2, Eqs. 13-19).

    Examples
    --------
    >>> import rateopt
    >>> X, y, group = rateopt.make_groups_dataset(2000, random_state=0)
    >>> ds = rateopt.Dataset(X, y, groups={"group": group})
    >>> ctx = ds.context()
    >>> a, b = ctx.subset(group="group", value="A"), ctx.subset(group="group", value="B")
    >>> problem = rateopt.Problem(
    ...     constraints=[rateopt.positive_prediction_rate(a) <= 1.5 * rateopt.positive_prediction_rate(b)],
    ...     datasets=ds)
    >>> res = rateopt.ramp_mm(problem, max_iter=3)
    >>> bool(res.ramp_constraints[-1, 0] <= 1e-9)
    True
    """
    t_start = time.perf_counter()
    model = resolve_model(problem, model)
    spec, _, feature_map = prepare_specs(problem, None, model, n_threads)
    if spec.metric is not None or spec.metric_constraints:
        raise ValueError("ramp_mm trains affine objectives and constraints (seed 004); the problem has non-linear "
                         "metrics: use rateopt.train(method='three-player')")
    if spec.n_offsets:
        raise ValueError("ramp_mm cannot train the thresholds of ROC-AUC goals (offset atoms)")
    if bias not in BIAS_MODES:
        raise ValueError(f"bias must be one of {BIAS_MODES}, got {bias!r}")
    if not model.fit_intercept:
        bias = "fixed"
    for name, value, lo in (("max_iter", max_iter, 0), ("max_cuts", max_cuts, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")
    for name, value in (("tol", tol), ("cut_tol", cut_tol), ("inner_tol", inner_tol), ("feas_tol", feas_tol)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    n_total = sum(b.X.n_samples for b in spec.blocks)
    if lam is None:
        lam = float(model.l2) if model.l2 != "auto" and model.l2 > 0 else 2.0 / n_total
    if not (math.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be > 0, got {lam!r}")
    data = _RampData(spec, rule, float(lam), bias, float(bias_scale))
    m = data.m
    if multipliers is not None:
        fixed_v = np.asarray(multipliers, dtype=np.float64).reshape(-1)
        if fixed_v.shape != (m,) or not np.all(np.isfinite(fixed_v)) or np.any(fixed_v < 0):
            raise ValueError(f"multipliers must be {m} finite non-negative numbers, got {multipliers!r}")
    else:
        fixed_v = None
    V = _default_box(data) if multiplier_box is None else np.broadcast_to(
        np.asarray(multiplier_box, dtype=np.float64), (m,)).copy()
    if m and not (np.all(np.isfinite(V)) and np.all(V > 0)):
        raise ValueError(f"multiplier_box must be positive and finite, got {multiplier_box!r}")
    step_kwargs = dict(inner_tol=inner_tol, max_epochs=max_epochs, random_state=random_state)
    names = spec.constraint_names

    if start is not None:
        theta, b0 = start
        theta = np.asarray(theta, dtype=np.float64).reshape(-1)
        if theta.shape != (data.X.n_features,):
            raise ValueError(f"start's theta must have {data.X.n_features} weights, got {theta.shape}")
        b0 = float(b0)
        if bias == "fixed" and b0 != 0.0:
            raise ValueError("with bias='fixed' the start's bias must be 0")
        how = "given"
        if fixed_v is None and m:
            g = data.problem2(data.scores(theta, b0))[1:]
            if g.max() > feas_tol:
                bad = [f"{names[i]} ({g[i]:+.4g})" for i in np.flatnonzero(g > feas_tol)]
                raise RateoptError(f"the start is not Problem-2 feasible: {', '.join(bad)}")
    elif fixed_v is None and m:
        theta, b0, how = _feasible_start(data, step_kwargs, feas_tol, names)
    else:
        theta, b0, how = np.zeros(data.X.n_features), 0.0, "zero"
    if bias == "fixed" and b0 != 0.0:
        raise RateoptError("the feasible start needs a nonzero intercept, but the intercept is fixed at 0: "
                           "use bias='regularized' or pass start=")

    records = {"w": [], "b": [], "lam": [], "ramp": [], "rates": [], "reg": []}
    info = []

    def record(theta, bias_, v):
        r, z = _ramp_atom_rates(spec, theta, bias_, n_threads)
        records["w"].append(np.array(theta))
        records["b"].append(float(bias_))
        records["lam"].append(np.concatenate([[1.0], v]))
        records["ramp"].append(r)
        records["rates"].append(z)
        records["reg"].append(data.regularizer(theta, bias_))

    def total(theta, bias_, v=None):
        vals = data.problem2(data.scores(theta, bias_))
        out = vals[0] + data.regularizer(theta, bias_)
        return out + (float(v @ vals[1:]) if v is not None else 0.0)

    record(theta, b0, np.zeros(m) if fixed_v is None else fixed_v)
    value = total(theta, b0, fixed_v)
    n_steps = 0
    for it in range(max_iter):
        t0 = time.perf_counter()
        step = _Step(data, data.scores(theta, b0), **step_kwargs)
        if fixed_v is not None:
            cand, lower, res = step.solve(np.concatenate([[1.0], fixed_v]))
            new_theta, new_b, v = cand.theta, cand.bias, fixed_v
            step_info = {"n_solves": 1, "n_inexact": step.n_inexact, "gap": res.gap}
        elif m == 0:
            cand, lower, res = step.solve(np.ones(1))
            new_theta, new_b, v = cand.theta, cand.bias, np.zeros(0)
            step_info = {"n_solves": 1, "n_inexact": step.n_inexact, "gap": res.gap}
        else:
            anchor = step.candidate(theta, b0)
            cands = [anchor]

            def oracle(v_):
                c, lower_, _ = step.solve(np.concatenate([[1.0], v_]))
                cands.append(c)
                return c.f, c.g, lower_

            cp = cutting_plane(oracle, [(anchor.f, anchor.g)], V, tol=cut_tol, max_cuts=max_cuts)
            F = np.array([c.f for c in cands])
            G = np.array([c.g for c in cands])
            upper = np.maximum(anchor.g, 0.0)
            status, q = _shrink._solve_lp(F, G, upper, with_z=False)
            if status != "optimal":  # pragma: no cover - the anchor's column is feasible
                q = np.eye(1, len(cands), 0)[0]
            q = np.clip(q, 0.0, None)
            q /= q.sum()
            new_theta = sum(qi * c.theta for qi, c in zip(q, cands) if qi > 0)
            new_b = float(sum(qi * c.bias for qi, c in zip(q, cands) if qi > 0))
            v = cp["v"] if cp["v"] is not None else np.zeros(m)
            step_info = {"n_solves": step.n_solves, "n_inexact": step.n_inexact, "L": cp["L"], "U": cp["U"], "gap": step.max_gap,
                         "L_hist": cp["L_hist"], "U_hist": cp["U_hist"], "n_columns": int(np.count_nonzero(q))}
            # The combination's Problem-3 value is at most the LP's, which is at most the anchor's.
            new_val = total(new_theta, new_b)
            if new_val > value:
                # Rounding only (the anchor is a column of the LP): keep the anchor.
                new_theta, new_b = theta, b0
        if bias == "fixed":
            new_b = 0.0
        if bias == "unregularized":
            step_info["n_bias_solves"] = step.n_bias_solves
        new_value = total(new_theta, new_b, fixed_v)
        n_steps += 1
        step_info.update(seconds=time.perf_counter() - t0, value=new_value)
        info.append(step_info)
        record(new_theta, new_b, v)
        decrease = value - new_value
        theta, b0, value = np.asarray(new_theta, dtype=np.float64), float(new_b), new_value
        if callback is not None and bool(callback(it, step_info)):
            break
        if decrease <= tol * max(1.0, abs(new_value)):
            break

    T = len(records["w"])
    settings = {"method": "ramp-mm", "rule": rule, "lam": float(lam), "bias": bias, "bias_scale": float(bias_scale),
                "max_iter": int(max_iter), "tol": float(tol), "max_cuts": int(max_cuts), "cut_tol": float(cut_tol),
                "multiplier_box": [float(x) for x in V], "inner_tol": float(inner_tol), "start": how,
                "feas_tol": float(feas_tol), "fixed_multipliers": None if fixed_v is None else fixed_v.tolist(),
                "seconds": time.perf_counter() - t_start}
    return RampMMResult(
        method="ramp-mm", weights=np.array(records["w"]).reshape(T, -1), biases=np.array(records["b"]),
        iterations=np.arange(T), multipliers=np.array(records["lam"]).reshape(T, m + 1),
        atom_rates=np.array(records["rates"]).reshape(T, spec.n_atoms), rate_map=RateMap.of(spec),
        n_iter=max(n_steps, 1), feature_map=feature_map, settings=settings,
        ramp_atom_rates=np.array(records["ramp"]).reshape(T, spec.n_atoms), regularizers=records["reg"], info=info)
