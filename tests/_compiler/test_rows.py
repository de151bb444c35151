"""All forms' atom rows at once (rateopt._compiler._rows.form_rows) against one dictionary sum per form.

The reference is the per-form route the compile used before: for each lowered
form, its coefficients summed per atom in a dict, in the form's term order,
sums that cancel to round-off dropped, ids sorted. The vectorized rows must be
that, bit for bit, for the forms of every goal family (and of the rate
leaves), for forms whose subsets share an atom, for cancellations and for a
form with no term.
"""

import numpy as np
import pytest

from _rate_reference import make_data
from rateopt import goals as G
from rateopt._compiler._compile import _lower_all, _merge_subsets, _atoms_and_tables, flatten_constraints, \
    datasets_by_name
from rateopt._compiler._rows import form_rows
from rateopt._language._lowering import CANCEL_RTOL, Affine

from _compiler.test_linear_map import GOALS


def dict_rows(forms, gid_of):
    """One (ids, values) per form: a dict sum per atom in term order (the per-form route)."""
    out = []
    for form in forms:
        coef, mass = {}, {}
        for ctx, v in form.terms.items():
            g = gid_of[ctx]
            coef[g] = coef.get(g, 0.0) + v
            mass[g] = mass.get(g, 0.0) + form.mass[ctx]
        ids = np.array(list(coef), dtype=np.int64)
        vals = np.array(list(coef.values()), dtype=np.float64)
        ms = np.array(list(mass.values()), dtype=np.float64)
        keep = ~(np.abs(vals) <= CANCEL_RTOL * ms)
        order = np.argsort(ids[keep], kind="stable")
        out.append((ids[keep][order], vals[keep][order]))
    return out


def assert_same_rows(R, ref, n_atoms):
    assert R.shape == (len(ref), n_atoms)
    assert R.has_canonical_format
    for i, (ids, vals) in enumerate(ref):
        a, b = R.indptr[i], R.indptr[i + 1]
        np.testing.assert_array_equal(R.indices[a:b], ids)
        # bit for bit, zeros' signs included
        assert np.array_equal(R.data[a:b].view(np.int64), vals.view(np.int64)), (i, R.data[a:b], vals)


def lowered(goal, seed=0):
    """The constraints' and rate leaves' forms of a goal on random data, and every subset's atom id."""
    ds, _ = make_data(seed)
    constraints = [c for c, _ in flatten_constraints([goal], ds)]
    objective = ds.context().error_rate() if hasattr(ds.context(), "error_rate") else None
    from rateopt._language import _rates as R
    objective = R.error_rate(ds.context())
    datasets = datasets_by_name([objective] + [c.expression for c in constraints])
    env, obj_form, forms, leaf_forms, _ = _lower_all(objective, constraints)
    per_ds, ctx_local = _merge_subsets(env, datasets, [obj_form, *forms, *leaf_forms.values()])
    _, _, _, _, offsets = _atoms_and_tables(env, datasets, per_ds)
    gid_of = {ctx: offsets[d] + loc for ctx, (d, loc) in ctx_local.items()}
    n_atoms = sum(len(v) for v in per_ds.values())
    return forms, list(leaf_forms.values()), gid_of, n_atoms


@pytest.mark.parametrize("goal", GOALS, ids=repr)
def test_goal_rows_are_the_per_form_sums(goal):
    forms, leaves, gid_of, n_atoms = lowered(goal)
    for fs in (forms, leaves, forms + leaves):
        assert_same_rows(form_rows(fs, gid_of, n_atoms), dict_rows(fs, gid_of), n_atoms)


class _Ctx:
    """A stand-in subset (only hashed and looked up)."""

    def __init__(self, name):
        self.name = name


def test_shared_atoms_cancellation_and_empty_forms():
    rng = np.random.default_rng(3)
    ctxs = [_Ctx(i) for i in range(12)]
    gid_of = {c: i % 5 for i, c in enumerate(ctxs)}  # subsets 0, 5, 10 share atom 0, ...
    forms = []
    for _ in range(200):
        k = int(rng.integers(0, 7))
        pick = rng.choice(12, size=k, replace=False)
        terms = {ctxs[j]: float(rng.normal()) * 10.0 ** rng.integers(-3, 3) for j in pick}
        forms.append(Affine(rng.normal(), terms))
    # exact and round-off cancellations on one atom (subsets 1 and 6 share atom 1)
    forms.append(Affine(0.0, {ctxs[1]: 0.3, ctxs[6]: -0.3}))
    forms.append(Affine(0.0, {ctxs[1]: 0.1, ctxs[6]: 0.2, ctxs[11]: -0.3}))
    forms.append(Affine(0.0, {ctxs[2]: -0.0}))  # a lone negative zero: dropped
    forms.append(Affine(1.0, {}))  # no term at all: an empty row
    forms.append(Affine(0.0, {ctxs[4]: 2.0, ctxs[3]: -1.0}))  # terms not in atom order
    R = form_rows(forms, gid_of, 5)
    ref = dict_rows(forms, gid_of)
    assert_same_rows(R, ref, 5)
    assert [R.indptr[i + 1] - R.indptr[i] for i in range(len(forms) - 5, len(forms))] == [0, 0, 0, 0, 2]
    assert form_rows([], gid_of, 5).shape == (0, 5)


def test_many_one_row_groups_compile_to_two_entries_per_row():
    """10^3 one-row groups under parity: 2 x 10^3 rows of two entries each (the group's atom and the overall)."""
    import rateopt as ro
    n = 1000
    rng = np.random.default_rng(0)
    ds = ro.Dataset(rng.normal(size=(n, 2)), rng.integers(0, 2, n), groups={"g": np.arange(n)})
    p = ro.Problem(constraints=[G.demographic_parity("g", 0.02)], datasets=ds)
    B = p.compiled.C.tocsr()
    assert B.shape[0] == 2 * n and np.all(np.diff(B.indptr) == 2)
    # each row: +-1 on its group's atom and -+1 on the overall atom, the same overall atom everywhere
    overall = np.bincount(B.indices).argmax()
    assert np.count_nonzero(B.indices == overall) == 2 * n
    np.testing.assert_array_equal(np.abs(B.data), 1.0)
