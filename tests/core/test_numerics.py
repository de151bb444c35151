"""Numerical edge cases and messages at the core boundary.

Each case once returned a silently wrong answer or an unhelpful message: a
NaN score counted as a negative, weights whose total overflowed, multiplier
steps that overflowed to inf/NaN, projections off the simplex, arguments the
message did not name. Expected values are closed forms worked out by hand.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from rateopt.core import (
    AtomTable,
    FeatureMatrix,
    external_update_additive,
    external_update_multiplicative,
    project_l1_ball_nonneg,
    project_simplex,
    rate_kernel,
    swap_regret_update,
    swap_regret_update_additive,
)
from rateopt.exceptions import DataCopyWarning, NumericalError

ONE_ATOM = AtomTable.from_membership(np.ones((2, 1), bool))


# --------------------------------------------------------------------------- #
# Scores that are not finite
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_inf_minus_inf_score_raises(sparse, n_threads):
    # Row 0 scores 1e308*10 + 1e308*(-10) = inf - inf = NaN; row 1 scores 0.
    X = np.array([[1e308, 1e308], [0.0, 0.0]])
    X = sp.csr_matrix(X) if sparse else X
    with pytest.raises(NumericalError, match="1 row"):
        rate_kernel(X, np.array([10.0, -10.0]), 0.0, ONE_ATOM, np.array([1.0]), n_threads=n_threads)


def test_infinite_score_in_no_constrained_atom_raises():
    # The proxy and gradient stay finite (the row's net coefficient is 0), but the
    # row's hinge rates would be inf: the kernel must say so, not return them.
    X = np.array([[1e308], [1.0]])
    atoms = AtomTable.from_membership(np.array([[1, 0], [0, 1]], bool))
    with pytest.raises(NumericalError, match="not finite"):
        rate_kernel(X, np.array([10.0]), 0.0, atoms, np.array([0.0, 1.0]))


def test_large_finite_scores_are_fine():
    X = np.array([[1e300], [-1e300]])
    res = rate_kernel(X, np.array([1.0]), 0.0, ONE_ATOM, np.array([0.0]))
    assert res.rates.tolist() == [0.5]


# --------------------------------------------------------------------------- #
# Atom weights near the largest double
# --------------------------------------------------------------------------- #


def test_from_membership_with_huge_weights_equals_unit_weights():
    member = np.array([[1, 0], [1, 1], [0, 1], [1, 1]], bool)
    w = np.array([1.0, 2.0, 3.0, 0.5])
    small = AtomTable.from_membership(member, sample_weight=w)
    huge = AtomTable.from_membership(member, sample_weight=w * (1e308 / 3.0))
    # Atom 0 holds rows 0, 1, 3 with weights 1, 2, 0.5: normalized 1/3.5, 2/3.5, 0.5/3.5 (on the grid of
    # exact_normalized: to within 2**-53, summing to exactly 1).
    np.testing.assert_allclose(small.weights, [1 / 3.5, 2 / 3.5, 2 / 5.5, 3 / 5.5, 0.5 / 3.5, 0.5 / 5.5],
                               rtol=0, atol=2 * 2.0**-53)
    np.testing.assert_allclose(huge.weights, small.weights, rtol=0, atol=4 * 2.0**-53)
    # A power-of-two multiple of the weights gives the very same table (the rescaling is exact).
    np.testing.assert_array_equal(AtomTable.from_membership(member, sample_weight=w * 2.0**1020).weights,
                                  small.weights)


def test_from_membership_names_bad_weights():
    with pytest.raises(TypeError, match="sample_weight"):
        AtomTable.from_membership(np.ones((2, 1), bool), sample_weight=np.array(["1", "2"]))


# --------------------------------------------------------------------------- #
# Multiplier steps that overflow
# --------------------------------------------------------------------------- #

LAM = np.array([0.5, 0.5])
M = np.full((2, 2), 0.5)


@pytest.mark.parametrize(
    "call",
    [
        lambda: swap_regret_update(np.log(M), np.array([0.0, 1e300]), LAM, 1e300),
        lambda: swap_regret_update_additive(M, np.array([0.0, 1e300]), LAM, 1e300),
        lambda: external_update_multiplicative(np.log(LAM), np.array([0.0, 1e300]), 1e300),
        lambda: external_update_additive(LAM, np.array([0.0, 1e300]), 1e300),
        lambda: external_update_additive(np.array([1e308, 0.0]), np.array([1e308, 0.0]), 1.0),
    ],
    ids=["swap-mult", "swap-add", "ext-mult", "ext-add", "ext-add-sum"],
)
def test_overflowing_multiplier_step_raises(call):
    with pytest.raises(NumericalError, match="eta"):
        call()


def test_large_but_finite_steps_are_exact():
    # log M[j, i] += eta * delta[j] * lam[i]: the row with the larger gain takes
    # (up to exp(-huge) = 0) all of every column's mass.
    out = swap_regret_update(np.log(M), np.array([0.0, 1e200]), LAM, 1e100)
    np.testing.assert_array_equal(np.exp(out), [[0.0, 0.0], [1.0, 1.0]])
    out = swap_regret_update_additive(M, np.array([0.0, 1e200]), LAM, 1e100)
    np.testing.assert_array_equal(out, [[0.0, 0.0], [1.0, 1.0]])


def test_log_matrix_with_an_all_minus_inf_column_is_refused():
    log_M = np.array([[0.0, -np.inf], [-np.inf, -np.inf]])
    with pytest.raises(ValueError, match="log_M"):
        swap_regret_update(log_M, np.zeros(2), LAM, 0.1)
    with pytest.raises(ValueError, match="log_lam"):
        external_update_multiplicative(np.array([-np.inf, -np.inf]), np.zeros(2), 0.1)


# --------------------------------------------------------------------------- #
# Projections far from the simplex
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    "v, radius, want",
    [
        ([1e17, 0.0], 1.0, [1.0, 0.0]),
        ([0.0, 1e17], 1.0, [0.0, 1.0]),
        ([1e17, 1e17], 1.0, [0.5, 0.5]),
        ([1e308, -1e308], 1.0, [1.0, 0.0]),
        ([-1e308, 1e308, 1e308], 2.0, [0.0, 1.0, 1.0]),
        ([0.3, 0.7], 1e-300, [0.0, 1e-300]),
        ([0.3, 0.3], 1e-300, [0.5e-300, 0.5e-300]),
        ([0.3, 0.7], 1e300, [0.5e300 - 0.2, 0.5e300 + 0.2]),
    ],
)
def test_project_simplex_extreme(v, radius, want):
    # Closed forms: with a gap g between the two largest entries, g >= radius puts
    # all mass on the largest; equal entries share it; radius >> g splits it
    # around radius/2 by +/- g/2.
    x = project_simplex(np.array(v), radius)
    np.testing.assert_allclose(x, want, rtol=1e-15, atol=0)
    assert np.all(x >= 0)
    np.testing.assert_allclose(x.sum(), radius, rtol=1e-15)


def test_project_l1_ball_extreme():
    np.testing.assert_allclose(project_l1_ball_nonneg(np.array([1e17, 3.0]), 1.0), [1.0, 0.0])
    np.testing.assert_allclose(project_l1_ball_nonneg(np.array([1e308, 1e308]), 1.0), [0.5, 0.5])
    np.testing.assert_allclose(project_l1_ball_nonneg(np.array([0.3, -1e308]), 1e-300), [1e-300, 0.0])


# --------------------------------------------------------------------------- #
# Messages that name the argument
# --------------------------------------------------------------------------- #


def test_huge_n_threads_is_named():
    X = np.zeros((2, 1))
    with pytest.raises(ValueError, match=r"n_threads=2147483648 .*maximum"):
        rate_kernel(X, np.zeros(1), 0.0, ONE_ATOM, np.ones(1), n_threads=2**31)


def test_atom_table_argument_types_are_named():
    with pytest.raises(TypeError, match="atoms.weights"):
        AtomTable(np.array([0, 1]), np.array([0]), np.array(["1.0"]), 1)
    with pytest.raises(TypeError, match="atoms.n_atoms"):
        AtomTable(np.array([0, 1]), np.array([0]), np.array([1.0]), 2.0)


def test_csr_copy_warning_names_the_index_dtype_it_chose():
    X = sp.random(5, 4, density=0.5, format="csr", random_state=0)
    mixed = sp.csr_matrix((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int32)), shape=X.shape)
    mixed.indices = X.indices.astype(np.int64)  # scipy keeps the mismatch when assigned
    assert mixed.indices.dtype != mixed.indptr.dtype
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Xm = FeatureMatrix(mixed)
    (w,) = [c for c in caught if issubclass(c.category, DataCopyWarning)]
    assert f"contiguous {Xm.index_dtype.name} indices" in str(w.message)


# --------------------------------------------------------------------------- #
# Found by the property tests (tests/*/test_properties_*.py)
# --------------------------------------------------------------------------- #


def test_hinge_rates_that_overflow_after_minibatch_scaling_raise():
    # s = 1e308 is finite, but the minibatch scale n / len(rows) = 2 takes the
    # atom's hinge rate past the float64 range.
    X = np.array([[1e308], [0.0]])
    first_row = AtomTable.from_membership(np.array([[1], [0]], bool))  # row 0 alone: weight 1
    with pytest.raises(NumericalError, match="hinge rate"):
        rate_kernel(X, np.array([1.0]), 0.0, first_row, np.array([0.0]), rows=[0])


def test_stationary_distribution_of_a_chain_with_tiny_transitions():
    from rateopt.core import stationary_distribution

    a = 1e-170  # a nearly periodic chain: GTH's unnormalized weights reach 1/a^2
    M = np.array([[0, a, 0, 0], [1, 0, 0, a], [0, 1 - a, 0, 1 - a], [0, 0, 1, 0]])
    lam, info = stationary_distribution(M, np.array([0.0, 0.0, 1.0, 0.0]), return_info=True)
    assert info["fallback"]
    # Closed form, to first order in a: mass a/2 on states 0-1 would need 1/a^2
    # steps; the stationary distribution is (0, 0, 1/2, 1/2) up to O(a).
    np.testing.assert_allclose(lam, [0.0, 0.0, 0.5, 0.5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(M @ lam, lam, rtol=0, atol=1e-15)


def test_log_normalization_keeps_its_digits_far_from_zero():
    # log_softmax([-2e5, -2e5]) is exactly log(1/2) each; subtracting
    # max + log(sum) in one go lost 1e-11 of it.
    out = external_update_multiplicative(np.array([-2e5, -2e5]), np.zeros(2), 0.0)
    np.testing.assert_array_equal(out, np.log([0.5, 0.5]))
    out = swap_regret_update(np.full((2, 2), -2e5), np.zeros(2), LAM, 0.0)
    np.testing.assert_array_equal(out, np.log(np.full((2, 2), 0.5)))


def test_rbf_values_below_the_normal_range_are_those_of_exp():
    from rateopt import kernel_block

    X = np.array([[100.0], [27.0]])
    B = np.array([[0.0]])
    for method in ("core", "blas"):
        K = kernel_block(X, B, "rbf", gamma=1.0, method=method)
        # exp(-10000) is 0 and exp(-729) is subnormal: not the old floor 3.3e-308.
        np.testing.assert_array_equal(K[:, 0], np.exp(-np.array([1e4, 729.0])))
    K = kernel_block(sp.csr_matrix(X), B, "rbf", gamma=1.0)
    np.testing.assert_array_equal(K[:, 0], np.exp(-np.array([1e4, 729.0])))


def test_from_membership_keeps_subnormal_weights_exact():
    # Atoms of subnormal and tiny weights: per-atom power-of-two scaling keeps their ratios (dividing by
    # the largest weight overall did not). Normalized weights lie on the grid of exact_normalized
    # (multiples of 2**-53 summing to exactly 1), so a share below 2**-54 of its atom rounds to 0 (the
    # running sum keeps the total): here 1e-311 next to 3.9e-123 is 2.6e-189 of its atom.
    member = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], bool)
    w = np.array([1e-311, 3.9e-123, 2e-311, 3 * 2e-311])
    t = AtomTable.from_membership(member, sample_weight=w)
    np.testing.assert_array_equal(t.weights, [0.0, 1.0, 0.25, 0.75])
    # And a tiny weight next to a huge one in another atom still counts.
    t = AtomTable.from_membership(np.array([[0, 1], [1, 0]], bool), sample_weight=np.array([1e300, 1e-290]))
    np.testing.assert_array_equal(t.weights, [1.0, 1.0])


def test_a_combination_value_that_overflows_raises():
    # Found under the sanitizer build: coef . rates = 9e307 * 2 - 9e307 * 2 is inf - inf.
    from rateopt.core import rate_kernel_multi

    atoms = AtomTable(np.array([0, 0, 2]), np.array([0, 1]), np.array([2.0, 2.0]), 2)
    X = sp.csr_matrix((2, 1))
    big = 8.98846567431158e307
    with pytest.raises(NumericalError, match="combination value"):
        rate_kernel_multi(X, np.zeros(1), 0.0, atoms, np.array([[big, -big]]))
