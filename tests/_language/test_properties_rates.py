"""Property-based tests of the rate language: random expressions vs brute force.

Hypothesis builds random subsets (group values, label and baseline cells, an age
threshold, combined with ``&``, ``|``, ``~``), random rate expressions over them
(every rate function of ``rateopt``, combined with ``+``, ``-``, scalar ``*`` and
``/`` and constants), and random decisions, scores or probabilities.
``Problem.evaluate`` must equal a plain loop over examples that follows the
definitions of the rates (tests/_rate_reference.py), and a constraint
``expr <= k`` must evaluate to ``expr - k``. A rate over an empty (or
zero-weight) subset raises ``EmptySubsetError``, exactly when the loop divides
by zero or the subset is empty; a constraint raises ``ConstantConstraintError``
only when its value does not depend on the decisions.
"""

from __future__ import annotations

import functools

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st

from rateopt._language import _rates as R
from rateopt._compiler._problem import Problem
from rateopt.exceptions import ConstantConstraintError, EmptySubsetError

import _properties_support as S
from _rate_reference import brute, make_data, member_list, weight

N = 40
RATES = {
    "ppr": R.positive_prediction_rate,
    "npr": R.negative_prediction_rate,
    "tpr": R.true_positive_rate,
    "fnr": R.false_negative_rate,
    "fpr": R.false_positive_rate,
    "tnr": R.true_negative_rate,
    "error": R.error_rate,
    "accuracy": R.accuracy,
    "tp_prop": R.true_positive_proportion,
    "fp_prop": R.false_positive_proportion,
    "tn_prop": R.true_negative_proportion,
    "fn_prop": R.false_negative_proportion,
    "pos_count": R.positive_prediction_count,
    "neg_count": R.negative_prediction_count,
    "tp_count": R.true_positive_count,
    "fp_count": R.false_positive_count,
    "tn_count": R.true_negative_count,
    "fn_count": R.false_negative_count,
    "churn": R.churn_rate,
    "loss_churn": R.loss_only_churn_rate,
    "loss_churn_bc": lambda c: R.loss_only_churn_rate(c, normalize="baseline_correct"),
    "win_rate": R.win_rate,
    "loss_rate": R.loss_rate,
    "win_count": R.win_count,
    "loss_count": R.loss_count,
    "prevalence": R.prevalence,
    "baseline_ppr": R.baseline_positive_rate,
    "baseline_accuracy": R.baseline_accuracy,
}


@functools.lru_cache(maxsize=None)
def dataset(seed):
    """Small random datasets; seeds 2 and 3 have examples of weight 0 (zero-weight subsets)."""
    return make_data(seed, n=N, zero_weight_frac=0.3 if seed >= 2 else 0.0)


# --------------------------------------------------------------------------- subsets

LEAF_SUBSETS = st.one_of(
    st.just(("all",)),
    st.tuples(st.just("sex"), st.sampled_from(["F", "M"])),
    st.tuples(st.just("race"), st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True)),
    st.tuples(st.just("age>"), st.sampled_from([20, 45, 70, 79])),
    st.tuples(st.just("y"), st.sampled_from([0, 1])),
    st.tuples(st.just("b"), st.sampled_from([0, 1])),
)
SUBSETS = st.recursive(
    LEAF_SUBSETS,
    lambda inner: st.one_of(st.tuples(st.just("and"), inner, inner), st.tuples(st.just("or"), inner, inner),
                            st.tuples(st.just("not"), inner)),
    max_leaves=3,
)


def build_subset(ds, node):
    """The Context of ``node`` and its membership condition ``cond(rec, j)``."""
    ctx = ds.context()
    kind = node[0]
    if kind == "all":
        return ctx, lambda r, j: True
    if kind == "sex":
        return ctx.subset(group="sex", value=node[1]), lambda r, j, v=node[1]: r["sex"][j] == v
    if kind == "race":
        vals = list(node[1])
        return ctx.subset(group="race", value=vals), lambda r, j: r["race"][j] in vals
    if kind == "age>":
        t = node[1]
        return ctx.subset(ds.groups["age"] > t, name=f"age>{t}"), lambda r, j: r["age"][j] > t
    if kind == "y":
        return (ctx.positive() if node[1] else ctx.negative()), lambda r, j, v=node[1]: r["y"][j] == v
    if kind == "b":
        return ((ctx.baseline_positive() if node[1] else ctx.baseline_negative()),
                lambda r, j, v=node[1]: r["b"][j] == v)
    if kind == "not":
        a, fa = build_subset(ds, node[1])
        return ~a, lambda r, j: not fa(r, j)
    a, fa = build_subset(ds, node[1])
    b, fb = build_subset(ds, node[2])
    if kind == "and":
        return a & b, lambda r, j: fa(r, j) and fb(r, j)
    return a | b, lambda r, j: fa(r, j) or fb(r, j)


# --------------------------------------------------------------------------- expressions

SCALARS = st.one_of(st.sampled_from([1.0, -1.0, 2.0, 0.5, 0.0]), st.floats(-10.0, 10.0), st.integers(-3, 3))
LEAF_EXPRS = st.tuples(st.just("rate"), st.sampled_from(sorted(RATES)), SUBSETS)
EXPRS = st.recursive(
    LEAF_EXPRS,
    lambda inner: st.one_of(
        st.tuples(st.just("add"), inner, inner),
        st.tuples(st.just("sub"), inner, inner),
        st.tuples(st.just("mul"), SCALARS, inner),
        st.tuples(st.just("rmul"), inner, SCALARS),
        st.tuples(st.just("div"), inner, st.sampled_from([2.0, -4.0, 3.0, 0.5])),
        st.tuples(st.just("const"), inner, SCALARS),
        st.tuples(st.just("neg"), inner),
        st.tuples(st.just("sum"), st.lists(inner, min_size=1, max_size=3)),
    ),
    max_leaves=4,
)


class Empty(Exception):
    """The brute-force loop divides by a zero weight (or the subset is empty)."""


def build_expr(ds, rec, node, v):
    """``(expression, brute-force value, size)``: size bounds the magnitudes summed."""
    kind = node[0]
    if kind == "rate":
        _, short, sub = node
        ctx, cond = build_subset(ds, sub)
        member = member_list(rec, cond)
        try:
            if weight(rec, member) == 0:
                raise ZeroDivisionError
            val = brute(short, rec, member, v)
        except ZeroDivisionError:
            raise Empty(f"{short}[{ctx.name}]") from None
        return RATES[short](ctx), val, max(1.0, abs(val))
    if kind in ("add", "sub"):
        a, va, sa = build_expr(ds, rec, node[1], v)
        b, vb, sb = build_expr(ds, rec, node[2], v)
        return (a + b, va + vb, sa + sb) if kind == "add" else (a - b, va - vb, sa + sb)
    if kind == "mul":
        a, va, sa = build_expr(ds, rec, node[2], v)
        return node[1] * a, node[1] * va, abs(node[1]) * sa
    if kind == "rmul":
        a, va, sa = build_expr(ds, rec, node[1], v)
        return a * node[2], va * node[2], abs(node[2]) * sa
    if kind == "div":
        a, va, sa = build_expr(ds, rec, node[1], v)
        return a / node[2], va / node[2], sa / abs(node[2])
    if kind == "const":
        a, va, sa = build_expr(ds, rec, node[1], v)
        return a + node[2], va + node[2], sa + abs(node[2])
    if kind == "neg":
        a, va, sa = build_expr(ds, rec, node[1], v)
        return -a, -va, sa
    parts = [build_expr(ds, rec, p, v) for p in node[1]]
    return R.sum([p[0] for p in parts]), sum(p[1] for p in parts), sum(p[2] for p in parts)


@st.composite
def predictions(draw):
    kind = draw(st.sampled_from(["decisions", "scores", "probabilities"]))
    if kind == "decisions":
        p = np.array(draw(st.lists(st.booleans(), min_size=N, max_size=N)))
        return p, [float(x) for x in p], kind
    if kind == "scores":
        s = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(-5.0, 5.0), st.sampled_from([-0.0, 1e-300])),
                                   min_size=N, max_size=N)))
        return s, [1.0 if x >= 0 else 0.0 for x in s], kind
    q = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=N, max_size=N)))
    return q, [float(x) for x in q], kind


@settings(max_examples=S.examples(300))
@given(st.integers(0, 3), EXPRS, predictions())
def test_random_expression_matches_brute_force(seed, tree, preds):
    """Problem(objective=expr).evaluate(...) equals the brute-force loop; EmptySubsetError
    exactly when a subset (or a conditional cell a rate divides by) has zero weight."""
    ds, rec = dataset(seed)
    p, v, kind = preds
    try:
        expr, want, size = build_expr(ds, rec, tree, v)
        empty = None
    except Empty as e:
        empty = str(e)
    if empty is not None:
        try:
            expr = build_expr_no_values(ds, tree)
            Problem(objective=expr)
        except EmptySubsetError:
            event("EmptySubsetError")
            return
        raise AssertionError(f"no EmptySubsetError although {empty} has zero weight")
    if not isinstance(expr, R.Expression):
        return  # a literal constant (every rate scaled by 0 folded away)
    got = Problem(objective=expr).evaluate(p, kind=kind).objective
    event("evaluated")
    assert abs(got - want) <= 1e-12 * size, f"{expr}: got {got!r}, brute force {want!r}"


def build_expr_no_values(ds, node):
    kind = node[0]
    if kind == "rate":
        return RATES[node[1]](build_subset(ds, node[2])[0])
    if kind in ("add", "sub"):
        a, b = build_expr_no_values(ds, node[1]), build_expr_no_values(ds, node[2])
        return a + b if kind == "add" else a - b
    if kind == "mul":
        return node[1] * build_expr_no_values(ds, node[2])
    if kind == "rmul":
        return build_expr_no_values(ds, node[1]) * node[2]
    if kind == "div":
        return build_expr_no_values(ds, node[1]) / node[2]
    if kind == "const":
        return build_expr_no_values(ds, node[1]) + node[2]
    if kind == "neg":
        return -build_expr_no_values(ds, node[1])
    return R.sum([build_expr_no_values(ds, p) for p in node[1]])


@settings(max_examples=S.examples(200))
@given(st.integers(0, 3), EXPRS, predictions(), st.floats(-2.0, 2.0), st.booleans())
def test_random_constraint_matches_brute_force(seed, tree, preds, k, upper):
    """``expr <= k`` evaluates to ``expr - k`` (``expr >= k`` to ``k - expr``);
    ConstantConstraintError only when the value does not depend on the decisions."""
    ds, rec = dataset(seed)
    p, v, kind = preds
    try:
        expr, want, size = build_expr(ds, rec, tree, v)
    except Empty:
        return  # covered by the objective test
    if not isinstance(expr, R.Expression):
        return
    con = expr <= k if upper else expr >= k
    try:
        prob = Problem(objective=0.0, constraints=[con])
    except ConstantConstraintError:
        event("ConstantConstraintError")
        # the value is the same for all-negative, all-positive and the drawn decisions
        values = [build_expr(ds, rec, tree, [x] * N)[1] for x in (0.0, 1.0)] + [want]
        assert max(values) - min(values) <= 1e-12 * size, f"{con.name} is not constant: {values}"
        return
    g = prob.evaluate(p, kind=kind).constraints[prob.constraints[0].name]
    event("evaluated")
    want_g = want - k if upper else k - want
    assert abs(g - want_g) <= 1e-12 * (size + abs(k)), f"{con.name}: got {g!r}, brute force {want_g!r}"
