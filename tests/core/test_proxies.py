"""Several rate combinations and proxy kinds in one kernel pass
(``rateopt.core.rate_kernel_multi``) against the NumPy reference.

The reference (``tests/reference.py``, ``rate_kernel_multi``) evaluates each
proxy on whole arrays: the hinge, logistic (``log2(1 + e^s)``, via
``numpy.logaddexp``) and ramp (``clip(1/2 + s, 0, 1)``) terms of the net
per-example rule. Also checked against independent facts: the logistic proxy of
the error rate is scikit-learn's log-loss in bits, hinge and logistic bound the
0-1 values from above, the ramp equals them away from the ramp, and the
logistic gradient matches finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import log_loss

from rateopt.core import AtomTable, rate_kernel, rate_kernel_multi
from rateopt.exceptions import NumericalError

import reference as ref
from _kernel_support import DTYPES, FORMATS, THREADS, core_atoms, make_problem, make_X, ref_atoms

PROXY_SETS = {
    "hinge": ["hinge"] * 3,
    "logistic": ["logistic"] * 3,
    "ramp": ["ramp"] * 3,
    "mixed": ["hinge", "logistic", "ramp"],
}


def _coefs(coef, rng):
    """Three combinations: the problem's own, a random one, and minus the first."""
    return np.stack([coef, rng.normal(size=coef.shape), -coef])


def _assert_close(got, want, scale, name):
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11 * max(scale, 1.0), err_msg=name)


def _compare(res, exp, X):
    n = X.shape[0]
    for field in ("rates", "proxy_pos_rates", "proxy_neg_rates", "values", "proxy_values"):
        _assert_close(getattr(res, field), getattr(exp, field), 10.0, field)
    # Gradients add up n terms of size |u| |x|: scale the tolerance with them.
    scale = float(np.abs(exp.grad).max(initial=0.0)) + n * 1e-3
    _assert_close(res.grad, exp.grad, scale, "grad")
    _assert_close(res.grad_bias, exp.grad_bias, scale, "grad_bias")


@pytest.mark.parametrize("separate", [False, True])
@pytest.mark.parametrize("proxies", list(PROXY_SETS))
@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_multi_matches_reference(fmt, dtype, n_threads, proxies, separate):
    D, B, w, theta, bias, coef = make_problem(3)
    X = make_X(D, fmt, dtype, explicit_zero_rows=(3,))
    rng = np.random.default_rng(4)
    coefs = _coefs(coef, rng)
    weights = np.array([1.0, 0.0, -0.5])  # a zero weight: value without gradient
    kinds = PROXY_SETS[proxies]
    # Scores of order 1 so that every proxy regime (both hinge sides, the ramp's
    # slope and both flats, the logistic's tails) occurs.
    res = rate_kernel_multi(X, theta, bias, core_atoms(B, w), coefs, proxies=kinds, grad_weights=weights,
                            separate_gradients=separate, n_threads=n_threads)
    exp = ref.rate_kernel_multi(X, theta, bias, ref_atoms(B, w), coefs, proxies=kinds, grad_weights=weights,
                                separate_gradients=separate)
    _compare(res, exp, D)
    s = D @ theta + bias
    assert np.any(np.abs(s) < 0.5) and np.any(s > 1) and np.any(s < -1)


@pytest.mark.parametrize("proxies", ["hinge", "logistic", "ramp"])
def test_multi_minibatch_matches_reference(proxies):
    D, B, w, theta, bias, coef = make_problem(5)
    rows = np.random.default_rng(6).integers(0, D.shape[0], 150)
    coefs = _coefs(coef, np.random.default_rng(7))
    res = rate_kernel_multi(D, theta, bias, core_atoms(B, w), coefs, proxies=proxies, rows=rows)
    exp = ref.rate_kernel_multi(D, theta, bias, ref_atoms(B, w), coefs, proxies=proxies, rows=rows)
    _compare(res, exp, D)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("n_threads", THREADS)
def test_one_hinge_combination_is_the_single_kernel(fmt, n_threads):
    D, B, w, theta, bias, coef = make_problem(1)
    X = make_X(D, fmt, np.float64)
    atoms = core_atoms(B, w)
    single = rate_kernel(X, theta, bias, atoms, coef, n_threads=n_threads)
    multi = rate_kernel_multi(X, theta, bias, atoms, coef[None, :], n_threads=n_threads)
    assert multi.proxy_values[0] == single.proxy_value and multi.grad_bias == single.grad_bias
    np.testing.assert_array_equal(multi.grad, single.grad)


def test_separate_gradients_sum_to_the_weighted_gradient():
    D, B, w, theta, bias, coef = make_problem(2)
    atoms = core_atoms(B, w)
    coefs = _coefs(coef, np.random.default_rng(1))
    weights = np.array([0.3, -1.2, 2.0])
    sep = rate_kernel_multi(D, theta, bias, atoms, coefs, proxies="logistic", separate_gradients=True)
    tot = rate_kernel_multi(D, theta, bias, atoms, coefs, proxies="logistic", grad_weights=weights)
    np.testing.assert_allclose(weights @ sep.grad, tot.grad, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights @ sep.grad_bias, tot.grad_bias, rtol=1e-12, atol=1e-12)


def test_logistic_error_rate_is_log_loss_in_bits():
    rng = np.random.default_rng(0)
    n, d = 400, 5
    X = rng.normal(size=(n, d))
    y = rng.integers(0, 2, n)
    w = rng.uniform(0.2, 2.0, n)
    theta, bias = rng.normal(size=d), 0.3
    # Atoms: the positives and the negatives. error = pi1 (1 - p+(P)) + pi0 p+(N).
    atoms = AtomTable.from_membership(np.column_stack([y == 1, y == 0]), sample_weight=w)
    pi1 = w[y == 1].sum() / w.sum()
    coef = np.array([[-pi1, 1.0 - pi1]])
    res = rate_kernel_multi(X, theta, bias, atoms, coef, proxies="logistic")
    p = 1.0 / (1.0 + np.exp(-(X @ theta + bias)))
    expected = log_loss(y, p, sample_weight=w) / np.log(2.0)
    np.testing.assert_allclose(res.proxy_values[0] + pi1, expected, rtol=1e-12)


@pytest.mark.parametrize("margin", [1.0, 1.5])
def test_hinge_and_logistic_bound_the_rates_and_ramp_is_exact_off_the_slope(margin):
    D, B, w, theta, bias, coef = make_problem(8)
    atoms = core_atoms(B, w)
    coefs = _coefs(coef, np.random.default_rng(9))
    for kind in ("hinge", "logistic"):
        res = rate_kernel_multi(D, theta, bias, atoms, coefs, proxies=kind, margin=margin)
        assert np.all(res.proxy_values >= res.values - 1e-12), kind
    # Scale theta so no score lies in (-1/2, 1/2): the ramp then is the indicator.
    s = D @ theta + bias
    big = 1.0 / np.abs(s[s != 0]).min()
    res = rate_kernel_multi(D, theta * big, bias * big, atoms, coefs, proxies="ramp")
    np.testing.assert_allclose(res.proxy_values, res.values, rtol=1e-12, atol=1e-12)


def test_logistic_gradient_matches_finite_differences():
    D, B, w, theta, bias, coef = make_problem(10)
    atoms = core_atoms(B, w)
    coefs = _coefs(coef, np.random.default_rng(11))
    weights = np.array([1.0, 0.5, -2.0])

    def f(th, b):
        return rate_kernel_multi(D, th, b, atoms, coefs, proxies="logistic").proxy_values @ weights

    res = rate_kernel_multi(D, theta, bias, atoms, coefs, proxies="logistic", grad_weights=weights)
    h = 1e-6
    direction = np.random.default_rng(12).normal(size=theta.shape)
    fd = (f(theta + h * direction, bias) - f(theta - h * direction, bias)) / (2 * h)
    np.testing.assert_allclose(res.grad @ direction, fd, rtol=1e-6)
    fd_b = (f(theta, bias + h) - f(theta, bias - h)) / (2 * h)
    np.testing.assert_allclose(res.grad_bias, fd_b, rtol=1e-6)


def test_multi_argument_errors():
    D, B, w, theta, bias, coef = make_problem(1)
    atoms = core_atoms(B, w)
    coefs = np.stack([coef, coef])
    with pytest.raises(ValueError, match="proxies must be among"):
        rate_kernel_multi(D, theta, bias, atoms, coefs, proxies="squared")
    with pytest.raises(ValueError, match="one per combination"):
        rate_kernel_multi(D, theta, bias, atoms, coefs, proxies=["hinge"])
    with pytest.raises(ValueError, match="grad_weights"):
        rate_kernel_multi(D, theta, bias, atoms, coefs, grad_weights=[1.0])
    with pytest.raises(ValueError, match="coefs must have shape"):
        rate_kernel_multi(D, theta, bias, atoms, coefs[:, :-1])
    with pytest.raises(ValueError, match="coef"):
        rate_kernel_multi(D, theta, bias, atoms, np.full_like(coefs, np.nan))
    with pytest.raises(NumericalError):
        rate_kernel_multi(D * 1e300, theta * 1e10, bias, atoms, coefs, proxies="logistic")
