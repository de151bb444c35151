"""Rates and their algebra against brute-force loops over examples (rateopt._language._rates)."""

import pickle

import numpy as np
import pytest

from _rate_reference import brute, make_data, member_list, random_predictions
from rateopt._language import _rates as R
from rateopt._compiler._problem import Problem
from rateopt.exceptions import RateoptError

TOL = 1e-12

RATES = [
    ("ppr", R.positive_prediction_rate),
    ("npr", R.negative_prediction_rate),
    ("tpr", R.true_positive_rate),
    ("fnr", R.false_negative_rate),
    ("fpr", R.false_positive_rate),
    ("tnr", R.true_negative_rate),
    ("error", R.error_rate),
    ("accuracy", R.accuracy),
    ("tp_prop", R.true_positive_proportion),
    ("fp_prop", R.false_positive_proportion),
    ("tn_prop", R.true_negative_proportion),
    ("fn_prop", R.false_negative_proportion),
    ("pos_count", R.positive_prediction_count),
    ("neg_count", R.negative_prediction_count),
    ("tp_count", R.true_positive_count),
    ("fp_count", R.false_positive_count),
    ("tn_count", R.true_negative_count),
    ("fn_count", R.false_negative_count),
    ("churn", R.churn_rate),
    ("loss_churn", R.loss_only_churn_rate),
    ("loss_churn_bc", lambda c: R.loss_only_churn_rate(c, normalize="baseline_correct")),
    ("win_rate", R.win_rate),
    ("loss_rate", R.loss_rate),
    ("win_count", R.win_count),
    ("loss_count", R.loss_count),
    ("prevalence", R.prevalence),
    ("baseline_ppr", R.baseline_positive_rate),
    ("baseline_accuracy", R.baseline_accuracy),
]


def contexts(ds):
    """Overlapping subsets of ``ds`` with their brute-force membership conditions."""
    ctx = ds.context()
    old = ds.groups["age"] > 45
    women = ctx.subset(group="sex", value="F")
    race_b = ctx.subset(group="race", value="b")
    return [
        (ctx, lambda r, j: True),
        (women, lambda r, j: r["sex"][j] == "F"),
        (race_b, lambda r, j: r["race"][j] == "b"),
        (ctx.subset(group="race", value=["a", "c"]), lambda r, j: r["race"][j] in ("a", "c")),
        (women & ctx.subset(old), lambda r, j: r["sex"][j] == "F" and r["age"][j] > 45),
        (women | race_b, lambda r, j: r["sex"][j] == "F" or r["race"][j] == "b"),
        (~women, lambda r, j: r["sex"][j] != "F"),
        (ctx.subset(old, name="old").subset(group="race", value="a"),
         lambda r, j: r["age"][j] > 45 and r["race"][j] == "a"),
    ]


def value(expr, preds, kind="auto"):
    """Evaluate an expression through a Problem (as its objective)."""
    return Problem(objective=expr).evaluate(preds, kind=kind).objective


@pytest.mark.parametrize("short,fn", RATES, ids=[r[0] for r in RATES])
def test_every_rate_matches_brute_force(short, fn):
    for seed in range(2):
        ds, rec = make_data(seed)
        for pk in ("decisions", "scores", "probabilities"):
            preds, v = random_predictions(seed + 10, rec["n"], pk)
            kind = "probabilities" if pk == "probabilities" else "auto"
            for ctx, cond in contexts(ds):
                got = value(fn(ctx), preds, kind)
                want = brute(short, rec, member_list(rec, cond), v)
                assert abs(got - want) <= TOL * max(1.0, abs(want)), (short, ctx.name, pk)


@pytest.mark.parametrize("short,fn", RATES, ids=[r[0] for r in RATES])
def test_every_rate_is_named_and_reported(short, fn):
    ds, rec = make_data(3)
    women = ds.context().subset(group="sex", value="F")
    r = fn(women)
    assert isinstance(r, R.Rate)
    assert r.name == f"{short}[sex=F]"
    preds, v = random_predictions(4, rec["n"], "decisions")
    ev = Problem(objective=0.0 * R.error_rate(ds), constraints=[r + R.positive_prediction_rate(ds)
                                                                 <= 5.0]).evaluate(preds)
    want = brute(short, rec, member_list(rec, lambda r_, j: r_["sex"][j] == "F"), v)
    assert abs(ev.rates[r.name] - want) <= TOL * max(1.0, abs(want))


def test_rate_of_dataset_means_all_of_it():
    ds, rec = make_data(5)
    preds, v = random_predictions(6, rec["n"], "scores")
    assert value(R.true_positive_rate(ds), preds) == value(R.true_positive_rate(ds.context()), preds)
    assert R.error_rate(ds).name == "error[all]"


def test_other_dataset_names_are_prefixed():
    ds, _ = make_data(5, name="holdout")
    assert R.churn_rate(ds.context().subset(group="sex", value="M")).name == "churn[holdout:sex=M]"


def test_rate_needs_a_context():
    with pytest.raises(TypeError, match="takes a Context"):
        R.true_positive_rate(np.ones(3))


# --------------------------------------------------------------------------- identities


def test_identities():
    for seed in range(3):
        ds, rec = make_data(seed)
        preds, _ = random_predictions(seed, rec["n"], "probabilities")
        for ctx, _cond in contexts(ds):
            ev = lambda e, preds=preds: value(e, preds, "probabilities")  # noqa: E731
            assert abs(ev(R.positive_prediction_rate(ctx) + R.negative_prediction_rate(ctx)) - 1) <= TOL
            assert abs(ev(R.accuracy(ctx)) - (1 - ev(R.error_rate(ctx)))) <= TOL
            assert abs(ev(R.true_positive_rate(ctx) + R.false_negative_rate(ctx)) - 1) <= TOL
            assert abs(ev(R.false_positive_rate(ctx) + R.true_negative_rate(ctx)) - 1) <= TOL
            props = R.sum([R.true_positive_proportion(ctx), R.false_positive_proportion(ctx),
                           R.true_negative_proportion(ctx), R.false_negative_proportion(ctx)])
            assert abs(ev(props) - 1) <= TOL
            assert abs(ev(R.loss_rate(ctx)) - ev(R.loss_only_churn_rate(ctx))) <= TOL
            W = float(np.sum(ds.weights[ctx.mask()]))
            assert abs(ev(R.true_positive_count(ctx)) - W * ev(R.true_positive_proportion(ctx))) <= 1e-11
            assert abs(ev(R.win_count(ctx)) - W * ev(R.win_rate(ctx))) <= 1e-11
            assert abs(ev(R.positive_prediction_count(ctx) + R.negative_prediction_count(ctx)) - W) <= 1e-11
            err = ev(R.false_positive_proportion(ctx) + R.false_negative_proportion(ctx))
            assert abs(err - ev(R.error_rate(ctx))) <= TOL


# --------------------------------------------------------------------------- algebra


def test_algebra_matches_brute_force():
    for seed in range(3):
        ds, rec = make_data(seed)
        preds, v = random_predictions(seed + 1, rec["n"], "decisions")
        (c0, f0), (c1, f1), (c2, f2) = contexts(ds)[1], contexts(ds)[4], contexts(ds)[5]
        m0, m1, m2 = (member_list(rec, f) for f in (f0, f1, f2))
        tpr0, fpr1, churn2 = (brute("tpr", rec, m0, v), brute("fpr", rec, m1, v),
                              brute("churn", rec, m2, v))
        a, b, c = R.true_positive_rate(c0), R.false_positive_rate(c1), R.churn_rate(c2)
        cases = [
            (a + b, tpr0 + fpr1),
            (a - b, tpr0 - fpr1),
            (-a, -tpr0),
            (+a, tpr0),
            (0.3 * a, 0.3 * tpr0),
            (a * 0.3, 0.3 * tpr0),
            (a / 4, tpr0 / 4),
            (2 - a, 2 - tpr0),
            (a + 1, tpr0 + 1),
            (1 + a, 1 + tpr0),
            (a - 0.5, tpr0 - 0.5),
            (np.float64(2.0) * a - b / np.float64(3.0), 2 * tpr0 - fpr1 / 3),
            (R.sum([a, b, c]), tpr0 + fpr1 + churn2),
            (R.sum([a, b], start=0.25), 0.25 + tpr0 + fpr1),
            (sum([a, b, c]), tpr0 + fpr1 + churn2),
            ((a - b) * 2 - (c - a) / 5 + 0.1, 2 * (tpr0 - fpr1) - (churn2 - tpr0) / 5 + 0.1),
            (-(a - 3 * b) + c, -(tpr0 - 3 * fpr1) + churn2),
        ]
        for expr, want in cases:
            got = value(expr, preds)
            assert abs(got - want) <= TOL, str(expr)


def test_constraints_normal_form():
    ds, rec = make_data(7)
    preds, v = random_predictions(8, rec["n"], "scores")
    ctx, cond = contexts(ds)[2]
    m = member_list(rec, cond)
    tpr_b, ppr_all = brute("tpr", rec, m, v), brute("ppr", rec, [True] * rec["n"], v)
    a, p = R.true_positive_rate(ctx), R.positive_prediction_rate(ds)
    cases = [
        (a <= 0.4, tpr_b - 0.4),
        (a >= 0.4, 0.4 - tpr_b),
        (0.4 <= a, 0.4 - tpr_b),
        (0.4 >= a, tpr_b - 0.4),
        (a >= p - 0.05, ppr_all - 0.05 - tpr_b),
        (a <= 2 * p, tpr_b - 2 * ppr_all),
        (np.float64(0.3) <= a, 0.3 - tpr_b),
        (np.array(0.3) <= a, 0.3 - tpr_b),
    ]
    for con, want in cases:
        assert isinstance(con, R.Constraint)
        g = Problem(objective=0.0, constraints=[con]).evaluate(preds).constraints[con.name]
        assert abs(g - want) <= TOL, con.name


def test_equal_gives_two_inequalities():
    ds, rec = make_data(9)
    preds, v = random_predictions(9, rec["n"], "decisions")
    ctx, cond = contexts(ds)[1]
    t_f = brute("tpr", rec, member_list(rec, cond), v)
    t_all = brute("tpr", rec, [True] * rec["n"], v)
    cons = R.equal(R.true_positive_rate(ctx), R.true_positive_rate(ds), 0.05)
    assert [c.name for c in cons] == ["tpr[sex=F] <= tpr[all] + 0.05", "tpr[sex=F] >= tpr[all] - 0.05"]
    ev = Problem(constraints=cons).evaluate(preds)
    g = list(ev.constraints.values())
    assert abs(g[0] - (t_f - t_all - 0.05)) <= TOL
    assert abs(g[1] - (t_all - 0.05 - t_f)) <= TOL
    named = R.equal(R.true_positive_rate(ctx), 0.5, 0.1, name="eo")
    assert [c.name for c in named] == ["eo (<=)", "eo (>=)"]
    assert [c.default_name for c in named] == ["tpr[sex=F] <= 0.6", "tpr[sex=F] >= 0.4"]
    exact = R.equal(R.true_positive_rate(ctx), R.true_positive_rate(ds))
    assert [c.name for c in exact] == ["tpr[sex=F] <= tpr[all]", "tpr[sex=F] >= tpr[all]"]
    with pytest.raises(ValueError, match="slack must be a non-negative"):
        R.equal(R.true_positive_rate(ctx), 0.5, -0.1)
    with pytest.raises(TypeError, match="at least one rate expression"):
        R.equal(0.1, 0.2)


# --------------------------------------------------------------------------- guard rails


@pytest.fixture
def rate():
    ds, _ = make_data(0, n=40)
    return R.positive_prediction_rate(ds)


def test_eq_is_refused_with_a_pointer_to_equal(rate):
    with pytest.raises(TypeError, match=r"rateopt\.equal\(a, b, slack\)"):
        rate == 0.3  # noqa: B015
    with pytest.raises(TypeError, match=r"rateopt\.equal"):
        0.3 == rate  # noqa: B015
    with pytest.raises(TypeError, match="'!=' is not supported"):
        rate != 0.3  # noqa: B015


def test_strict_inequalities_are_refused(rate):
    for op in (lambda: rate < 0.3, lambda: rate > 0.3, lambda: 0.3 < rate, lambda: rate < rate):
        with pytest.raises(TypeError, match="strict inequalities"):
            op()


def test_chained_comparison_fails_loudly(rate):
    with pytest.raises(TypeError, match="chained comparison"):
        0.1 <= rate <= 0.2  # noqa: B015
    with pytest.raises(TypeError, match="truth value of a constraint"):
        bool(rate <= 0.2)
    with pytest.raises(TypeError, match="truth value of a rate expression"):
        bool(rate)


def test_numpy_arrays_do_not_hijack_comparisons(rate):
    with pytest.raises(TypeError, match="cannot combine an array"):
        np.array([0.1, 0.2]) <= rate  # noqa: B015
    with pytest.raises(TypeError, match="cannot combine an array"):
        rate >= np.array([0.1, 0.2])  # noqa: B015
    with pytest.raises(TypeError, match="cannot combine an array"):
        np.ones(2) + rate  # noqa: B015
    con = np.float64(0.1) <= rate
    assert isinstance(con, R.Constraint) and con.name == "ppr[all] >= 0.1"


def test_nonlinear_operations_are_refused(rate):
    with pytest.raises(TypeError, match="not linear"):
        rate * rate  # noqa: B015
    with pytest.raises(TypeError, match="not linear"):
        rate / (rate + 1)  # noqa: B015
    with pytest.raises(TypeError, match="cannot divide by a rate expression"):
        2.0 / rate  # noqa: B015
    with pytest.raises(ZeroDivisionError, match="by zero"):
        rate / 0  # noqa: B015
    with pytest.raises(TypeError, match="not linear"):
        rate * R.prevalence(rate.context)  # a data constant is still not a literal number
    with pytest.raises(TypeError):
        rate**2  # noqa: B015
    with pytest.raises(TypeError):
        rate + "0.1"  # noqa: B015
    with pytest.raises(TypeError):
        rate + True  # noqa: B015
    with pytest.raises(ValueError, match="finite"):
        rate + float("nan")  # noqa: B015


def test_expressions_are_immutable_and_pickle(rate):
    e = 2 * rate - 0.5
    with pytest.raises(AttributeError, match="immutable"):
        e.args = ()
    with pytest.raises(AttributeError, match="immutable"):
        rate.context = None
    con = (e <= 0.1).named("budget")
    with pytest.raises(AttributeError, match="immutable"):
        con.sense = ">="
    back = pickle.loads(pickle.dumps(con))
    assert back.name == "budget" and back.default_name == con.default_name
    assert str(pickle.loads(pickle.dumps(e))) == str(e)


def test_expression_properties(rate):
    ctx = rate.context
    assert not rate.is_constant and rate.is_linear_in_rates
    assert R.prevalence(ctx).is_constant and (R.prevalence(ctx) + 1).is_constant
    assert R.Constant(0.5).is_constant
    assert not (R.prevalence(ctx) - rate).is_constant
    assert R.true_positive_rate(ctx).needs_labels and not rate.needs_labels
    assert R.churn_rate(ctx).needs_baseline and not R.churn_rate(ctx).needs_labels
    assert (rate + R.win_rate(ctx)).needs_labels
    assert (rate - R.churn_rate(ctx)).datasets == (ctx.dataset,)
    assert [leaf.name for leaf in (rate + 2 * R.error_rate(ctx)).leaves()] == ["ppr[all]", "error[all]"]


def test_names_and_display(rate):
    ctx = rate.context
    women = ctx.subset(group="sex", value="F")
    tpr = R.true_positive_rate
    assert str(tpr(women) - 0.05) == "tpr[sex=F] - 0.05"
    assert str(0.95 * tpr(ctx)) == "0.95*tpr[all]"
    assert str(-tpr(ctx) + 1) == "-tpr[all] + 1"
    assert str(tpr(women) - 2 * tpr(ctx)) == "tpr[sex=F] - 2*tpr[all]"
    c = tpr(women) >= tpr(ctx) - 0.05
    assert c.name == "tpr[sex=F] >= tpr[all] - 0.05"
    assert not c.has_custom_name
    assert c.named("eo women").name == "eo women" and c.name == "tpr[sex=F] >= tpr[all] - 0.05"
    assert R.Constraint(tpr(women), ">=", 0.8, name="recall").name == "recall"
    assert repr(c) == "Constraint('tpr[sex=F] >= tpr[all] - 0.05')"
    assert "name='x'" in repr(c.named("x"))
    assert R.loss_only_churn_rate(women, "baseline_correct").name == "loss_churn_bc[sex=F]"
    with pytest.raises(ValueError, match="sense"):
        R.Constraint(rate, "==", 0.1)
    with pytest.raises(ValueError, match="non-empty string"):
        c.named("")
    with pytest.raises(RateoptError, match="normalize"):
        R.loss_only_churn_rate(women, "bogus")
