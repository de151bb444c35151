"""Goh et al. (2016): dataset constraints with ramp losses, by majorization-minimization (``rateopt.ramp_mm``).

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

This module is the driver (the feasible start, the steps, the records); the
majorizer and the step's SVMs are in :mod:`._ramp_majorizer`, Algorithms 2
and 3 in :mod:`._cutting_plane`, the result and its file format in
:mod:`._ramp_result`.

References
----------
.. [1] G. Goh, A. Cotter, M. Gupta, M. Friedlander. "Satisfying Real-world
   Goals with Dataset Constraints". NIPS 2016.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._solutions import _shrink
from .._solutions._result import RateMap
from .._train import prepare_specs, resolve_model
from .._utils._validation import check_choice, check_int
from ..core import ramp_rates
from ..exceptions import RateoptError
from ._cutting_plane import cutting_plane
from ._ramp_majorizer import MMStep, RampData
from ._ramp_result import RampMMResult

__all__ = ["ramp_mm", "BIAS_MODES"]

BIAS_MODES = ("regularized", "fixed", "unregularized")
"""How :func:`ramp_mm` treats the intercept (``"unregularized"``: Algorithm 3's cutting plane over ``b``)."""


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
    step = MMStep(d, np.zeros(d.n), **step_kwargs)
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
        anchor = MMStep(d, d.scores(theta, bias), **step_kwargs)
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
    """Train a linear or kernel model under ramp-loss dataset constraints by MM (Goh et al., 2016).

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
        raise ValueError("ramp_mm trains affine objectives and constraints (Goh et al., 2016); the problem has non-linear "
                         "metrics: use rateopt.train(method='three-player')")
    if spec.n_offsets:
        raise ValueError("ramp_mm cannot train the thresholds of ROC-AUC goals (offset atoms)")
    check_choice("bias", bias, BIAS_MODES)
    if not model.fit_intercept:
        bias = "fixed"
    for name, value, lo in (("max_iter", max_iter, 0), ("max_cuts", max_cuts, 1)):
        check_int(name, value, lo)
    for name, value in (("tol", tol), ("cut_tol", cut_tol), ("inner_tol", inner_tol), ("feas_tol", feas_tol)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    n_total = sum(b.X.n_samples for b in spec.blocks)
    if lam is None:
        lam = float(model.l2) if model.l2 != "auto" and model.l2 > 0 else 2.0 / n_total
    if not (math.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be > 0, got {lam!r}")
    data = RampData(spec, rule, float(lam), bias, float(bias_scale))
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
        step = MMStep(data, data.scores(theta, b0), **step_kwargs)
        if fixed_v is not None or m == 0:  # one solve at the given (or no) multipliers
            v = np.zeros(0) if fixed_v is None else fixed_v
            cand, lower, res = step.solve(np.concatenate([[1.0], v]))
            new_theta, new_b = cand.theta, cand.bias
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
            step_info = {"n_solves": step.n_solves, "n_inexact": step.n_inexact, "L": cp["L"], "U": cp["U"],
                         "gap": step.max_gap, "L_hist": cp["L_hist"], "U_hist": cp["U_hist"],
                         "n_columns": int(np.count_nonzero(q))}
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
