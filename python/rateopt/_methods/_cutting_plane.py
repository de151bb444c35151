"""Goh et al. (2016)'s cutting planes: Algorithm 2 over the multipliers, Algorithm 3 over the intercept.

Both maximize (or minimize) a concave (convex) function known only through
exact cuts, each cut one weighted SVM solve of :mod:`._ramp_majorizer`:

* :func:`cutting_plane` (Algorithm 2) maximizes the dual ``F(v) = min_w
  Psi(w, v)`` over the box ``[0, V]^m``; the next query is the exact centre of
  mass of the 2-D localization polygon for m = 1 and the LP maximizer of the
  cut model (HiGHS) for m > 1;
* :func:`bias_cutting_plane` (Algorithm 3) minimizes ``G(b) = min_w Psi(w, b)``
  over ``[-R, R]``, the free intercept of ``bias="unregularized"``, with the
  same centre-of-mass rule on its polygon.

The polygon helpers (:func:`localization_polygon`, :func:`polygon_centroid`)
are shared by the two.

References
----------
.. [1] G. Goh, A. Cotter, M. Gupta, M. Friedlander. "Satisfying Real-world
   Goals with Dataset Constraints". NIPS 2016.
"""

from __future__ import annotations

import math

import numpy as np

from .._utils._highs import solve_lp

__all__ = ["cutting_plane", "bias_cutting_plane", "localization_polygon", "polygon_centroid"]


# --------------------------------------------------------------------------- Algorithm 2: the cutting plane


def _cut_model_max(cuts, V):
    """``max_{0 <= v <= V} min_s (f_s + g_s . v)`` and its maximizer (an LP through the one HiGHS helper)."""
    F = np.array([c[0] for c in cuts], dtype=np.float64)
    G = np.array([c[1] for c in cuts], dtype=np.float64).reshape(len(cuts), V.shape[0])
    m = V.shape[0]
    # variables (v, z): max z s.t. z - g_s . v <= f_s, 0 <= v <= V, z free
    cost = np.zeros(m + 1)
    cost[-1] = -1.0
    A = np.hstack([-G, np.ones((len(cuts), 1))])
    res = solve_lp(cost, A, -np.inf, F, col_lower=np.append(np.zeros(m), -np.inf),
                   col_upper=np.append(np.asarray(V, dtype=np.float64), np.inf), what="the cutting-plane LP")
    if res.status != "optimal":  # pragma: no cover - the LP is feasible and bounded (v in a box)
        raise RuntimeError(f"HiGHS failed on the cutting-plane LP: {res.status}")
    return float(-res.objective), np.clip(res.x[:m], 0.0, V)


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
    """Goh et al. (2016) Algorithm 2: maximize the concave ``F(v) = min_w Psi(w, v)`` over ``[0, V]^m``.

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
    """Goh et al. (2016) Algorithm 3: minimize the convex ``G(b) = min_w Psi(w, b)`` over ``[-R, R]``.

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
