"""Certificates: the exact binomial interval, Hoeffding's, and coverage on a population with known rates."""

import math

import numpy as np
import pytest
import rateopt as ro
from rateopt._postprocess._certify import certify_expressions, clopper_pearson, hoeffding

# A population: group a (60 %) or b; label y ~ Bernoulli(prevalence[g]); a score x in 0..4 whose law given
# (g, y) is below; the classifier is "x >= threshold[g]". Every rate is a finite sum of these probabilities.
P_GROUP = {"a": 0.6, "b": 0.4}
PREVALENCE = {"a": 0.3, "b": 0.5}
P_X = {("a", 0): [0.35, 0.3, 0.2, 0.1, 0.05], ("a", 1): [0.05, 0.1, 0.25, 0.3, 0.3],
       ("b", 0): [0.2, 0.3, 0.25, 0.15, 0.1], ("b", 1): [0.1, 0.1, 0.2, 0.3, 0.3]}
THRESHOLD = {"a": 2, "b": 3}


def _population_rates():
    """Exact population rates of the classifier, from the probabilities above."""
    joint = {}  # P(g, y, positive decision)
    for g in P_GROUP:
        for y in (0, 1):
            py = PREVALENCE[g] if y else 1 - PREVALENCE[g]
            pos = sum(P_X[(g, y)][x] for x in range(5) if x >= THRESHOLD[g])
            joint[(g, y)] = (P_GROUP[g] * py, P_GROUP[g] * py * pos)
    mass = lambda cond: sum(m for k, (m, _) in joint.items() if cond(*k))
    posm = lambda cond: sum(p for k, (_, p) in joint.items() if cond(*k))
    out = {"ppr": posm(lambda g, y: True),
           "tpr": posm(lambda g, y: y == 1) / mass(lambda g, y: y == 1),
           "error": posm(lambda g, y: y == 0) + mass(lambda g, y: y == 1) - posm(lambda g, y: y == 1)}
    for grp in P_GROUP:
        out[f"ppr_{grp}"] = posm(lambda g, y: g == grp) / mass(lambda g, y: g == grp)
        out[f"tpr_{grp}"] = posm(lambda g, y: g == grp and y == 1) / mass(lambda g, y: g == grp and y == 1)
    return out


def _sample(n, rng):
    g = rng.choice(list(P_GROUP), n, p=list(P_GROUP.values()))
    y = (rng.random(n) < np.array([PREVALENCE[gi] for gi in g])).astype(int)
    x = np.array([rng.choice(5, p=P_X[(gi, yi)]) for gi, yi in zip(g, y)])
    d = (x >= np.array([THRESHOLD[gi] for gi in g])).astype(float)
    return g, y, d


def _goals(ds):
    ctx = ds.context()
    out = []
    for grp in P_GROUP:
        sub = ctx.subset(group="g", value=grp)
        out += [ro.positive_prediction_rate(sub) <= ro.positive_prediction_rate(ctx) + 0.05,
                ro.positive_prediction_rate(sub) >= ro.positive_prediction_rate(ctx) - 0.05,
                ro.true_positive_rate(sub) >= ro.true_positive_rate(ctx) - 0.05]
    out.append(ro.positive_prediction_rate(ctx) <= 0.5)
    return out


def _true_values(rates):
    """The goals' population ``g`` values, in the order of :func:`_goals`."""
    out = []
    for grp in P_GROUP:
        out += [rates[f"ppr_{grp}"] - rates["ppr"] - 0.05, rates["ppr"] - 0.05 - rates[f"ppr_{grp}"],
                rates["tpr"] - 0.05 - rates[f"tpr_{grp}"]]
    out.append(rates["ppr"] - 0.5)
    return np.array(out)


def test_clopper_pearson_closed_forms():
    # k = 0: hi solves (1 - p)^n = alpha / 2; k = n: lo solves p^n = alpha / 2
    assert clopper_pearson(0, 10, 0.05) == (0.0, pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-12))
    assert clopper_pearson(10, 10, 0.05) == (pytest.approx(0.025 ** (1 / 10), rel=1e-12), 1.0)
    lo, hi = clopper_pearson(7, 20, 0.1)
    from scipy.stats import binom
    # the defining tail equations of the exact interval
    assert binom.sf(6, 20, lo) == pytest.approx(0.05, rel=1e-9)
    assert binom.cdf(7, 20, hi) == pytest.approx(0.05, rel=1e-9)


def test_hoeffding_closed_form():
    v = np.array([0.0, 1.0, 1.0, 0.5])
    w = np.array([1.0, 2.0, 1.0, 4.0])
    lo, hi = hoeffding(v, w, 0.1)
    mean = (2 + 1 + 2) / 8
    half = math.sqrt(math.log(2 / 0.1) * (1 + 4 + 1 + 16) / (2 * 64))
    assert (lo, hi) == (pytest.approx(max(0, mean - half)), pytest.approx(min(1, mean + half)))


def test_certificate_bounds_cover_the_population_values():
    truth = _true_values(_population_rates())
    rng = np.random.default_rng(20261126)
    reps, n, held = 300, 600, 0
    errors_covered = 0
    true_error = _population_rates()["error"]
    for _ in range(reps):
        g, y, d = _sample(n, rng)
        ds = ro.Dataset(np.zeros((n, 1)), y, groups={"g": g}, name="heldout")
        cert = certify_expressions(_goals(ds), ro.error_rate(ds.context()), {"heldout": d}, confidence=0.95)
        upper = np.array([b.upper for b in cert.goals])
        held += bool(np.all(upper >= truth))
        lo, hi = cert.objective_interval
        errors_covered += lo <= true_error <= hi
        # the estimate is the plain held-out value of g
        assert cert.goals[-1].value == pytest.approx(d.mean() - 0.5)
    assert held / reps >= 0.95
    assert errors_covered / reps >= 0.95


def test_certificate_certifies_with_enough_data_and_not_with_too_little():
    rng = np.random.default_rng(7)
    g, y, d = _sample(20000, rng)
    ds = ro.Dataset(np.zeros((g.size, 1)), y, groups={"g": g}, name="h")
    cert = certify_expressions([ro.positive_prediction_rate(ds.context()) <= 0.5], None, {"h": d})
    assert cert.certified  # the population's ppr is well below 0.5
    g, y, d = _sample(30, rng)
    ds = ro.Dataset(np.zeros((g.size, 1)), y, groups={"g": g}, name="h")
    small = certify_expressions([ro.positive_prediction_rate(ds.context()) <= _population_rates()["ppr"] + 0.02],
                                None, {"h": d})
    assert not small.certified


def test_confidence_is_validated():
    ds = ro.Dataset(np.zeros((4, 1)), [0, 1, 0, 1], name="h")
    with pytest.raises(ro.exceptions.RateoptError, match="confidence"):
        certify_expressions([ro.positive_prediction_rate(ds.context()) <= 0.5], None, {"h": np.ones(4)},
                            confidence=1.5)


# --------------------------------------------------------------------------- the union bound counts distinct rates
def _cp(k, n, alpha):
    """The Clopper-Pearson interval written out from the Beta quantiles (independent of the module's)."""
    from scipy.stats import beta
    lo = 0.0 if k == 0 else beta.ppf(alpha / 2, k, n - k + 1)
    hi = 1.0 if k == n else beta.ppf(1 - alpha / 2, k + 1, n - k)
    return lo, hi


def _three_groups(n=900, seed=3):
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], n)
    y = rng.integers(0, 2, n)
    d = (rng.random(n) < np.where(y == 1, 0.7, 0.3)).astype(float)
    return g, y, d


def test_a_rate_used_by_two_goals_is_one_rate_of_the_union_bound():
    g, y, d = _three_groups()
    ds = ro.Dataset(np.zeros((g.size, 1)), y, groups={"g": g}, name="h")
    # two goals, each with its own leaf object for the same rate: one rate, so the full alpha goes to it
    cons = [ro.positive_prediction_rate(ds.context()) <= 0.6, ro.positive_prediction_rate(ds.context()) >= 0.2]
    cert = certify_expressions(cons, None, {"h": d}, confidence=0.9)
    lo, hi = _cp(int(d.sum()), d.size, 0.1)
    assert cert.goals[0].upper == pytest.approx(hi - 0.6, rel=1e-12)
    assert cert.goals[1].upper == pytest.approx(0.2 - lo, rel=1e-12)


def test_pairwise_equalized_odds_on_three_groups_spends_alpha_over_seven_rates():
    from rateopt.goals import equalized_odds
    g, y, d = _three_groups()
    ds = ro.Dataset(np.zeros((g.size, 1)), y, groups={"g": g}, name="h")
    ctx = ds.context()
    alpha = 0.05 / 7  # tpr and fpr of 3 groups, and the error rate: 7 distinct rates (25 uses)
    counts = {}
    for grp in "abc":
        for rate, label in (("tpr", 1), ("fpr", 0)):
            rows = (g == grp) & (y == label)
            counts[(rate, grp)] = _cp(int(d[rows].sum()), int(rows.sum()), alpha)
    # the goal as the library builds it: the objective's interval shows the per-rate level
    built = equalized_odds("g", slack=0.1, pairwise=True)._build(ds)
    assert len(built) == 12
    cert = certify_expressions(built, ro.error_rate(ctx), {"h": d})
    err = int(np.sum(d != y))
    assert cert.objective_interval == pytest.approx(_cp(err, d.size, alpha), rel=1e-12)
    # the same goals written out by hand, every use a fresh leaf object
    pairs = [(rate, a, b) for rate in ("tpr", "fpr") for a in "abc" for b in "abc" if a != b]
    fn = {"tpr": ro.true_positive_rate, "fpr": ro.false_positive_rate}
    cons = [fn[r](ctx.subset(group="g", value=a)) <= fn[r](ctx.subset(group="g", value=b)) + 0.1
            for r, a, b in pairs]
    cert = certify_expressions(cons, ro.error_rate(ctx), {"h": d})
    for bound, (r, a, b) in zip(cert.goals, pairs):
        assert bound.upper == pytest.approx(counts[(r, a)][1] - counts[(r, b)][0] - 0.1, rel=1e-12)


def test_k_class_rates_shared_by_goals_are_counted_once():
    rng = np.random.default_rng(11)
    n = 1200
    g = rng.choice(["a", "b"], n)
    y = rng.integers(0, 3, n)
    pred = np.where(rng.random(n) < 0.6, y, rng.integers(0, 3, n))  # class positions (classes 0, 1, 2)
    ds = ro.ClassDataset(np.zeros((n, 1)), y, groups={"g": g}, name="h")
    ctx = ds.context()
    sub = {grp: ctx.subset(group="g", value=grp) for grp in "ab"}
    cons = []
    for k in range(3):  # both directions: every recall is used twice
        cons.append(ro.class_recall(sub["a"], k) - ro.class_recall(sub["b"], k) <= 0.1)
        cons.append(ro.class_recall(sub["b"], k) - ro.class_recall(sub["a"], k) <= 0.1)
    alpha = 0.05 / 9  # 6 recalls and the 3 diagonal confusion entries of the error rate
    cert = certify_expressions(cons, ro.multiclass_error_rate(ctx), {"h": pred.astype(np.int64)})
    recall = {}
    for grp in "ab":
        for k in range(3):
            rows = (g == grp) & (y == k)
            recall[(grp, k)] = _cp(int(np.sum(pred[rows] == k)), int(rows.sum()), alpha)
    for i, k in enumerate(range(3)):
        assert cert.goals[2 * i].upper == pytest.approx(recall[("a", k)][1] - recall[("b", k)][0] - 0.1, rel=1e-12)
        assert cert.goals[2 * i + 1].upper == pytest.approx(recall[("b", k)][1] - recall[("a", k)][0] - 0.1,
                                                            rel=1e-12)
    # the error rate is 1 minus three confusion entries, each with its own interval at alpha / 9
    diag = [_cp(int(np.sum((pred == k) & (y == k))), n, alpha) for k in range(3)]
    assert cert.objective_interval == pytest.approx((1 - sum(h for _, h in diag), 1 - sum(lo for lo, _ in diag)),
                                                    rel=1e-12)
