"""Compilation of an objective and constraints into a :class:`CompiledProblem`.

:func:`compile_problem` runs once per :class:`~rateopt.Problem`, in small
steps: unique constraint names; lowering of every expression to affine forms
of subsets (:mod:`rateopt._language._lowering`); merging identical subsets of a dataset
into one atom, numbered dataset by dataset; one CSR membership table per
dataset; the rows of ``C``, ``kappa`` and the objective; the rate layer of
every named rate. The result is frozen and never touches the compiled core.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from rateopt._compiler._linear_map import LinearMap
from rateopt._compiler._rows import form_rows
from rateopt._compiler._compiled import (
    AtomInfo,
    CompiledProblem,
    InverseData,
    MembershipTable,
    MetricConstraintRows,
    MetricRows,
    RateLayer,
)
from rateopt._language import _rates as R
from rateopt._language._data import Dataset
from rateopt._language._evaluation import datasets_by_name
from rateopt._language._expressions import lift
from rateopt._language._lowering import CANCEL_RTOL, Affine, Env, lower
from rateopt._language._validation import readonly
from rateopt._utils._narrow import atom_id_dtype, row_pointer_dtype
from rateopt._utils._sealed import sealed
from rateopt._utils._weights import GRID_EXPONENT, exact_normalized, unit_normalized
from rateopt.exceptions import ConstantConstraintError, RateoptError
from rateopt.goals import Goal
from rateopt.metrics import Metric, MetricConstraint

__all__ = ["compile_problem", "resolve_role", "datasets_by_name", "deduplicated", "flatten_constraints", "unique_names",
           "merge_by_membership", "merge_contexts", "number_atoms", "constant_constraint_error", "membership_table",
           "rate_row_name"]


def resolve_role(datasets, role: str):
    """The dataset of a role (``"train"``, ...): by key in a mapping, by name in a sequence, or the one dataset."""
    if isinstance(datasets, Dataset):
        return datasets
    if isinstance(datasets, Mapping):
        if role not in datasets:
            raise RateoptError(
                f"no dataset for role {role!r}; datasets given: {list(datasets)!r}"
            )
        return datasets[role]
    for ds in datasets:
        if ds.name == role:
            return ds
    raise RateoptError(
        f"no dataset named {role!r}; datasets given: {[d.name for d in datasets]!r}"
    )


def flatten_constraints(constraints, datasets, batch=False):
    """Yield ``(constraint, source_goal)`` from constraints, goals and nested lists.

    With ``batch``, a goal that binds to one batched family
    (:meth:`rateopt.goals.Goal.bind_batched`) yields ``(family, goal)`` instead
    of its constraints.
    """
    if isinstance(constraints, (R.Constraint, Goal)):
        constraints = [constraints]
    for item in constraints:
        if isinstance(item, (R.Constraint, MetricConstraint)):
            yield item, None
        elif isinstance(item, Goal):
            if datasets is None:
                raise RateoptError(
                    f"goal {item!r} needs datasets to bind to: pass Problem(..., datasets=...)"
                )
            family = item.bind_batched(datasets) if batch else None
            if family is not None:
                yield family, item
                continue
            for c in item.bind(datasets):
                yield c, item
        elif isinstance(item, R.Expression):
            raise TypeError(
                f"{item} is an expression, not a constraint: compare it with <= or >= "
                "(e.g. rate <= 0.1)"
            )
        elif isinstance(item, Iterable) and not isinstance(item, (str, bytes)):
            yield from flatten_constraints(list(item), datasets, batch)
        else:
            raise TypeError(
                f"constraints must be Constraint objects or goals, got {type(item).__name__}"
            )


def compile_problem(objective, pairs):
    """Compile ``objective`` and ``(constraint, source goal)`` pairs.

    Returns
    -------
    datasets : dict of str to Dataset
        The datasets used, by name, in order of appearance.
    constraints : tuple of Constraint
        The constraints under their unique names.
    compiled : CompiledProblem
    """
    # Metric constraints come after the affine ones (they are not rows of C).
    pairs = sorted(pairs, key=lambda pair: isinstance(pair[0], MetricConstraint))
    constraints, originals, sources, names = unique_names(pairs)
    datasets = datasets_by_name([objective] + [c.expression for c in constraints])
    metric = objective if isinstance(objective, Metric) else None
    affine = [c for c in constraints if not isinstance(c, MetricConstraint)]
    bounded = [c for c in constraints if isinstance(c, MetricConstraint)]
    backend = _data_backend(datasets)
    env, obj_form, forms, leaf_forms, metric_forms = _lower_all(objective, affine, metric, bounded,
                                                                env=backend.env())
    k_obj = metric.n_rates if metric is not None else 0
    bounded_forms, start = [], k_obj
    for c in bounded:  # each metric constraint's own coordinates
        bounded_forms.append(metric_forms[start: start + c.metric.n_rates])
        start += c.metric.n_rates
    metric_forms = metric_forms[:k_obj]
    per_ds, ctx_local = backend.merge_subsets(env, datasets,
                                              [obj_form, *forms, *leaf_forms.values(), *metric_forms,
                                               *(f for fs in bounded_forms for f in fs)])
    atoms, tables, atom_dataset, atom_local, offsets = backend.atoms_and_tables(env, datasets, per_ds)
    atom_offsets, thresholds = _offset_ids(per_ds, datasets)
    gid_of = {ctx: offsets[d] + loc for ctx, (d, loc) in ctx_local.items()}
    n_atoms = len(atoms)

    def row(form: Affine):
        return _coefficient_row(form, gid_of, n_atoms)

    C, kappa = _constraint_rows(affine, forms, gid_of, n_atoms)
    obj_coef = row(obj_form)
    inverse = InverseData(constraints=tuple(constraints), originals=tuple(originals), sources=tuple(sources),
                          names=tuple(names))
    compiled = CompiledProblem(
        datasets=tuple(datasets),
        atoms=tuple(atoms),
        tables=tables,
        atom_dataset=readonly(atom_dataset),
        atom_local=readonly(atom_local),
        C=C,
        kappa=readonly(kappa),
        objective_coef=readonly(obj_coef),
        objective_constant=float(obj_form.const),
        constraint_names=tuple(names),
        rates=_rate_layer(leaf_forms, atoms, gid_of, n_atoms),
        inverse_data=inverse,
        metric=None if metric is None else MetricRows(metric=metric, **_metric_rows(metric_forms, row, n_atoms)),
        metric_constraints=tuple(
            MetricConstraintRows(metric=c.metric, bound=c.bound, **_metric_rows(fs, row, n_atoms))
            for c, fs in zip(bounded, bounded_forms)),
        atom_offsets=readonly(atom_offsets),
        thresholds=thresholds,
        atom_contexts=tuple(tuple(ctxs) for name in datasets for _, ctxs in per_ds[name]),
    )
    return datasets, tuple(constraints), compiled


class _InMemoryData:
    """The compile steps that read data, for datasets held in memory (the default backend).

    A partitioned dataset (:class:`rateopt.dask.Dataset`) names its own backend
    (``compile_backend``) with the same three members, whose steps run on the
    partitions where they live.
    """

    env = Env

    @staticmethod
    def merge_subsets(env, datasets, forms):
        return _merge_subsets(env, datasets, forms)

    @staticmethod
    def atoms_and_tables(env, datasets, per_ds):
        return _atoms_and_tables(env, datasets, per_ds)


def _data_backend(datasets):
    """The backend of the problem's datasets: all in memory, or all of one partitioned kind."""
    backends = {getattr(ds, "compile_backend", _InMemoryData) for ds in datasets.values()}
    if len(backends) > 1:
        raise RateoptError(
            f"the problem mixes in-memory and partitioned datasets ({', '.join(map(repr, datasets))}): "
            "state every dataset of one problem the same way (e.g. all as rateopt.dask.Dataset)"
        )
    return backends.pop() if backends else _InMemoryData


def _metric_rows(forms, row, n_atoms):
    """``Z`` and ``z0`` of a metric's coordinate forms."""
    return {"Z": readonly(np.array([row(f) for f in forms]).reshape(len(forms), n_atoms)),
            "z0": readonly(np.array([f.const for f in forms], dtype=np.float64))}


def unique_names(pairs):
    """Constraints renamed ``name #2``, ``name #3``, ... where names repeat.

    Parameters
    ----------
    pairs : iterable of (Constraint, Goal or None)
        The constraints with their source goals, in row order.

    Returns
    -------
    constraints, originals, sources, names : list
        The renamed constraints, the constraints as given, their goals and their unique names.
    """
    pairs = list(pairs)
    names = deduplicated([c.name for c, _ in pairs])
    constraints = [c if name == c.name else c.named(name) for (c, _), name in zip(pairs, names)]
    return constraints, [c for c, _ in pairs], [src for _, src in pairs], names


def deduplicated(names):
    """``names`` (a list) with repeats renamed ``name #2``, ``name #3``, ...; the first keeps its name."""
    if len(set(names)) == len(names):
        return names
    used: set = set()
    out = []
    for base in names:
        name, k = base, 1
        while name in used:
            k += 1
            name = f"{base} #{k}"
        used.add(name)
        out.append(name)
    return out


def _lower_all(objective, constraints, metric=None, bounded=(), *, env=None):
    """Affine forms of the objective (or of a metric's coordinates, the objective form then 0),
    of every affine constraint, of every rate leaf (for reports), and of the coordinates of
    the metric objective followed by those of each metric constraint (two each)."""
    env = Env() if env is None else env
    env.where = "the objective"
    metric_forms = [] if metric is None else [lower(z, env) for z in metric.rates]
    for c in bounded:
        env.where = f"constraint {c.name!r}"
        metric_forms += [lower(z, env) for z in c.metric.rates]
    obj_form = lower(lift(0.0) if metric is not None else objective, env)
    forms = []
    for c in constraints:
        env.where = f"constraint {c.name!r}"
        forms.append(lower(c.expression, env))
    leaf_forms: dict = {}
    for where, expr in [("the objective", objective)] + [
        (f"constraint {c.name!r}", c.expression) for c in [*constraints, *bounded]
    ]:
        env.where = where
        for leaf in expr.leaves():
            if leaf.name not in leaf_forms:
                leaf_forms[leaf.name] = lower(leaf, env)
    return env, obj_form, forms, leaf_forms, metric_forms


def _merge_subsets(env, datasets, forms):
    """One atom per distinct membership of a dataset: ``{dataset: [(mask, [contexts])]}`` and
    each context's ``(dataset, local atom id)``."""

    def membership(ctx):
        idx = env.members(ctx)
        n = ctx.dataset.n_samples
        # the key: the row ids of a small subset, else the packed mask (one encoding per membership)
        code = ("rows", idx.tobytes()) if idx.size * 64 < n else ("mask", np.packbits(env.mask(ctx)).tobytes())
        # a thresholded subset (an offset atom, rateopt._language._auc) is its own atom per threshold
        return (code, id(getattr(ctx, "threshold", None))), idx

    return merge_by_membership(datasets, forms, membership)


def merge_by_membership(datasets, forms, membership):
    """Group the forms' subsets into atoms by membership (shared by every compile backend).

    Parameters
    ----------
    datasets : dict
        ``{name: dataset}`` in problem order.
    forms : iterable
        Lowered forms; their ``terms`` are the subsets (contexts), taken in first-appearance order.
    membership : callable
        ``membership(ctx) -> (key, value)``: subsets of one dataset with equal keys are one atom,
        described by the first one's ``value`` (its mask, or its statistics).

    Returns
    -------
    per_ds : dict
        ``{dataset: [(value, [contexts]), ...]}``, the atoms of each dataset in order.
    ctx_local : dict
        Each context's ``(dataset, local atom id)``.
    """
    ctx_order: dict = {}
    for f in forms:
        for ctx in f.terms:
            ctx_order.setdefault(ctx, None)
    return merge_contexts(datasets, ctx_order, membership)


def merge_contexts(datasets, contexts, membership):
    """Group subsets into atoms by membership: :func:`merge_by_membership` on the subsets themselves.

    Parameters
    ----------
    datasets : dict
        ``{name: dataset}`` in problem order.
    contexts : iterable of Context
        The subsets, distinct, in order.
    membership : callable
        As :func:`merge_by_membership`'s.

    Returns
    -------
    per_ds, ctx_local : dict
        As :func:`merge_by_membership`'s.
    """
    ctx_order = contexts
    per_ds: dict = {name: [] for name in datasets}
    key_to_local: dict = {name: {} for name in datasets}
    ctx_local: dict = {}
    for ctx in ctx_order:
        dsname = ctx.dataset.name
        key, value = membership(ctx)
        local = key_to_local[dsname].get(key)
        if local is None:
            local = len(per_ds[dsname])
            key_to_local[dsname][key] = local
            per_ds[dsname].append((value, [ctx]))
        else:
            per_ds[dsname][local][1].append(ctx)
        ctx_local[ctx] = (dsname, local)
    return per_ds, ctx_local


def _atoms_and_tables(env, datasets, per_ds):
    """Global atom numbering (dataset by dataset), atom descriptions and membership tables."""
    return number_atoms(
        datasets, per_ds,
        lambda rows, ctxs: (int(rows.size), env.weight(ctxs[0]).value()),
        lambda name, entries, offset: _membership_table(datasets[name], [e[0] for e in entries], offset))


def number_atoms(datasets, per_ds, describe, tables_of):
    """Number the atoms globally, dataset by dataset, and describe them (shared by every compile backend).

    Parameters
    ----------
    datasets : dict
        ``{name: dataset}`` in problem order.
    per_ds : dict
        ``{name: [(key, contexts), ...]}``: each dataset's atoms, ``contexts`` the
        subsets merged into the atom (the first names it).
    describe : callable
        ``describe(key, contexts) -> (n_members, total_weight)`` of one atom.
    tables_of : callable
        ``tables_of(name, entries, offset)``: the dataset's membership table(s),
        its atoms numbered from ``offset``.

    Returns
    -------
    tuple
        ``(atoms, tables, atom_dataset, atom_local, offsets)``.
    """
    offsets, off = {}, 0
    for name in datasets:
        offsets[name] = off
        off += len(per_ds[name])
    n_atoms = off
    atoms, tables = [], {}
    atom_dataset = np.empty(n_atoms, dtype=np.int64)
    atom_local = np.empty(n_atoms, dtype=np.int64)
    for d, name in enumerate(datasets):
        entries = per_ds[name]
        for local, (key, ctxs) in enumerate(entries):
            gid = offsets[name] + local
            atom_dataset[gid], atom_local[gid] = d, local
            first = ctxs[0]
            aliases = tuple(dict.fromkeys(c.label for c in ctxs[1:] if c.label != first.label))
            n_members, total_weight = describe(key, ctxs)
            atoms.append(AtomInfo(index=gid, dataset=name, local_index=local, name=f"ppr[{first.label}]",
                                  subset=first.label, aliases=aliases, n_members=n_members,
                                  total_weight=total_weight))
        tables[name] = tables_of(name, entries, offsets[name])
    return atoms, tables, atom_dataset, atom_local, offsets


def _offset_ids(per_ds, datasets):
    """The offset id of every global atom (-1: none) and the thresholds, numbered in atom order.

    A thresholded subset (``rateopt._language._auc``) is an offset atom: its members are
    scored ``h(x) - b``; the game trains ``b`` with the model.
    """
    ids, thresholds, seen = [], [], {}
    for name in datasets:
        for _, ctxs in per_ds[name]:
            thr = getattr(ctxs[0], "threshold", None)
            if thr is None:
                ids.append(-1)
                continue
            if id(thr) not in seen:
                seen[id(thr)] = len(thresholds)
                thresholds.append(thr.name)
            ids.append(seen[id(thr)])
    return np.array(ids, dtype=np.int64).reshape(-1), tuple(thresholds)


def _coefficient_row(form: Affine, gid_of, n_atoms):
    """A form's atom coefficients; sums that cancel to round-off become exact zeros."""
    coef = np.zeros(n_atoms)
    mass = np.zeros(n_atoms)
    for ctx, v in form.terms.items():
        g = gid_of[ctx]
        coef[g] += v
        mass[g] += form.mass[ctx]
    coef[np.abs(coef) <= CANCEL_RTOL * mass] = 0.0
    return coef


def _constraint_rows(constraints, forms, gid_of, n_atoms):
    """``C`` (a sparse :class:`LinearMap`) and ``kappa`` of ``g = C p - kappa <= 0``; a constraint no model
    can change is an error. Memory and time are linear in the constraints' atom references: the rows of
    every constraint come from one vectorized pass (:func:`rateopt._compiler._rows.form_rows`)."""
    kappa = np.array([-f.const for f in forms], dtype=np.float64).reshape(len(forms))
    B = form_rows(forms, gid_of, n_atoms)
    empty = np.flatnonzero(np.diff(B.indptr) == 0)
    if empty.size:
        i = int(empty[0])
        raise constant_constraint_error(constraints[i], forms[i], {ctx.label for ctx in forms[i].terms})
    return LinearMap(B), kappa


def constant_constraint_error(constraint, form, subsets):
    """The error for a constraint whose lowered form has no coefficient left (shared by both statistics).

    Parameters
    ----------
    constraint : Constraint
    form : Affine
        Its lowered form.
    subsets : iterable of str
        The labels of the subsets its rates are measured on.

    Returns
    -------
    ConstantConstraintError
    """
    subsets = sorted(set(subsets)) or ["(none)"]
    return ConstantConstraintError(
        f"constraint {constraint.name!r} is constant: it does not depend on the model's "
        f"decisions (its value is always {form.const:.6g}; rates on subsets "
        f"{', '.join(repr(s) for s in subsets)} cancel out or none is used), "
        "so no model can change whether it holds"
    )


def rate_row_name(seen, name, is_same):
    """Name a new row of the rate layer: ``name``, or ``name #2``, ``#3``, ... when taken, entered in ``seen``
    (name -> row index, in row order) and returned; None when the row already named ``name`` (index
    ``seen[name]``) is the same (``is_same(index)``), so nothing is added."""
    k = seen.get(name)
    if k is not None:
        if is_same(k):
            return None
        j = 2
        while f"{name} #{j}" in seen:
            j += 1
        name = f"{name} #{j}"
    seen[name] = len(seen)
    return name


def _rate_layer(leaf_forms, atoms, gid_of, n_atoms):
    """Every rate leaf, then every atom, under unique names (``A`` a sparse :class:`LinearMap`)."""
    rows, consts = [], []
    seen: dict = {}

    def add(name, coef, const):
        def same(k):
            return np.array_equal(rows[k][0], coef[0]) and np.array_equal(rows[k][1], coef[1]) and consts[k] == const

        if rate_row_name(seen, name, same) is not None:
            rows.append(coef)
            consts.append(const)

    leaves = form_rows(list(leaf_forms.values()), gid_of, n_atoms)
    for i, (name, f) in enumerate(leaf_forms.items()):
        a, b = leaves.indptr[i], leaves.indptr[i + 1]
        add(name, (leaves.indices[a:b].astype(np.int64), leaves.data[a:b]), f.const)
    for a in atoms:
        add(a.name, (np.array([a.index], dtype=np.int64), np.ones(1)), 0.0)
    return RateLayer(names=tuple(seen), A=LinearMap.from_rows(rows, n_atoms),
                     b=readonly(np.array(consts, dtype=np.float64)))


#: Rows per block when a membership table's entries are written.
_TABLE_BLOCK_ROWS = 1 << 20
#: The fewest members of a chunk of several atoms (``_chunk_members``).
_MIN_CHUNK_MEMBERS = 1 << 12


def _chunk_members(n_rows):
    """The members a chunk of several atoms may hold: an eighth of the dataset's rows (between
    ``_MIN_CHUNK_MEMBERS`` and ``_TABLE_BLOCK_ROWS``), so that a chunk's temporaries (about 64 bytes
    a member: its rows, their weights, sort and slots) stay near 8 bytes a row of the dataset, below the
    table itself, instead of a whole table's entries at once."""
    return min(_TABLE_BLOCK_ROWS, max(_MIN_CHUNK_MEMBERS, int(n_rows) // 8))


def _scale_by_max_in_place(w):
    """``w *= 2**-e`` as :func:`rateopt._language._lowering.scaled_by_max`, without a second array."""
    top = float(np.max(w)) if w.size else 0.0
    if not top > 0.0:
        w[...] = 0.0
    else:
        np.ldexp(w, -int(np.frexp(top)[1]), out=w)


def _membership_table(ds: Dataset, members: list, offset: int) -> MembershipTable:
    """Build the CSR membership table of one dataset from each atom's rows (ascending)."""
    sizes = np.fromiter((m.size for m in members), dtype=np.int64, count=len(members))
    return membership_table(ds, sizes, lambda a, b: members[a] if b == a + 1 else np.concatenate(members[a:b]),
                            offset)


#: An atom with at least this many members is a chunk of its own: its entries go to their slots directly,
#: with no sort of the chunk's members (a few large atoms, such as labels and groups, need no sort at all).
_OWN_CHUNK_ROWS = 1 << 12


def _chunks(sizes, n_rows):
    """``[(a, b), ...]``: consecutive atoms whose members total at most ``_chunk_members`` (or one atom);
    an atom of ``_OWN_CHUNK_ROWS`` members or more is a chunk of its own."""
    cum = np.cumsum(sizes)
    budget = _chunk_members(n_rows)
    big = np.flatnonzero(sizes >= _OWN_CHUNK_ROWS)
    out, a, k = [], 0, sizes.shape[0]
    while a < k:
        before = int(cum[a - 1]) if a else 0
        b = max(int(np.searchsorted(cum, before + budget, side="right")), a + 1)
        nxt = int(np.searchsorted(big, a))  # the first large atom at or after a
        if nxt < big.size and big[nxt] < b:
            b = max(int(big[nxt]), a + 1)  # the small atoms before it, or the large atom alone
        out.append((a, b))
        a = b
    return out


def _normalize_segments(w, sizes):
    """Each atom's weights (consecutive segments of ``w``, of lengths ``sizes``) rescaled by a power of two
    and exactly normalized, in place: per segment what :func:`_scale_by_max_in_place` then
    :func:`~rateopt._utils._weights.exact_normalized` give, bit for bit (segments of one length at once:
    a row-wise maximum, running sum and difference are those of each row alone)."""
    if sizes.shape[0] == 1:
        _scale_by_max_in_place(w)
        exact_normalized(w, out=w)
        return
    starts = np.zeros(sizes.shape[0], dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    for length in np.unique(sizes).tolist():
        st = starts[sizes == length]
        if st.size == 1:
            seg = w[int(st[0]): int(st[0]) + length]
            _scale_by_max_in_place(seg)
            exact_normalized(seg, out=seg)
            continue
        idx = st[:, None] + np.arange(length, dtype=np.int64)
        m = w[idx]
        top = m.max(axis=1)
        pos = top > 0.0
        m[~pos] = 0.0
        np.ldexp(m, -np.frexp(np.where(pos, top, 1.0))[1][:, None], out=m, where=pos[:, None])
        c = np.cumsum(m, axis=1)
        c /= c[:, -1:]
        np.ldexp(c, GRID_EXPONENT, out=c)
        np.rint(c, out=c)
        c[:, 1:] = np.diff(c, axis=1)
        np.ldexp(c, -GRID_EXPONENT, out=c)
        w[idx] = c


def membership_table(ds: Dataset, sizes, rows_of, offset: int) -> MembershipTable:
    """Build the CSR membership table of one dataset from its atoms' rows.

    The entries are written in place, a chunk of consecutive atoms at a time
    (at most ``_chunk_members`` members, or one larger atom), at each row's
    next free slots in atom order (a counting sort: ascending atom ids within a
    row), so the memory beyond the table itself is one byte (or int32) per row
    (entries written so far) and a few numbers per member of the chunk being
    written; no (nnz,)-sized sort, concatenation or gather of the whole table.
    Time is linear in the table's entries plus the chunks, whatever the number
    of atoms.

    Parameters
    ----------
    ds : Dataset
        The dataset.
    sizes : ndarray of int64 of shape (n_atoms,)
        Each local atom's number of members.
    rows_of : callable
        ``rows_of(a, b)``: the members of atoms ``a`` to ``b - 1``, atom after atom, each ascending.
    offset : int
        The global id of local atom 0.

    Returns
    -------
    MembershipTable
    """
    n = ds.n_samples
    k = int(sizes.shape[0])
    w = ds.weights
    chunks = _chunks(sizes, n)
    # the core's narrow layout (rateopt._utils._narrow): int32 row pointers below 2**31 entries, and
    # uint8 ids up to 256 atoms (uint16 up to 65,536), written directly, so no wide copy ever exists
    nnz = int(sizes.sum())
    ptr_dtype, id_dtype = row_pointer_dtype(nnz), atom_id_dtype(k)
    indptr = np.zeros(n + 1, dtype=ptr_dtype)
    counts = indptr[1:]
    # layers: the atoms in consecutive runs that each partition the rows (labels, then groups: every row in
    # exactly one atom of each run, the common case); with c layers, row i's entries are at slots c*i to
    # c*i + c - 1, its layer-l atom at c*i + l, which is where the counting sort below puts them
    layer_of, entries = ([] if n else None), 0
    for a, b in chunks:
        rows = rows_of(a, b)
        if b == a + 1:
            counts[rows] += 1  # an atom's rows are distinct
        elif rows.size * 8 >= n:
            counts += np.bincount(rows, minlength=n)
        else:
            np.add.at(counts, rows, 1)
        if layer_of is not None:
            layer, entries = entries // n, entries + rows.size
            if (entries - 1) // n != layer:  # the chunk ends in a later layer than it starts
                layer_of = None
            elif entries % n:
                layer_of.append(layer)
            elif int(counts.min()) == int(counts.max()) == layer + 1:  # this layer added one entry to every row
                layer_of.append(layer)
            else:
                layer_of = None
    c = entries // n if layer_of is not None and entries % n == 0 else 0  # the last layer complete too
    np.cumsum(counts, out=counts)
    indices = np.empty(nnz, dtype=id_dtype)
    weights = np.empty(nnz, dtype=np.float64)
    written = None if c else np.zeros(n, dtype=np.uint8 if k < 256 else np.int32)  # entries of each row written
    # no weights (the dataset's broadcast 1.0): an atom's normalized weights depend on its size alone
    unit = w.ndim == 1 and w.size > 0 and w.strides[0] == 0 and float(w[0]) == 1.0
    for j, (a, b) in enumerate(chunks):
        rows = rows_of(a, b)
        if unit and b == a + 1:
            wa = unit_normalized(rows.size)  # what the lines below give for ones, bit for bit
        else:
            wa = w[rows]
            _normalize_segments(wa, sizes[a:b])  # sums of them are exact: a whole atom's rate is 1, its complement 0
        if c:
            ids = a if b == a + 1 else np.repeat(np.arange(a, b, dtype=np.int32), sizes[a:b])
            for start in range(0, rows.size, _TABLE_BLOCK_ROWS):  # the members' slots, a block at a time
                block = slice(start, start + _TABLE_BLOCK_ROWS)
                idx = rows[block]
                pos = idx if c == 1 else idx * c + layer_of[j]
                indices[pos] = ids if b == a + 1 else ids[block]
                weights[pos] = wa[block]
        elif b == a + 1:
            done = 0
            for start in range(0, rows.size, _TABLE_BLOCK_ROWS):  # the members' slots, a block at a time
                idx = rows[start:start + _TABLE_BLOCK_ROWS]
                pos = indptr[idx]
                pos += written[idx]
                indices[pos] = a
                weights[pos] = wa[done:done + idx.size]
                written[idx] += 1
                done += idx.size
        else:
            order = np.argsort(rows, kind="stable")  # a row's entries in atom order
            sorted_rows = rows[order]
            first = np.ones(rows.size, dtype=bool)
            first[1:] = sorted_rows[1:] != sorted_rows[:-1]
            starts = np.flatnonzero(first)
            rank = np.empty(rows.size, dtype=np.int64)
            rank[order] = np.arange(rows.size, dtype=np.int64) - np.repeat(starts, np.diff(np.append(starts,
                                                                                                  rows.size)))
            pos = indptr[rows] + written[rows] + rank
            indices[pos] = np.repeat(np.arange(a, b, dtype=np.int32), sizes[a:b])
            weights[pos] = wa
            if rows.size * 8 >= n:
                written += np.bincount(rows, minlength=n).astype(written.dtype)
            else:
                np.add.at(written, rows, 1)
        del wa
    del written, counts
    # sealed (their memory immutable bytes), one array at a time: the core's AtomTable keeps these very
    # arrays instead of copying them (rateopt.core seals what it validates), so training holds one table
    indptr = sealed(indptr, ptr_dtype)
    indices = sealed(indices, id_dtype)
    weights = sealed(weights, np.float64)
    return MembershipTable(
        dataset=ds.name,
        n_samples=n,
        n_atoms=k,
        indptr=indptr,
        indices=indices,
        weights=weights,
        atom_ids=readonly(np.arange(offset, offset + k, dtype=np.int64)),
        offset=offset,
    )
