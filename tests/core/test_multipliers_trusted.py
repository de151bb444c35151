"""The trusted (unvalidated) multiplier entry points give the validated functions' bits."""

from __future__ import annotations

import numpy as np
import pytest

from rateopt.core import (
    stationary_distribution,
    stationary_distribution_trusted,
    swap_regret_update,
    swap_regret_update_additive,
    swap_update_trusted,
)


def _state(k, seed):
    rng = np.random.default_rng(seed)
    M = rng.random((k, k))
    M /= M.sum(axis=0)
    lam = stationary_distribution(M)
    return M, lam, rng.normal(size=k)


@pytest.mark.parametrize("k", [1, 2, 5])
def test_trusted_stationary_distribution_is_the_validated_one(k):
    M, lam, _ = _state(k, k)
    warm = np.full(k, 1.0 / k)
    for tol, max_iter in ((1e-12, 100), (0.0, 3)):
        want = stationary_distribution(M, warm, tol=tol, max_iter=max_iter)
        got = stationary_distribution_trusted(M, warm, tol=tol, max_iter=max_iter)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("floor", [0.0, 0.01])
def test_trusted_swap_updates_are_the_validated_ones(k, floor):
    M, lam, delta = _state(k, 10 + k)
    floor = min(floor, 0.5 / k)
    got = swap_update_trusted(np.log(M), delta, lam, 0.3, update="multiplicative", floor=floor)
    np.testing.assert_array_equal(got, swap_regret_update(np.log(M), delta, lam, 0.3, floor))
    got = swap_update_trusted(M, delta, lam, 0.3, update="additive")
    np.testing.assert_array_equal(got, swap_regret_update_additive(M, delta, lam, 0.3))


def test_trusted_swap_update_checks_only_its_mode():
    M, lam, delta = _state(3, 0)
    with pytest.raises(ValueError, match="update must be"):
        swap_update_trusted(M, delta, lam, 0.3, update="hedge")
    with pytest.raises(ValueError, match="no floor"):
        swap_update_trusted(M, delta, lam, 0.3, update="additive", floor=0.1)
