"""The core's one fast exp (cpp/include/rateopt/fast_exp.hpp) against numpy.exp, within its documented 2 ulp.

The header's ``exp_nonpositive`` is what the laplacian and rbf kernel blocks
and the multiclass pass's softmax evaluate. The laplacian block of a one-feature
row ``x`` against the landmark 0 with ``gamma = 1`` is exactly
``exp_nonpositive(-|x|)`` (the distance ``|x - 0|`` and the product by 1 are
exact), so it exposes the function on any argument of its domain [-708, 0].
Past -708 the kernel calls ``std::exp``; that side is checked too.
"""

import numpy as np
import pytest

from rateopt.core._kernel_block import kernel_block

ULP_BOUND = 2.0  # the header's documented bound against numpy.exp


def _fast_exp(x):
    return kernel_block(np.abs(x)[:, None], np.zeros((1, 1)), "laplacian", gamma=1.0)[:, 0]


def _ulps(got, x):
    ref = np.exp(x)
    return np.abs(got - ref) / np.spacing(ref)


@pytest.mark.parametrize("lo, hi", [(-708.0, 0.0), (-1.0, 0.0), (-1e-6, 0.0), (-708.0, -700.0)])
def test_fast_exp_within_its_ulp_bound_of_numpy(lo, hi):
    x = np.random.default_rng(0).uniform(lo, hi, 50_000)
    assert _ulps(_fast_exp(x), x).max() <= ULP_BOUND


def test_fast_exp_at_the_reduction_boundaries_and_ends():
    # k changes at x = (j + 1/2) ln 2; the reduced argument r is largest (|r| = ln2 / 2) there.
    j = np.arange(0, 1021)
    mid = -(j + 0.5) * np.log(2.0)
    x = np.concatenate([mid, np.nextafter(mid, 0.0), np.nextafter(mid, -np.inf),
                        -np.logspace(-300, np.log10(708), 2000), [0.0, -708.0, -5e-324]])
    x = x[x >= -708.0]
    got = _fast_exp(x)
    assert _ulps(got, x).max() <= ULP_BOUND
    assert got[x == 0.0][0] == 1.0


def test_past_708_the_kernel_falls_back_to_std_exp():
    x = np.array([-708.5, -720.0, -745.0, -800.0])
    got, ref = _fast_exp(x), np.exp(x)
    assert np.all(np.abs(got - ref) <= ULP_BOUND * np.spacing(0.0))  # subnormal results (and 0 past -745)
