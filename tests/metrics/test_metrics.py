"""Non-linear rate metrics (``rateopt.metrics``): values against brute-force counts,
best responses against a grid search, and Lemma 1 of seed 003 (at an interior best
response, ``grad psi(xi) = s * lam``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import rateopt
from rateopt import metrics

GRID = np.linspace(0.0, 1.0, 1001)


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] + rng.normal(size=n) > 0.3).astype(int)
    g = rng.integers(0, 2, n)
    w = rng.uniform(0.5, 2.0, n)
    return rateopt.Dataset(X, y, weights=w, groups={"g": g}), y, g, w


def _psi_grid(metric, X, Y):
    """psi on a grid, written from the definitions (not through Metric.value)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric.kind == "kld":
            p, e = metric.target, metrics.KLD_EPS
            return p * np.log((p + e) / (X + e)) + (1 - p) * np.log((1 - p + e) / (Y + e))
        if metric.kind == "g_mean":
            return 1 - np.sqrt(X * Y)
        if metric.kind == "h_mean":
            return np.where(X + Y > 0, 1 - 2 * X * Y / (X + Y), 1.0)
        return np.sqrt((X**2 + Y**2) / 2)


def _metrics():
    ds, *_ = _data()
    ctx = ds.context()
    return [metrics.kl_divergence(ctx.subset(group="g", value=1)), metrics.kl_divergence(ctx, target=0.2),
            metrics.g_mean(ctx), metrics.h_mean(ctx), metrics.q_mean(ctx)]


@pytest.mark.parametrize("i", range(5))
def test_best_response_matches_a_grid_search(i):
    metric = _metrics()[i]
    X, Y = np.meshgrid(GRID, GRID, indexing="ij")
    rng = np.random.default_rng(i)
    lams = np.vstack([rng.exponential(1.0, size=(40, 2)), rng.exponential(0.05, size=(10, 2)),
                      [[0.0, 0.0], [0.0, 3.0], [5.0, 0.0], [0.5, 0.5], [0.3, 0.9]]])
    for lam in lams:
        f = _psi_grid(metric, X, Y) - metric.signs[0] * lam[0] * X - metric.signs[1] * lam[1] * Y
        best = np.nanmin(f)
        xi = metric.best_response(lam)
        assert np.all((xi >= 0) & (xi <= 1)), xi
        got = metric.value(xi) - float(metric.signs @ (lam * xi))
        # The closed form is at least as good as the best grid point, and no grid point
        # beats it by more than the grid's resolution allows.
        assert got <= best + 1e-12, (lam, xi, got, best)
        assert got >= best - 5e-3, (lam, xi, got, best)


def test_lemma_1_interior_best_response_is_the_gradient_inverse():
    kld = _metrics()[1]  # target 0.2
    p = kld.target
    for lam in ([0.5, 2.0], [1.0, 1.0], [0.3, 5.0]):
        xi = kld.best_response(lam)
        assert np.all((xi > 0) & (xi < 1))
        e = metrics.KLD_EPS
        grad = np.array([-p / (xi[0] + e), -(1 - p) / (xi[1] + e)])
        np.testing.assert_allclose(grad, kld.signs * np.array(lam), rtol=1e-12)


def test_values_against_brute_force_counts():
    ds, y, g, w = _data(seed=3)
    ctx = ds.context()
    rng = np.random.default_rng(1)
    decisions = rng.integers(0, 2, y.size)

    def wmean(mask, values):
        return float(np.sum(w[mask] * values[mask]) / np.sum(w[mask]))

    tpr, tnr = wmean(y == 1, decisions), wmean(y == 0, 1 - decisions)
    fpr, fnr = 1 - tnr, 1 - tpr
    assert metrics.g_mean(ctx).evaluate(decisions) == pytest.approx(1 - np.sqrt(tpr * tnr), abs=1e-12)
    assert metrics.h_mean(ctx).evaluate(decisions) == pytest.approx(1 - 2 * tpr * tnr / (tpr + tnr), abs=1e-12)
    assert metrics.q_mean(ctx).evaluate(decisions) == pytest.approx(np.sqrt((fpr**2 + fnr**2) / 2), abs=1e-12)
    p = float(np.sum(w * y) / np.sum(w))
    q = wmean(g == 1, decisions)
    kld = metrics.kl_divergence(ctx.subset(group="g", value=1))
    assert kld.target == pytest.approx(p, abs=1e-15)
    e = 1e-10  # the documented smoothing (seed 003's evaluation code)
    want = p * np.log((p + e) / (q + e)) + (1 - p) * np.log((1 - p + e) / (1 - q + e))
    assert kld.evaluate(decisions) == pytest.approx(want, abs=1e-12)
    assert abs(want - (p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q)))) < 1e-9
    assert np.isfinite(kld.evaluate(np.ones_like(decisions)))  # a group predicted all positive


def test_a_mixture_is_psi_of_its_expected_rates():
    ds, y, g, w = _data(seed=4)
    gm = metrics.g_mean(ds.context())
    rng = np.random.default_rng(2)
    d1, d2 = rng.integers(0, 2, y.size), rng.integers(0, 2, y.size)
    mixture = 0.3 * d1 + 0.7 * d2  # expected decisions of a two-model mixture
    expected = gm.evaluate(mixture, kind="probabilities")

    def rates(d):
        return np.array([np.sum(w[y == 1] * d[y == 1]) / np.sum(w[y == 1]),
                         np.sum(w[y == 0] * (1 - d[y == 0])) / np.sum(w[y == 0])])

    z = 0.3 * rates(d1) + 0.7 * rates(d2)
    assert expected == pytest.approx(1 - np.sqrt(z[0] * z[1]), abs=1e-12)
    averaged = 0.3 * gm.evaluate(d1) + 0.7 * gm.evaluate(d2)
    assert expected != pytest.approx(averaged, abs=1e-6)  # not the mixture of the metric's values


def test_guard_rails():
    gm = _metrics()[2]
    with pytest.raises(TypeError, match="truth value"):
        bool(gm)
    with pytest.raises(TypeError, match="'=='"):
        gm == gm  # noqa: B015
    with pytest.raises(TypeError, match="no arithmetic"):
        gm + 1
    with pytest.raises(ValueError, match="non-negative"):
        gm.best_response([-1.0, 0.0])
    with pytest.raises(ValueError, match="target"):
        metrics.kl_divergence(_data()[0].context(), target=1.5)


# --------------------------------------------------------------------------- ratio metrics


def _counts(d, y, w, mask=None):
    m = np.ones(y.size, bool) if mask is None else mask
    W = np.sum(w[m])
    tp = np.sum(w[m] * d[m] * (y[m] == 1)) / W
    fp = np.sum(w[m] * d[m] * (y[m] == 0)) / W
    fn = np.sum(w[m] * (1 - d[m]) * (y[m] == 1)) / W
    return tp, fp, fn


def test_ratio_metrics_against_brute_force_counts():
    ds, y, g, w = _data(seed=5)
    ctx = ds.context()
    d = np.random.default_rng(3).integers(0, 2, y.size).astype(float)
    tp, fp, fn = _counts(d, y, w)
    assert metrics.f_measure(ctx).evaluate(d) == pytest.approx(2 * tp / (2 * tp + fp + fn), abs=1e-12)
    assert metrics.f_measure(ctx, beta=2).evaluate(d) == pytest.approx(5 * tp / (5 * tp + 4 * fn + fp), abs=1e-12)
    assert metrics.precision(ctx).evaluate(d) == pytest.approx(tp / (tp + fp), abs=1e-12)
    f = [2 * a / (2 * a + b + c) for a, b, c in (_counts(d, y, w, g == v) for v in (0, 1))]
    par = metrics.f_measure_parity(ctx.subset(group="g", value=0), ctx.subset(group="g", value=1))
    assert par.evaluate(d) == pytest.approx(f[0] - f[1], abs=1e-12)
    # Algebra with affine terms and scalars; >= is stated as an upper bound on the negation.
    mixed = 2 * par - rateopt.positive_prediction_rate(ctx) + 0.5
    ppr = np.sum(w * d) / np.sum(w)
    assert mixed.evaluate(d) == pytest.approx(2 * (f[0] - f[1]) - ppr + 0.5, abs=1e-12)
    c = par >= -0.02
    problem = rateopt.Problem(constraints=[c])
    assert problem.evaluate(d).constraints[c.name] == pytest.approx(-(f[0] - f[1]) - 0.02, abs=1e-12)


def test_ratio_gradient_matches_finite_differences():
    ds, *_ = _data()
    par = metrics.f_measure_parity(ds.context().subset(group="g", value=0), ds.context().subset(group="g", value=1))
    z = np.array([0.3, 0.7, 0.25, 0.6])
    g = par.gradient(z)
    h = 1e-7
    fd = [(par.value(z + h * e) - par.value(z - h * e)) / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_ratio_slack_gradients_match_finite_differences():
    from rateopt.games.three_player import _RatioBlock

    ds, *_ = _data()
    ctx = ds.context()
    par = metrics.f_measure(ctx.subset(group="g", value=0)) - 0.5 * metrics.precision(ctx)
    rows = rateopt.Problem(objective=par).compiled.metric
    block = _RatioBlock(rows)
    rng = np.random.default_rng(0)
    block.lamN, block.lamD = rng.uniform(0, 1, 2), rng.uniform(0, 1, 2)
    block.a, block.b = np.array([0.2, 0.1]), np.array([0.5, 0.4])
    N, D = np.array([0.3, 0.15]), np.array([0.6, 0.3])
    weight = 0.7

    def lagrangian(a, b):
        return (weight * block.c @ (a / b) + block.lamN @ (block.sigma * (N - a))
                + block.lamD @ (block.sigma * (b - D)))

    da, db = block.slack_gradients(weight)
    h = 1e-7
    for i in range(2):
        e = np.eye(2)[i]
        assert da[i] == pytest.approx((lagrangian(block.a + h * e, block.b) - lagrangian(block.a - h * e, block.b))
                                      / (2 * h), rel=1e-6)
        assert db[i] == pytest.approx((lagrangian(block.a, block.b + h * e) - lagrangian(block.a, block.b - h * e))
                                      / (2 * h), rel=1e-6)


def test_a_ratio_with_a_zero_denominator_counts_as_zero():
    ds, y, g, w = _data()
    prec = metrics.precision(ds.context())
    assert prec.evaluate(np.zeros(y.size)) == 0.0  # no predicted positives: sklearn's zero_division=0


# --------------------------------------------------------------------------- sums, floors, linear rewrites


def test_a_sum_of_metrics_is_the_sum_and_its_best_response_is_a_grid_argmin():
    ds, y, g, w = _data(seed=7)
    ctx = ds.context()
    a, b = (metrics.kl_divergence(ctx.subset(group="g", value=v)) for v in (0, 1))
    total = sum([a, b])
    assert isinstance(total, metrics.MetricSum) and total.n_rates == 4
    assert (a + b + metrics.g_mean(ctx)).n_rates == 6  # sums flatten
    d = np.random.default_rng(1).integers(0, 2, y.size).astype(float)
    assert total.evaluate(d) == pytest.approx(a.evaluate(d) + b.evaluate(d), abs=1e-12)
    rng = np.random.default_rng(2)
    for _ in range(5):
        lam = rng.uniform(0, 3, 4)
        xi = total.best_response(lam)
        # The separable Lagrangian psi_a + psi_b - <s lam, xi> on a grid, from the definitions.
        X, Y = np.meshgrid(GRID, GRID, indexing="ij")
        best = 0.0
        for part, sl in ((a, slice(0, 2)), (b, slice(2, 4))):
            L = _psi_grid(part, X, Y) - part.signs[0] * lam[sl][0] * X - part.signs[1] * lam[sl][1] * Y
            best += np.nanmin(L)
        got = total.value(xi) - float(total.signs @ (lam * xi))
        assert got <= best + 1e-9
    with pytest.raises(TypeError, match="no arithmetic"):
        a + metrics.f_measure(ctx)
    with pytest.raises(TypeError, match="from below"):
        total >= 0.1  # noqa: B015


def test_a_mean_floor_is_a_bound_on_the_loss():
    ds, y, g, w = _data(seed=8)
    ctx = ds.context()
    d = np.random.default_rng(4).integers(0, 2, y.size).astype(float)
    tpr = np.sum(w * d * y) / np.sum(w * y)
    tnr = np.sum(w * (1 - d) * (1 - y)) / np.sum(w * (1 - y))
    c = metrics.g_mean(ctx) >= 0.8
    assert isinstance(c, metrics.MetricConstraint) and c.name.startswith("G-mean")
    value = rateopt.Problem(constraints=[c]).evaluate(d).constraints[c.name]
    assert value == pytest.approx(0.8 - np.sqrt(tpr * tnr), abs=1e-12)  # g <= 0 iff G-mean >= 0.8
    h = metrics.h_mean(ctx) >= 0.5
    assert rateopt.Problem(constraints=[h]).evaluate(d).constraints[h.name] == pytest.approx(
        0.5 - 2 * tpr * tnr / (tpr + tnr), abs=1e-12)
    with pytest.raises(TypeError, match="from below"):
        metrics.q_mean(ctx) >= 0.1  # noqa: B015


@pytest.mark.parametrize("sense", ["<=", ">="])
def test_a_single_ratio_bound_is_rewritten_to_a_linear_constraint(sense):
    ds, y, g, w = _data(seed=9)
    ctx = ds.context()
    f1 = metrics.f_measure(ctx)
    c = (f1 >= 0.55) if sense == ">=" else (f1 <= 0.55)
    assert isinstance(c, rateopt.Constraint)  # linear: every game takes it
    problem = rateopt.Problem(constraints=[c])
    rng = np.random.default_rng(5)
    for _ in range(50):
        d = (rng.uniform(size=y.size) < rng.uniform(0.05, 0.95)).astype(float)
        tp, fp, fn = _counts(d, y, w)
        f = 2 * tp / (2 * tp + fp + fn)
        g_lin = problem.evaluate(d).constraints[c.name]
        holds = f >= 0.55 if sense == ">=" else f <= 0.55
        assert (g_lin <= 1e-12) == holds
        # The linear value is the ratio's violation times its (positive) denominator.
        viol = 0.55 - f if sense == ">=" else f - 0.55
        assert g_lin == pytest.approx(viol * (2 * tp + fp + fn), abs=1e-12)
    # Constant offsets and negations keep the rewrite; two ratios, or an affine term of rates, do not.
    assert isinstance(1 - f1 <= 0.3, rateopt.Constraint)
    assert isinstance(-metrics.precision(ctx) <= -0.7, rateopt.Constraint)
    assert isinstance(metrics.f_measure_parity(ctx.subset(group="g", value=0), ctx) <= 0.02,
                      metrics.MetricConstraint)
    assert isinstance(f1 + rateopt.positive_prediction_rate(ctx) >= 0.5, metrics.MetricConstraint)
    # A denominator that can be negative is not rewritten.
    odd = metrics.ratio(rateopt.true_positive_rate(ctx), 1 - 2 * rateopt.positive_prediction_rate(ctx))
    assert isinstance(odd >= 0.1, metrics.MetricConstraint)


def test_predictive_parity_and_win_loss_ratio_against_brute_force_counts():
    rng = np.random.default_rng(11)
    n = 500
    X = rng.normal(size=(n, 2))
    y = rng.integers(0, 2, n)
    g = rng.integers(0, 2, n)
    base = rng.integers(0, 2, n)
    w = rng.uniform(0.5, 2.0, n)
    ds = rateopt.Dataset(X, y, weights=w, groups={"g": g}, baseline=base)
    ctx = ds.context()
    d = rng.integers(0, 2, n).astype(float)
    prec = []
    for v in (0, 1):
        m = g == v
        prec.append(np.sum(w[m] * d[m] * y[m]) / np.sum(w[m] * d[m]))
    pp = metrics.predictive_parity(ctx.subset(group="g", value=0), ctx.subset(group="g", value=1))
    assert pp.evaluate(d) == pytest.approx(prec[0] - prec[1], abs=1e-12)
    # Wins: the model is right where the baseline was wrong; losses the reverse.
    right, base_right = d == y, base == y
    wins, losses = np.sum(w * (right & ~base_right)), np.sum(w * (~right & base_right))
    wl = metrics.win_loss_ratio(ctx)
    assert wl.evaluate(d) == pytest.approx(wins / losses, abs=1e-12)
    floor = wl >= 1.2
    assert isinstance(floor, rateopt.Constraint)
    value = rateopt.Problem(constraints=[floor]).evaluate(d).constraints[floor.name]
    assert value == pytest.approx((1.2 * losses - wins) / np.sum(w), abs=1e-12)


def test_metric_params_round_trip():
    ds, y, g, w = _data(seed=12)
    ctx = ds.context()
    d = np.random.default_rng(6).uniform(size=y.size)
    for m in (metrics.kl_divergence(ctx) + metrics.g_mean(ctx), metrics.q_mean(ctx),
              metrics.f_measure_parity(ctx.subset(group="g", value=0), ctx) - 0.5 * rateopt.error_rate(ctx),
              -metrics.f_measure(ctx)):
        z = np.array([rateopt.Problem(objective=e).evaluate(d, kind="probabilities").objective for e in m.rates])
        back = metrics.metric_from_params(m.params())
        assert back.value(z) == pytest.approx(m.value(z), abs=1e-15)
        np.testing.assert_allclose(back.gradient(z), m.gradient(z), rtol=1e-15)
    for bad in ({"kind": "nope", "signs": [1.0, 1.0]}, {"kind": "ratio", "coefficients": ["x"], "affine": True},
                {"kind": "kld", "signs": [-1.0, -1.0], "target": 2.0}, {"kind": "sum", "parts": []}, [1]):
        with pytest.raises(ValueError):
            metrics.metric_from_params(bad)


# --------------------------------------------------------------------------- refused arguments and bounds


@pytest.mark.parametrize("beta", [-1, 0, 0.0, float("nan"), float("inf"), True, "2"])
def test_f_measure_refuses_a_beta_that_is_not_positive(beta):
    ctx = _data()[0].context()
    with pytest.raises(rateopt.exceptions.RateoptError,
                       match=rf"^beta must be a positive finite number, got {re.escape(repr(beta))}$"):
        metrics.f_measure(ctx, beta=beta)
    with pytest.raises(rateopt.exceptions.RateoptError, match=r"^beta must be a positive finite number"):
        metrics.f_measure_parity(ctx, ctx, beta=beta)


def _bounds_that_never_hold(ctx):
    a, b = ctx.subset(group="g", value=0), ctx.subset(group="g", value=1)
    return [
        (lambda: metrics.g_mean(ctx) >= 1.5, "'G-mean[all] >= 1.5' can never hold: G-mean[all] takes values in [0, 1]"),
        (lambda: metrics.h_mean(ctx) >= 1.01, "'H-mean[all] >= 1.01' can never hold: H-mean[all] takes values in "
                                              "[0, 1]"),
        (lambda: metrics.g_mean(ctx) <= -0.1, "'gmean[all] <= -0.1' can never hold: gmean[all] takes values in [0, 1]"),
        (lambda: metrics.q_mean(ctx) <= -0.5, "'qmean[all] <= -0.5' can never hold: qmean[all] takes values in [0, 1]"),
        (lambda: metrics.kl_divergence(ctx) <= -0.1, "'kld[all] <= -0.1' can never hold: kld[all] takes values in "
                                                     "[0, inf]"),
        (lambda: metrics.kl_divergence(a) + metrics.kl_divergence(b) <= -1e-3,
         "'kld[g=0] + kld[g=1] <= -0.001' can never hold: kld[g=0] + kld[g=1] takes values in [0, inf]"),
        (lambda: metrics.f_measure(ctx) >= 1.5, "'f1[all] >= 1.5' can never hold: f1[all] takes values in [0, 1]"),
        (lambda: metrics.f_measure(ctx) <= -0.2, "'f1[all] <= -0.2' can never hold: f1[all] takes values in [0, 1]"),
        (lambda: metrics.precision(ctx) >= 2, "'precision[all] >= 2' can never hold: precision[all] takes values in "
                                              "[0, 1]"),
        (lambda: metrics.f_measure_parity(a, b) <= -1.5,
         "'(f1[g=0] - f1[g=1]) <= -1.5' can never hold: (f1[g=0] - f1[g=1]) takes values in [-1, 1]"),
        (lambda: -2 * metrics.predictive_parity(a, b) >= 2.5,
         "'-2 * (precision[g=0] - precision[g=1]) >= 2.5' can never hold: -2 * (precision[g=0] - precision[g=1]) "
         "takes values in [-2, 2]"),
    ]


@pytest.mark.parametrize("i", range(11))
def test_a_bound_outside_the_metrics_range_is_refused(i):
    ctx = _data()[0].context()
    build, message = _bounds_that_never_hold(ctx)[i]
    with pytest.raises(rateopt.exceptions.RateoptError, match=f"^{re.escape(message)}$"):
        build()


def test_bounds_at_the_ends_of_the_range_are_accepted():
    ctx = _data()[0].context()
    a, b = ctx.subset(group="g", value=0), ctx.subset(group="g", value=1)
    for c in (metrics.g_mean(ctx) >= 1.0, metrics.q_mean(ctx) <= 0.0, metrics.f_measure(ctx) >= 1.0,
              metrics.f_measure_parity(a, b) <= -1.0, metrics.kl_divergence(ctx) <= 0.0,
              metrics.ratio(rateopt.positive_prediction_rate(a), rateopt.positive_prediction_rate(b)) >= 1e6):
        assert c is not None


def test_a_ratio_over_the_constant_zero_is_refused_and_a_constant_denominator_evaluates():
    ds, y, g, w = _data()
    ppr = rateopt.positive_prediction_rate(ds.context())
    for zero in (0, 0.0, np.float64(0.0)):
        with pytest.raises(rateopt.exceptions.RateoptError,
                           match=r"^ratio\(\): the denominator is the constant 0, so the ratio would be 0 "
                                 r"for every model \(a zero denominator counts as 0\): give a rate expression$"):
            metrics.ratio(ppr, zero)
    d = np.random.default_rng(9).integers(0, 2, y.size).astype(float)
    assert metrics.ratio(ppr, 2).evaluate(d) == pytest.approx(np.sum(w * d) / np.sum(w) / 2, abs=1e-15)


def test_an_f_measure_or_precision_on_a_subset_without_positive_labels_is_refused():
    X = np.zeros((4, 1))
    ds = rateopt.Dataset(X, [0, 0, 1, 1], groups={"g": [0, 0, 1, 1]})
    none = ds.context().subset(group="g", value=0)
    for build, what in ((metrics.f_measure, "F-measure"), (metrics.precision, "precision")):
        with pytest.raises(rateopt.exceptions.EmptySubsetError,
                           match=rf"^{what}\[g=0\]: subset 'g=0' of dataset 'train' has no positive label of "
                                 rf"positive weight, so its {what} is 0 for every model$"):
            build(none)
        assert build(ds.context().subset(group="g", value=1)).evaluate(np.array([0, 0, 1, 0])) == pytest.approx(
            {"F-measure": 2 / 3, "precision": 1.0}[what])


# --------------------------------------------------------------------------- issue 24 item 5: exact zeros


def _constant_rates_cases():
    for seed in range(4):
        ds, y, g, w = _data(n=397, seed=seed)
        assert np.ptp(w) > 1.0  # non-uniform weights
        ctx = ds.context()
        for sub in (ctx, ctx.subset(group="g", value=0), ctx.subset(group="g", value=1)):
            yield ds, sub


def _kld_at(p, z1, z2):
    """The KL divergence's documented formula at coordinates (z1, z2), term by term."""
    import math

    e = metrics.KLD_EPS
    terms = [0.0 if a == 0.0 else a * math.log((a + e) / (z + e)) for a, z in ((p, z1), (1.0 - p, z2))]
    return float(terms[0] + terms[1])


@pytest.mark.parametrize("decision, gmean_loss, kld_coords", [(1.0, 1.0, (1.0, 0.0)), (0.0, 1.0, (0.0, 1.0))])
def test_metrics_of_a_constant_classifier_are_exact_with_non_uniform_weights(decision, gmean_loss, kld_coords):
    """An all-one (all-zero) classifier has TNR (TPR) and NPR (PPR) exactly 0: the G-mean loss is exactly 1
    and the KL divergence is its formula at exactly (1, 0) (at (0, 1)), on every evaluation path."""
    from rateopt._training._spec import Combinations, kernel_pass, spec_from_problem

    for ds, sub in _constant_rates_cases():
        d = np.full(ds.n_samples, decision)
        gm, kl = metrics.g_mean(sub), metrics.kl_divergence(sub, target=0.3)
        expected_kl = _kld_at(0.3, *kld_coords)
        assert gm.evaluate(d) == gmean_loss and kl.evaluate(d) == expected_kl
        for m, expected in ((gm, gmean_loss), (kl, expected_kl)):
            problem = rateopt.Problem(objective=m, constraints=[])
            ev = problem.evaluate(d)
            assert ev.objective == expected, (sub.label, m.name)
            zero = [v for k, v in ev.rates.items() if k.startswith(("tnr", "npr") if decision else ("tpr", "ppr"))]
            assert zero and all(v == 0.0 for v in zero), ev.rates
            # The training path: the core's atom rates of a model scoring every row +-1, any thread count.
            spec = spec_from_problem(problem)
            for n_threads in (1, 2, 3):
                rates = kernel_pass(spec, np.zeros(2), 1.0 if decision else -1.0,
                                    Combinations.single(np.zeros(spec.n_atoms)), n_threads=n_threads).rates
                assert spec.metric.objective(rates) == expected, (sub.label, m.name, n_threads)
