"""The offset-atom kernel (``rateopt.core.rate_kernel_offsets``) against a plain-Python reference.

The reference below loops over rows and atom entries and follows the
definition of methods_spec §D.5 directly: atom ``a`` sees row ``j`` at
``s_ja = s_j - b[offset_id[a]]``; within a row, atoms of one offset id share a
score and their coefficients net, atoms of different offsets are bounded one
group at a time; each active term's slope goes to theta and the bias with its
sign and to the group's offset with the opposite sign. It is written without
the core's code paths (no net-coefficient tables, no chunking), in float64.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from rateopt import _core
from rateopt.core import AtomTable, FeatureMatrix, rate_kernel_multi, rate_kernel_offsets
from rateopt.exceptions import NumericalError

FORMATS = ["dense", "csr32", "csr64"]
DTYPES = [np.float32, np.float64]
THREADS = [1, 2]
LN2 = math.log(2.0)


# --------------------------------------------------------------------------- builders


def make_X(D, fmt, dtype):
    D = np.asarray(D, np.float64)
    if fmt == "dense":
        return np.ascontiguousarray(D.astype(dtype))
    idx = {"csr32": np.int32, "csr64": np.int64}[fmt]
    A = sp.csr_matrix(D.astype(dtype))
    A.indices = A.indices.astype(idx)
    A.indptr = A.indptr.astype(idx)
    return A


def make_problem(seed, *, n=400, d=6, n_atoms=7, n_offsets=3, k=2, overlap=True):
    """Features (values on a float32 grid, so float32 and float64 X are the same numbers), an atom
    table with weights, offset ids covering -1 and every offset, coefficients of both signs."""
    rng = np.random.default_rng(seed)
    D = np.round(rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.6) * 64) / 64
    D[:3] = 0.0  # empty CSR rows
    if overlap:
        B = rng.random((n, n_atoms)) < 0.35
    else:  # every row in at most one atom
        B = np.zeros((n, n_atoms), bool)
        which = rng.integers(-1, n_atoms, n)
        B[np.arange(n)[which >= 0], which[which >= 0]] = True
    B[:, 0] |= ~B.any(axis=1)  # no empty atom
    B[5:9] = False  # rows in no atom
    w = rng.uniform(0.2, 2.0, n)
    atoms = AtomTable.from_membership(B, w)
    ids = np.array([-1] + [i % n_offsets for i in range(n_atoms - 1)], dtype=np.int64)
    offsets = rng.normal(scale=0.7, size=n_offsets)
    coefs = rng.normal(size=(k, n_atoms))
    coefs[:, 1] = 0.0
    theta = rng.normal(size=d) * 0.8
    return D, atoms, ids, offsets, coefs, theta, 0.3


# --------------------------------------------------------------------------- reference


def _proxy(kind, u, s, margin):
    """(value, slope) of the proxy of ``u 1[s >= 0]`` (proxy.hpp's definitions, restated)."""
    if kind == "hinge":
        if u > 0:
            h = margin + s
            return (u * h, u) if h > 0 else (0.0, 0.0)
        h = margin - s
        return ((-u * h) + u, u) if h > 0 else (u, 0.0)
    if kind == "logistic":
        sig = 1.0 / (1.0 + math.exp(-s)) if u > 0 else 1.0 / (1.0 + math.exp(s))
        if u > 0:
            return u * math.log1p(math.exp(s)) / LN2, u * sig / LN2
        return -u * math.log1p(math.exp(-s)) / LN2 + u, u * sig / LN2
    rho = min(max(0.5 + s, 0.0), 1.0)
    return u * rho, (u if -0.5 < s < 0.5 else 0.0)


def reference(D, theta, bias, atoms, coefs, ids, offsets, proxies, gw=None, separate=False, margin=1.0, rows=None):
    n, d = D.shape
    A, k, L = atoms.n_atoms, coefs.shape[0], len(offsets)
    gw = np.ones(k) if gw is None else gw
    ng = k if separate else 1
    rates, ppos, pneg = np.zeros(A), np.zeros(A), np.zeros(A)
    pv = np.zeros(k)
    grad, gb, goff = np.zeros((ng, d)), np.zeros(ng), np.zeros((ng, L))
    visit = range(n) if rows is None else rows
    for j in visit:
        s = float(D[j] @ theta) + bias
        groups = {}
        for e in range(atoms.indptr[j], atoms.indptr[j + 1]):
            a, v = int(atoms.indices[e]), float(atoms.weights[e])
            g = int(ids[a])
            sa = s - (offsets[g] if g >= 0 else 0.0)
            rates[a] += v * (sa >= 0)
            ppos[a] += v * max(0.0, margin + sa)
            pneg[a] += v * max(0.0, margin - sa)
            groups.setdefault(g, np.zeros(k))
            groups[g] += coefs[:, a] * v
        for g, u in groups.items():
            sg = s - (offsets[g] if g >= 0 else 0.0)
            for c in range(k):
                if u[c] == 0:
                    continue
                val, slope = _proxy(proxies[c], u[c], sg, margin)
                pv[c] += val
                r = c if separate else 0
                wt = 1.0 if separate else gw[c]
                grad[r] += wt * slope * D[j]
                gb[r] += wt * slope
                if g >= 0:
                    goff[r, g] -= wt * slope
    scale = 1.0 if rows is None else n / len(rows)
    out = dict(rates=rates, proxy_pos_rates=ppos, proxy_neg_rates=pneg, proxy_values=pv, grad=grad, grad_bias=gb,
               grad_offsets=goff)
    out = {key: val * scale for key, val in out.items()}
    out["values"] = coefs @ out["rates"]
    if not separate:
        out["grad"], out["grad_bias"], out["grad_offsets"] = out["grad"][0], out["grad_bias"][0], out["grad_offsets"][0]
    return out


def assert_matches(res, ref, rtol=1e-11):
    for key, want in ref.items():
        got = np.asarray(getattr(res, key), dtype=np.float64)
        scale = max(1.0, float(np.max(np.abs(want))) if np.size(want) else 1.0)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12 * scale, err_msg=key)


# --------------------------------------------------------------------------- agreement with the reference


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_threads", THREADS)
def test_matches_reference(fmt, dtype, n_threads):
    # 5000 rows: more than 2048 per thread, so two threads really split the work.
    D, atoms, ids, offsets, coefs, theta, bias = make_problem(0, n=5000)
    X = FeatureMatrix(make_X(D, fmt, dtype))
    res = rate_kernel_offsets(X, theta, bias, atoms, coefs, ids, offsets, n_threads=n_threads)
    assert_matches(res, reference(D, theta, bias, atoms, coefs, ids, offsets, ["hinge", "hinge"]))
    assert 0 < res.rates.min() and res.rates.max() < 1  # the thresholds cut inside every atom


@pytest.mark.parametrize("fmt", ["dense", "csr32"])
@pytest.mark.parametrize("proxies", [("hinge", "logistic"), ("ramp", "hinge"), ("logistic", "ramp")])
@pytest.mark.parametrize("separate", [False, True])
def test_matches_reference_proxies_and_gradients(fmt, proxies, separate):
    D, atoms, ids, offsets, coefs, theta, bias = make_problem(1)
    gw = np.array([0.7, -1.3])
    res = rate_kernel_offsets(make_X(D, fmt, np.float64), theta, bias, atoms, coefs, ids, offsets, proxies=proxies,
                              grad_weights=gw, separate_gradients=separate, margin=0.8, n_threads=2)
    want = reference(D, theta, bias, atoms, coefs, ids, offsets, proxies, gw, separate, margin=0.8)
    assert_matches(res, want)
    assert np.any(np.asarray(res.grad_offsets) != 0)


def test_minibatch_rows_match_reference():
    D, atoms, ids, offsets, coefs, theta, bias = make_problem(2)
    rows = np.random.default_rng(3).integers(0, D.shape[0], 150)
    res = rate_kernel_offsets(D, theta, bias, atoms, coefs, ids, offsets, rows=rows)
    assert_matches(res, reference(D, theta, bias, atoms, coefs, ids, offsets, ["hinge"] * 2, rows=rows))


@pytest.mark.parametrize("fmt", FORMATS)
def test_bit_identical_across_runs(fmt):
    D, atoms, ids, offsets, coefs, theta, bias = make_problem(4, n=6000)
    X = FeatureMatrix(make_X(D, fmt, np.float32))
    for threads in (1, 2):
        runs = [rate_kernel_offsets(X, theta, bias, atoms, coefs, ids, offsets, n_threads=threads,
                                    proxies=("hinge", "logistic")) for _ in range(3)]
        for r in runs[1:]:
            for key in ("rates", "proxy_values", "grad", "grad_bias", "grad_offsets", "proxy_pos_rates"):
                np.testing.assert_array_equal(np.asarray(getattr(r, key)), np.asarray(getattr(runs[0], key)))


# --------------------------------------------------------------------------- agreement with the plain kernel


def _plain(X, theta, bias, atoms, coefs, **kw):
    return rate_kernel_multi(X, theta, bias, atoms, coefs, **kw)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("n_threads", THREADS)
def test_no_offset_is_the_plain_kernel_exactly(fmt, n_threads):
    D, atoms, _, _, coefs, theta, bias = make_problem(5, n=5000)
    X = FeatureMatrix(make_X(D, fmt, np.float64))
    none = -np.ones(atoms.n_atoms, dtype=np.int64)
    one_zero = np.zeros(atoms.n_atoms, dtype=np.int64)  # every atom behind the same offset, 0
    for ids, offsets in ((none, []), (none, [2.5]), (one_zero, [0.0])):
        for kw in ({}, {"proxies": ("hinge", "logistic"), "separate_gradients": True}):
            got = rate_kernel_offsets(X, theta, bias, atoms, coefs, ids, offsets, n_threads=n_threads, **kw)
            want = _plain(X, theta, bias, atoms, coefs, n_threads=n_threads, **kw)
            for key in ("rates", "proxy_pos_rates", "proxy_neg_rates", "proxy_values", "values", "grad",
                        "grad_bias"):
                np.testing.assert_array_equal(np.asarray(getattr(got, key)), np.asarray(getattr(want, key)),
                                              err_msg=key)
            if ids[0] == -1:
                assert not np.any(got.grad_offsets)


def test_zero_offsets_per_atom_rule_equals_net_rule_on_disjoint_atoms():
    D, atoms, _, _, coefs, theta, bias = make_problem(6, overlap=False)
    ids = np.arange(atoms.n_atoms) - 1  # every atom its own group (one with none)
    got = rate_kernel_offsets(D, theta, bias, atoms, coefs, ids, np.zeros(atoms.n_atoms - 1))
    want = _plain(D, theta, bias, atoms, coefs)
    for key in ("rates", "proxy_pos_rates", "proxy_neg_rates", "proxy_values", "values", "grad", "grad_bias"):
        np.testing.assert_allclose(np.asarray(getattr(got, key)), np.asarray(getattr(want, key)), rtol=1e-13,
                                   atol=1e-13, err_msg=key)


def test_zero_offsets_on_overlapping_atoms_same_rates_looser_proxy():
    """Per-atom bounds of overlapping atoms are valid but looser than the net rule's."""
    D, atoms, _, _, coefs, theta, bias = make_problem(7, overlap=True)
    ids = np.arange(atoms.n_atoms) - 1
    got = rate_kernel_offsets(D, theta, bias, atoms, coefs, ids, np.zeros(atoms.n_atoms - 1))
    want = _plain(D, theta, bias, atoms, coefs)
    np.testing.assert_array_equal(got.rates, want.rates)
    np.testing.assert_array_equal(got.proxy_pos_rates, want.proxy_pos_rates)
    assert np.all(got.proxy_values >= want.proxy_values - 1e-12)
    assert np.any(got.proxy_values > want.proxy_values + 1e-6)
    assert np.all(got.proxy_values >= got.values)  # still an upper bound of the 0-1 value


# --------------------------------------------------------------------------- gradients


def _kinks(D, theta, bias, ids, offsets, atoms, margin):
    """Smallest distance of a shifted score to a hinge kink (+-margin) or to 0."""
    s = D @ theta + bias
    rows = np.repeat(np.arange(D.shape[0]), np.diff(atoms.indptr))
    g = ids[atoms.indices]
    sa = s[rows] - np.where(g >= 0, np.asarray(offsets)[np.maximum(g, 0)], 0.0)
    return min(np.min(np.abs(sa - margin)), np.min(np.abs(sa + margin)))


@pytest.mark.parametrize("proxy", ["hinge", "logistic"])
def test_gradients_match_finite_differences(proxy):
    D, atoms, ids, offsets, coefs, theta, bias = make_problem(8, n=300)
    coef = coefs[:1]
    eps = 1e-6
    assert _kinks(D, theta, bias, ids, offsets, atoms, 1.0) > 10 * eps * (1 + np.abs(D).sum(axis=1).max())

    def value(th, b, off):
        return rate_kernel_offsets(D, th, b, atoms, coef, ids, off, proxies=proxy).proxy_values[0]

    res = rate_kernel_offsets(D, theta, bias, atoms, coef, ids, offsets, proxies=proxy)
    fd_off = [(value(theta, bias, offsets + eps * e) - value(theta, bias, offsets - eps * e)) / (2 * eps)
              for e in np.eye(len(offsets))]
    fd_theta = [(value(theta + eps * e, bias, offsets) - value(theta - eps * e, bias, offsets)) / (2 * eps)
                for e in np.eye(len(theta))]
    fd_bias = (value(theta, bias + eps, offsets) - value(theta, bias - eps, offsets)) / (2 * eps)
    np.testing.assert_allclose(res.grad_offsets, fd_off, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(res.grad, fd_theta, rtol=1e-6, atol=1e-8)
    assert res.grad_bias == pytest.approx(fd_bias, rel=1e-6, abs=1e-8)
    assert np.all(np.abs(res.grad_offsets) > 1e-3)  # every offset really moves the proxy


# --------------------------------------------------------------------------- bad input


def test_bad_input_names_the_argument():
    D, atoms, ids, offsets, coefs, theta, bias = make_problem(9, n=50)
    call = lambda **kw: rate_kernel_offsets(  # noqa: E731
        D, theta, bias, atoms, coefs, kw.get("ids", ids), kw.get("offsets", offsets))
    with pytest.raises(ValueError, match=r"offset_ids holds 3 at atom 1, outside \[-1, n_offsets=3\)"):
        call(ids=np.where(np.arange(len(ids)) == 1, 3, ids))
    with pytest.raises(ValueError, match=r"offset_ids holds -2"):
        call(ids=np.where(np.arange(len(ids)) == 2, -2, ids))
    with pytest.raises(ValueError, match=r"offset_ids must have shape \(n_atoms = 7,\)"):
        call(ids=ids[:-1])
    with pytest.raises(ValueError, match=r"offsets holds a non-finite value \(NaN or inf\) at position 1"):
        call(offsets=np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match=r"offsets holds a non-finite value"):
        call(offsets=np.array([0.0, 1.0, -np.inf]))
    with pytest.raises(ValueError, match=r"offsets must be 1-D"):
        call(offsets=np.zeros((3, 1)))
    with pytest.raises(ValueError, match=r"offset_ids holds 0 at atom 1, outside \[-1, n_offsets=0\)"):
        call(offsets=[])
    with pytest.raises(TypeError, match="offset_ids must hold integers"):
        call(ids=ids.astype(float))


def test_binding_checks_without_the_python_layer():
    """The binding refuses what the wrapper would have caught, without crashing."""
    D, atoms, ids, offsets, coefs, theta, bias = make_problem(10, n=50)
    base = dict(X=D, theta=theta, bias=bias, atom_indptr=atoms.indptr, atom_indices=atoms.indices,
                atom_weights=atoms.weights, n_atoms=atoms.n_atoms, offset_ids=ids.astype(np.int32),
                offsets=offsets, coef=coefs, proxies=np.zeros(2, np.int32), grad_weights=np.ones(2),
                separate_gradients=False, margin=1.0, rows=None, n_threads=1)
    _core.offset_kernel_dense(**base)  # the valid call works
    bad = {"offset_ids": (np.full(atoms.n_atoms, 5, np.int32), ValueError, "offset_ids holds 5"),
           "offsets": (np.array([np.nan, 0.0, 0.0]), ValueError, "offsets holds a non-finite"),
           "n_atoms": (atoms.n_atoms, None, None)}
    for key, (val, exc, msg) in bad.items():
        if exc is None:
            continue
        with pytest.raises(exc, match=msg):
            _core.offset_kernel_dense(**{**base, key: val})
    with pytest.raises(TypeError, match="offset_ids must be a C-contiguous array of dtype int32"):
        _core.offset_kernel_dense(**{**base, "offset_ids": ids.astype(np.int64)})
    with pytest.raises(ValueError, match=r"offset_ids \(n_atoms\) has length 6, expected 7"):
        _core.offset_kernel_dense(**{**base, "offset_ids": ids[:-1].astype(np.int32)})


def test_nonfinite_shifted_score_raises():
    D = np.array([[1.0], [-1.0]])
    atoms = AtomTable.from_membership(np.ones((2, 1), bool))
    with pytest.raises(NumericalError, match="shifted scores"):
        rate_kernel_offsets(D, [1e308], 0.0, atoms, [[1.0]], [0], [1e308])


def test_nested_region_gives_the_same_bits():
    """Called from inside another parallel region (a team of one), the requested chunks still decide."""
    D, atoms, ids, offsets, coefs, theta, bias = make_problem(11, n=6000)
    X = FeatureMatrix(D)
    want = rate_kernel_offsets(X, theta, bias, atoms, coefs, ids, offsets, n_threads=2)
    got = []
    _core._call_in_parallel_region(
        lambda: got.append(rate_kernel_offsets(X, theta, bias, atoms, coefs, ids, offsets, n_threads=2)), 2)
    for key in ("rates", "proxy_values", "grad", "grad_offsets"):
        np.testing.assert_array_equal(getattr(got[0], key), getattr(want, key))
