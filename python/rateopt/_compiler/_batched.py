"""Compilation of problems whose goals come as batched families (:func:`compile_batched`).

A parity goal over many groups binds to a
:class:`~rateopt._language._families.GroupFamily` (its rows lowered once)
instead of one constraint per group. Compiling it one expression at a time
would cost a Python object, a hash and a scan per group in every step; here
every step works on arrays of *subsets*: the objective's and the other
constraints' contexts (lowered by the ordinary rules), and the families'
group subsets (``GroupSet``: one CSR of rows per column and label condition).

* Subsets are numbered as they first appear in the forms (objective, rows,
  rate leaves), as :func:`rateopt._compiler._compile.merge_by_membership`
  numbers contexts.
* Subsets with the same members are one atom. Groups of one set are disjoint
  and not empty, so only subsets of equal size, first, last and sum of rows
  can be equal: those few are compared by their rows.
* ``C``'s rows come from the flat term arrays
  (:func:`rateopt._compiler._rows.rows_from_terms`), the membership tables from
  :func:`rateopt._compiler._compile.membership_table`, the rate layer from the
  leaves' and atoms' rows; the constraints, atom descriptions and atom contexts
  are :class:`~rateopt._utils._lazy.LazyTuple` s, made when read.

The result is the :class:`~rateopt._compiler._compiled.CompiledProblem` that
binding every goal one expression at a time gives, bit for bit
(``tests/_compiler/test_batched.py``). Problems the arrays do not cover (a
metric objective or constraint, a partitioned dataset, offset atoms, another
subset on a family's column) return None: the caller binds the families one
expression at a time.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rateopt._compiler._compiled import AtomInfo, CompiledProblem, InverseData, RateLayer
from rateopt._compiler._compile import (
    constant_constraint_error,
    datasets_by_name,
    deduplicated,
    membership_table,
    rate_row_name,
)
from rateopt._compiler._linear_map import LinearMap
from rateopt._compiler._rows import rows_from_terms
from rateopt._language._families import GroupFamily
from rateopt._language._lowering import CANCEL_RTOL, Env, WeightSum, lower
from rateopt._language._predicates import group_columns
from rateopt._language._validation import readonly
from rateopt._utils._lazy import LazyTuple
from rateopt.metrics import Metric, MetricConstraint

__all__ = ["compile_batched", "is_family"]


def is_family(c) -> bool:
    """Whether a constraint item is a batched family (not one :class:`Constraint`)."""
    return isinstance(c, GroupFamily)


class _ConstForm:
    """What :func:`constant_constraint_error` reads of a form: its constant."""

    __slots__ = ("const",)

    def __init__(self, const):
        self.const = const


class _Leaves:
    """The rate leaves by name, first one kept (as ``_lower_all``'s dict): single forms, and runs of a family's
    group leaves (one subset each, the same coefficient) kept as arrays."""

    def __init__(self):
        self.seen: set = set()
        self.runs: list = []  # ("form", name, form) or ("subs", names, sids, coef)

    def __contains__(self, name):
        return name in self.seen

    def add_form(self, name, make):
        if name not in self.seen:
            self.seen.add(name)
            self.runs.append(("form", name, make()))

    def add_subs(self, names, sids, coef):
        if not self.seen.isdisjoint(names):
            keep = []
            for i, name in enumerate(names):
                if name not in self.seen:
                    self.seen.add(name)
                    keep.append(i)
            names = [names[i] for i in keep]
            sids = sids[np.array(keep, dtype=np.int64)]
        else:
            self.seen.update(names)
        if names:
            self.runs.append(("subs", names, sids, coef))


class _Subsets:
    """The subsets of a problem, numbered: contexts (one id each) and group sets (a range of ids each)."""

    def __init__(self):
        self.ctx_id: dict = {}
        self.contexts: list = []  # (sid, ctx) in registration order
        self.sets: dict = {}  # set key -> (set, base id)
        self.contexts_by_id: dict = {}  # sid -> ctx, once every subset is registered
        self.n = 0

    def of_context(self, ctx):
        sid = self.ctx_id.get(ctx)
        if sid is None:
            sid = self.ctx_id[ctx] = self.n
            self.contexts.append((sid, ctx))
            self.n += 1
        return sid

    def of_set(self, gset):
        """The base id of ``gset``'s subsets, or None when another set of the same key has other values."""
        entry = self.sets.get(gset.key)
        if entry is None:
            entry = self.sets[gset.key] = (gset, self.n)
            self.n += len(gset)
        elif entry[0].values != gset.values:
            return None
        return entry[1]


def compile_batched(objective, pairs):
    """Compile ``objective`` and ``(constraint or family, source goal)`` pairs, or None (see the module docstring).

    Parameters
    ----------
    objective : Expression
    pairs : list of (Constraint or GroupFamily, Goal or None)

    Returns
    -------
    tuple or None
        ``(datasets, constraints, compiled)`` as
        :func:`rateopt._compiler._compile.compile_problem`'s.
    """
    if isinstance(objective, Metric) or any(isinstance(c, MetricConstraint) for c, _ in pairs):
        return None
    datasets = datasets_by_name([objective] + [c if is_family(c) else c.expression for c, _ in pairs])
    if any(hasattr(ds, "compile_backend") for ds in datasets.values()):
        return None
    ds_index = {name: d for d, name in enumerate(datasets)}

    # -- names, in row order (unique: "name #2", ...)
    raw, spans, sources = [], [], []
    for c, src in pairs:
        nm = c.names() if is_family(c) else [c.name]
        spans.append((len(raw), c))
        raw += nm
        sources += [src] * len(nm)
    names = deduplicated(raw)
    m = len(names)
    span_starts = np.array([s for s, _ in spans], dtype=np.int64)

    def original(i):
        j = int(np.searchsorted(span_starts, i, side="right")) - 1
        start, c = spans[j]
        return c.constraint(i - start) if is_family(c) else c

    originals = LazyTuple(m, original)

    def renamed(i):
        o = originals[i]
        return o if names[i] == raw[i] else o.named(names[i])

    constraints = LazyTuple(m, renamed)

    # -- lowering: the objective and single constraints by the rules, families from their prototypes
    env = Env()
    env.where = "the objective"
    obj_form = lower(objective, env)
    subsets = _Subsets()
    family_columns: dict = {}
    row_parts = []  # per span: ("form", form) or ("family", family, [(base, ref sid), ...])
    for start, c in spans:
        if is_family(c):
            bases = []
            for b in c.blocks:
                base = subsets.of_set(b.set)
                if base is None:
                    return None
                family_columns.setdefault(id(b.set.dataset), set()).add(b.set.column)
                bases.append((base, subsets.of_context(b.ref_subset)))
            row_parts.append(("family", c, bases))
        else:
            env.where = f"constraint {names[start]!r}"
            row_parts.append(("form", lower(c.expression, env)))
    leaves = _Leaves()
    env.where = "the objective"
    for leaf in objective.leaves():
        leaves.add_form(leaf.name, lambda leaf=leaf: lower(leaf, env))
    for part, (start, c) in zip(row_parts, spans):
        if part[0] == "form":
            env.where = f"constraint {names[start]!r}"
            for leaf in c.expression.leaves():
                leaves.add_form(leaf.name, lambda leaf=leaf: lower(leaf, env))
            continue
        for b, (base, _) in zip(c.blocks, part[2]):
            (head, tail), coef = b.group_leaf
            labels = b.set.group_labels
            for role, leaf in b.sides[0].leaves:  # the first row's leaves, in order
                if role == "grp":
                    leaves.add_subs([head + labels[0] + tail], np.array([base], dtype=np.int64), coef)
                else:
                    leaves.add_form(leaf.name, lambda leaf=leaf: lower(leaf, env))
            # then each group's leaf (later sides read the same leaves)
            leaves.add_subs([head + lab + tail for lab in labels[1:]],
                            np.arange(base + 1, base + len(labels), dtype=np.int64), coef)

    # -- subset ids of every term, in the order the forms read them
    def form_sids(form):
        return np.array([subsets.of_context(ctx) for ctx in form.terms], dtype=np.int64)

    seq = [form_sids(obj_form)]
    fam_terms = []  # per family block: (sids (K, S, 2), vals, masses, consts (S,))
    for part in row_parts:
        if part[0] == "form":
            seq.append(form_sids(part[1]))
            continue
        for b, (base, ref_sid) in zip(part[1].blocks, part[2]):
            k = len(b.set)
            grp = base + np.arange(k, dtype=np.int64)
            sids = np.empty((k, len(b.sides), 2), dtype=np.int64)
            for j, s in enumerate(b.sides):
                for t, role in enumerate(s.roles):
                    sids[:, j, t] = grp if role == "grp" else ref_sid
            vals = np.array([s.coefs for s in b.sides], dtype=np.float64)
            masses = np.array([s.masses for s in b.sides], dtype=np.float64)
            consts = np.array([s.const for s in b.sides], dtype=np.float64)
            fam_terms.append((sids, vals, masses, consts))
            seq.append(sids.reshape(-1))
    for run in leaves.runs:
        seq.append(form_sids(run[2]) if run[0] == "form" else run[2])

    # a context on a family's column could be one of its subsets under another spelling: one at a time
    for _, ctx in subsets.contexts:
        if getattr(ctx, "threshold", None) is not None:
            return None
        cols = family_columns.get(id(ctx.dataset))
        if cols and not cols.isdisjoint(group_columns(ctx._predicate)):
            return None

    seq = np.concatenate(seq)
    uniq, first_at = np.unique(seq, return_index=True)
    if uniq.size != subsets.n:  # every subset is read
        return None
    order = uniq[np.argsort(first_at, kind="stable")]  # subsets in order of first appearance

    # -- each subset's dataset, members and fingerprint
    n_sub = subsets.n
    sub_ds = np.empty(n_sub, dtype=np.int64)
    size = np.empty(n_sub, dtype=np.int64)
    fp = np.empty((n_sub, 3), dtype=np.int64)  # first row, last row, sum of rows
    members = {}  # sid -> rows of a context
    for sid, ctx in subsets.contexts:
        idx = env.members(ctx)
        members[sid] = idx
        sub_ds[sid], size[sid] = ds_index[ctx.dataset.name], idx.size
        fp[sid] = (idx[0], idx[-1], int(idx.sum())) if idx.size else (-1, -1, 0)
    for gset, base in subsets.sets.values():
        k = len(gset)
        sl = slice(base, base + k)
        sub_ds[sl] = ds_index[gset.dataset.name]
        size[sl] = np.diff(gset.ptr)
        fp[sl, 0] = gset.rows[gset.ptr[:-1]]
        fp[sl, 1] = gset.rows[gset.ptr[1:] - 1]
        fp[sl, 2] = np.add.reduceat(gset.rows, gset.ptr[:-1], dtype=np.int64)

    def rows_of_sub(sid):
        rows = members.get(sid)
        if rows is not None:
            return rows
        for gset, base in subsets.sets.values():
            if base <= sid < base + len(gset):
                return gset.rows[gset.ptr[sid - base]: gset.ptr[sid - base + 1]]
        raise AssertionError(sid)  # pragma: no cover

    # -- merge equal memberships (the first subset to appear names the atom)
    rep = np.arange(n_sub, dtype=np.int64)
    rank = np.empty(n_sub, dtype=np.int64)
    rank[order] = np.arange(n_sub, dtype=np.int64)
    with np.errstate(over="ignore"):  # a hash of the fingerprint (equal members: equal hashes; the rest is checked)
        key = (((sub_ds * 1_000_003 + size) * 998_244_353 + fp[:, 0]) * 1_000_000_007 + fp[:, 1]) * 19_260_817 \
            + fp[:, 2]
    _, cls, cls_count = np.unique(key, return_inverse=True, return_counts=True)
    cls = cls.reshape(-1)
    cand = np.flatnonzero(cls_count[cls] > 1)
    if cand.size:
        by_members: dict = {}
        for sid in cand[np.argsort(rank[cand], kind="stable")].tolist():
            k = (int(sub_ds[sid]), rows_of_sub(sid).astype(np.int64, copy=False).tobytes())  # sets: int32
            rep[sid] = by_members.setdefault(k, sid)
    is_atom = rep[order] == order
    atom_subs = order[is_atom]  # each atom's first subset, in order of appearance
    n_atoms = int(atom_subs.size)
    atom_ds = sub_ds[atom_subs]
    # atoms dataset by dataset (stable: each dataset's in order of appearance)
    by_ds = np.argsort(atom_ds, kind="stable")
    atom_first = atom_subs[by_ds]  # global atom id -> its first subset
    gid_of_sub = np.empty(n_sub, dtype=np.int64)
    gid_of_sub[atom_first] = np.arange(n_atoms, dtype=np.int64)
    gid_of_sub = gid_of_sub[rep]
    atom_dataset = atom_ds[by_ds]
    counts_ds = np.bincount(atom_dataset, minlength=len(datasets))
    offsets = np.zeros(len(datasets) + 1, dtype=np.int64)
    np.cumsum(counts_ds, out=offsets[1:])
    atom_local = np.arange(n_atoms, dtype=np.int64) - offsets[atom_dataset]
    # every atom's subsets, in order of appearance
    members_order = order[np.argsort(gid_of_sub[order], kind="stable")]
    atom_ptr = np.zeros(n_atoms + 1, dtype=np.int64)
    np.cumsum(np.bincount(gid_of_sub, minlength=n_atoms), out=atom_ptr[1:])

    set_of = sorted((base, gset) for gset, base in subsets.sets.values())
    set_bases = np.array([b for b, _ in set_of], dtype=np.int64)

    def locate(sid):
        """``(gset, k)`` of a set's subset, or ``(None, ctx)``."""
        ctx = subsets.contexts_by_id.get(sid)
        if ctx is not None:
            return None, ctx
        j = int(np.searchsorted(set_bases, sid, side="right")) - 1
        return set_of[j][1], sid - set_of[j][0]

    subsets.contexts_by_id = dict(subsets.contexts)
    sub_labels = [None] * n_sub
    for sid, ctx in subsets.contexts:
        sub_labels[sid] = ctx.label
    for gset, base in subsets.sets.values():
        sub_labels[base: base + len(gset)] = gset.labels
    label = sub_labels.__getitem__

    def context(sid):
        gset, k = locate(sid)
        return k if gset is None else gset.context(k)

    def atom_contexts(g):
        return tuple(context(int(s)) for s in members_order[atom_ptr[g]: atom_ptr[g + 1]])

    def atom_info(g):
        subs = members_order[atom_ptr[g]: atom_ptr[g + 1]].tolist()
        first = label(subs[0])
        gset, k = locate(subs[0])
        weight = (env.weight(k) if gset is None
                  else WeightSum.of(gset.dataset.weights[gset.rows[gset.ptr[k]: gset.ptr[k + 1]]]))
        aliases = tuple(dict.fromkeys(lab for lab in map(label, subs[1:]) if lab != first))
        return AtomInfo(index=g, dataset=list(datasets)[int(atom_dataset[g])], local_index=int(atom_local[g]),
                        name=f"ppr[{first}]", subset=first, aliases=aliases, n_members=int(size[subs[0]]),
                        total_weight=weight.value())

    # -- membership tables
    tables = {}
    for d, name in enumerate(datasets):
        lo, hi = int(offsets[d]), int(offsets[d + 1])
        firsts = atom_first[lo:hi]
        sizes = size[firsts]
        tables[name] = membership_table(datasets[name], sizes, _rows_gather(firsts, sizes, rows_of_sub, subsets),
                                        lo)

    # -- C, kappa and the objective
    counts, gids, vals, masses, kappa = [], [], [], [], []
    fam_iter = iter(fam_terms)
    for part in row_parts:
        if part[0] == "form":
            f = part[1]
            counts.append(np.array([len(f.terms)], dtype=np.int64))
            gids.append(gid_of_sub[form_sids(f)])
            vals.append(np.fromiter(f.terms.values(), dtype=np.float64, count=len(f.terms)))
            masses.append(np.fromiter((f.mass[c] for c in f.terms), dtype=np.float64, count=len(f.terms)))
            kappa.append(np.array([-f.const]))
            continue
        for _ in part[1].blocks:
            sids, v, ms, consts = next(fam_iter)
            k, n_sides = sids.shape[0], sids.shape[1]
            counts.append(np.full(k * n_sides, 2, dtype=np.int64))
            gids.append(gid_of_sub[sids.reshape(-1)])
            vals.append(np.broadcast_to(v, (k, n_sides, 2)).reshape(-1))
            masses.append(np.broadcast_to(ms, (k, n_sides, 2)).reshape(-1))
            kappa.append(np.broadcast_to(-consts, (k, n_sides)).reshape(-1))

    B = rows_from_terms(_cat(counts, np.int64), _cat(gids, np.int64), _cat(vals, np.float64),
                        _cat(masses, np.float64), n_atoms)
    kappa = _cat(kappa, np.float64).reshape(m)
    empty = np.flatnonzero(np.diff(B.indptr) == 0)
    if empty.size:
        i = int(empty[0])
        part_forms = _row_form(i, spans, row_parts)
        if part_forms is not None:
            raise constant_constraint_error(constraints[i], part_forms, {ctx.label for ctx in part_forms.terms})
        b, k, s = _family_row(i, spans)
        side = b.sides[s]
        labs = {b.set.labels[k], b.ref_subset.label}
        raise constant_constraint_error(constraints[i], _ConstForm(side.const), labs)
    obj_coef = np.zeros(n_atoms)
    obj_mass = np.zeros(n_atoms)
    for ctx, v in obj_form.terms.items():
        g = gid_of_sub[subsets.ctx_id[ctx]]
        obj_coef[g] += v
        obj_mass[g] += obj_form.mass[ctx]
    obj_coef[np.abs(obj_coef) <= CANCEL_RTOL * obj_mass] = 0.0

    rates = _rate_layer(leaves, n_atoms, gid_of_sub, subsets.ctx_id, [label(s) for s in atom_first.tolist()])
    inverse = InverseData(constraints=constraints, originals=originals, sources=tuple(sources), names=tuple(names))
    compiled = CompiledProblem(
        datasets=tuple(datasets),
        atoms=LazyTuple(n_atoms, atom_info),
        tables=tables,
        atom_dataset=readonly(atom_dataset),
        atom_local=readonly(atom_local),
        C=LinearMap(B),
        kappa=readonly(kappa),
        objective_coef=readonly(obj_coef),
        objective_constant=float(obj_form.const),
        constraint_names=tuple(names),
        rates=rates,
        inverse_data=inverse,
        metric=None,
        metric_constraints=(),
        atom_offsets=readonly(np.full(n_atoms, -1, dtype=np.int64)),
        thresholds=(),
        atom_contexts=LazyTuple(n_atoms, atom_contexts),
    )
    env.forget_members()  # the tables hold the rows; the lazy report forms may scan them again
    return datasets, constraints, compiled


def _cat(parts, dtype):
    """``parts`` concatenated as ``dtype`` (empty when there are none)."""
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


def _row_form(i, spans, row_parts):
    """Row ``i``'s form when it is a single constraint's (else None)."""
    for (start, c), part in zip(spans, row_parts):
        if not is_family(c) and start == i:
            return part[1]
    return None


def _family_row(i, spans):
    starts = [s for s, _ in spans]
    j = int(np.searchsorted(starts, i, side="right")) - 1
    start, fam = spans[j]
    return fam.locate(i - start)


def _rows_gather(firsts, sizes, rows_of_sub, subsets):
    """``rows_of(a, b)`` of a dataset's atoms (their first subsets ``firsts``): gathered from the sets' CSR."""
    pool_parts, starts = [], np.empty(firsts.size, dtype=np.int64)
    is_ctx = np.isin(firsts, np.fromiter(subsets.contexts_by_id, dtype=np.int64, count=len(subsets.contexts_by_id)))
    off = 0
    set_pos = {}
    for gset, base in subsets.sets.values():
        set_pos[base] = off
        pool_parts.append(gset.rows)
        off += gset.rows.size
    for a in np.flatnonzero(is_ctx).tolist():
        rows = rows_of_sub(int(firsts[a]))
        starts[a] = off
        pool_parts.append(rows)
        off += rows.size
    fam = np.flatnonzero(~is_ctx)
    if fam.size:
        bases = np.array(sorted(set_pos), dtype=np.int64)
        sid = firsts[fam]
        j = np.searchsorted(bases, sid, side="right") - 1
        gsets = {base: gset for gset, base in subsets.sets.values()}
        ptr_start = np.empty(fam.size, dtype=np.int64)
        for jj in np.unique(j).tolist():
            base = int(bases[jj])
            sel = j == jj
            ptr_start[sel] = gsets[base].ptr[sid[sel] - base] + set_pos[base]
        starts[fam] = ptr_start
    pool = np.concatenate(pool_parts) if pool_parts else np.zeros(0, dtype=np.int64)

    def rows_of(a, b):
        if b == a + 1:
            return pool[starts[a]: starts[a] + sizes[a]]
        lens = sizes[a:b]
        first = np.repeat(starts[a:b] - np.concatenate(([0], np.cumsum(lens)[:-1])), lens)
        return pool[first + np.arange(int(lens.sum()), dtype=np.int64)]

    return rows_of


def _rate_layer(leaves, n_atoms, gid_of_sub, ctx_id, atom_labels):
    """Every rate leaf, then every atom, under unique names (as ``_compile._rate_layer``).

    A name met again is skipped when its row and constant are the first's, else renamed ``"name #2"``, ...
    The common case, where the atoms' names are distinct and each one a leaf already has is that leaf's
    unit row (``ppr[g=a]``: the leaf and the atom), is decided on arrays; any other goes name by name.
    """
    leaf_names, counts, gids, vals, masses, consts = [], [], [], [], [], []
    for run in leaves.runs:
        if run[0] == "form":
            f = run[2]
            leaf_names.append(run[1])
            counts.append(np.array([len(f.terms)], dtype=np.int64))
            gids.append(gid_of_sub[np.array([ctx_id[c] for c in f.terms], dtype=np.int64)])
            vals.append(np.fromiter(f.terms.values(), dtype=np.float64, count=len(f.terms)))
            masses.append(np.fromiter((f.mass[c] for c in f.terms), dtype=np.float64, count=len(f.terms)))
            consts.append(np.array([f.const]))
        else:
            _, nm, sids, coef = run
            leaf_names += nm
            counts.append(np.ones(sids.size, dtype=np.int64))
            gids.append(gid_of_sub[sids])
            vals.append(np.full(sids.size, coef))
            masses.append(np.full(sids.size, abs(coef)))
            consts.append(np.zeros(sids.size))

    consts = _cat(consts, np.float64)
    L = rows_from_terms(_cat(counts, np.int64), _cat(gids, np.int64), _cat(vals, np.float64), _cat(masses, np.float64),
                        n_atoms)
    atom_names = [f"ppr[{lab}]" for lab in atom_labels]
    kept = _atoms_kept(leaves.seen, leaf_names, atom_names, L, consts, n_atoms)
    if kept is not None:
        names = leaf_names + [atom_names[g] for g in kept.tolist()]
        is_leaf = np.arange(len(names)) < len(leaf_names)
        js = np.concatenate([np.arange(len(leaf_names), dtype=np.int64), kept])
        return _layer(names, is_leaf, js, np.concatenate([consts, np.zeros(kept.size)]), L, n_atoms)
    consts = consts.tolist()
    seen: dict = {}  # the kept rows' names
    row_of, cst = [], []  # row_of: ("leaf", i) or ("atom", g)

    def same(k, idx, val, const):
        kind, j = row_of[k]
        if kind == "leaf":
            a, b = L.indptr[j], L.indptr[j + 1]
            ok = np.array_equal(L.indices[a:b].astype(np.int64), idx) and np.array_equal(L.data[a:b], val)
        else:
            ok = np.array_equal(np.array([j]), idx) and np.array_equal(np.ones(1), val)
        return ok and cst[k] == const

    def add(name, ref, idx_val, const):
        if rate_row_name(seen, name, lambda k: same(k, *idx_val(), const)) is not None:
            row_of.append(ref)
            cst.append(const)

    for i, name in enumerate(leaf_names):
        add(name, ("leaf", i), lambda i=i: (L.indices[L.indptr[i]: L.indptr[i + 1]].astype(np.int64),
                                            L.data[L.indptr[i]: L.indptr[i + 1]]), consts[i])
    for g, name in enumerate(atom_names):
        add(name, ("atom", g), lambda g=g: (np.array([g], dtype=np.int64), np.ones(1)), 0.0)
    is_leaf = np.array([kind == "leaf" for kind, _ in row_of], dtype=bool)
    js = np.array([j for _, j in row_of], dtype=np.int64)
    return _layer(list(seen), is_leaf, js, cst, L, n_atoms)


def _atoms_kept(leaf_set, leaf_names, atom_names, L, consts, n_atoms):
    """The atoms the rate layer adds after the leaves, when no name needs renaming (else None).

    Atom ``g`` is skipped when the first leaf whose row is ``g``'s unit row has ``g``'s name; every other
    atom's name must be new (no leaf's, no other atom's).
    """
    n_leaves = len(leaf_names)
    lens = np.diff(L.indptr)
    unit = np.flatnonzero((lens == 1) & (consts == 0.0))
    unit = unit[L.data[L.indptr[unit]] == 1.0]
    leaf_of = np.full(max(int(n_atoms), 1), n_leaves, dtype=np.int64)
    np.minimum.at(leaf_of, L.indices[L.indptr[unit]].astype(np.int64), unit)  # the first unit leaf of each atom
    j = leaf_of[:len(atom_names)]
    cand = np.flatnonzero(j < n_leaves)
    matched = np.zeros(len(atom_names), dtype=bool)
    if cand.size:
        jc = j[cand].tolist()
        matched[cand] = np.fromiter(map(str.__eq__, [atom_names[g] for g in cand.tolist()],
                                        [leaf_names[i] for i in jc]), dtype=bool, count=cand.size)
    rest = [atom_names[g] for g in np.flatnonzero(~matched).tolist()]
    if len(set(rest)) != len(rest) or not leaf_set.isdisjoint(rest):
        return None
    return np.flatnonzero(~matched)


def _layer(names, kinds, js, cst, L, n_atoms):
    """The rate layer of the kept rows (``kinds``: leaf row ``js`` of ``L``, else atom ``js``'s unit row), as
    ``LinearMap.from_rows`` builds it."""
    lens = np.where(kinds, np.diff(L.indptr)[np.where(kinds, js, 0)] if L.shape[0] else 0, 1).astype(np.int64)
    indptr = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(lens, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int64)
    data = np.empty(int(indptr[-1]), dtype=np.float64)
    leaf_rows = np.flatnonzero(kinds)
    if leaf_rows.size:
        src_len = lens[leaf_rows]
        src = np.repeat(L.indptr[js[leaf_rows]] - np.concatenate(([0], np.cumsum(src_len)[:-1])), src_len)
        src = src + np.arange(int(src_len.sum()), dtype=np.int64)
        dst = np.repeat(indptr[leaf_rows] - np.concatenate(([0], np.cumsum(src_len)[:-1])), src_len)
        dst = dst + np.arange(int(src_len.sum()), dtype=np.int64)
        indices[dst] = L.indices[src]
        data[dst] = L.data[src]
    atom_rows = np.flatnonzero(~kinds)
    indices[indptr[atom_rows]] = js[atom_rows]
    data[indptr[atom_rows]] = 1.0
    A = LinearMap(sp.csr_matrix((data, indices, indptr), shape=(len(names), int(n_atoms))))
    return RateLayer(names=tuple(names), A=A, b=readonly(np.array(cst, dtype=np.float64)))
