"""Goals over every value of a group column, lowered once for all the groups (:class:`GroupFamily`).

A parity goal states the same constraints for every group ``g`` of a column:
``rate(g) <= rate(all) + slack`` and ``rate(g) >= rate(all) - slack``, with
``rate`` the positive prediction rate, the true or the false positive rate.
Lowered one expression at a time, 10^4 groups cost 2 x 10^4 expression trees,
their names, and one scan of every row per group. Here they are lowered once:

* the groups' subsets come from one factorization of the column
  (:class:`GroupSet`: every group's rows, ascending, as one CSR from a
  stable sort of the codes; with a label condition, ``y = 1`` or ``y = 0``);
* one group's constraints are built and lowered by the ordinary rules
  (:func:`rateopt._language._lowering.lower`), with the group's subset under
  a sentinel name: that *prototype* gives every row's coefficients, constant,
  term order, rate leaves and name (the sentinel replaced by each group's
  label). The coefficients of ``ppr``, ``tpr`` and ``fpr`` on a group's subset
  do not depend on the data, so every group's row is the prototype's with its
  own subset: the compiled rows are those the expressions lower to.

The constraints themselves are made only when they are read
(:meth:`GroupFamily.constraint`, the same objects as :meth:`Goal.bind`'s).
A goal that the family cannot state (pairwise forms, other rates, a missing
or empty group, labels that do not tell groups apart, ...) is bound one
expression at a time as before (:meth:`GroupFamily.build` returns None).
"""

from __future__ import annotations

import numpy as np

from rateopt._language import _rates as R
from rateopt._language._data import DEFAULT_DATASET_NAME, Dataset
from rateopt._language._lowering import Env, lower
from rateopt._language._predicates import describe_group_value, wrap
from rateopt.exceptions import RateoptError

__all__ = ["GroupSet", "GroupFamily", "RATE_CONDITIONS", "SENTINEL"]

#: The subset's name in a prototype constraint (replaced by each group's label in the names).
SENTINEL = "\x00group\x00"

#: The rate leaves a family lowers, with the label condition of the subset they read.
RATE_CONDITIONS = {R.PositivePredictionRate: None, R.TruePositiveRate: 1, R.FalsePositiveRate: 0}


class GroupSet:
    """The subsets ``column = value_k`` (and ``y = cond``) of a dataset, for given values.

    Parameters
    ----------
    dataset : Dataset
    column : str
    cond : {None, 0, 1}
        The label condition (None: none).
    values : tuple
        The group values, in the goal's order.
    ptr : ndarray of int64
    rows : ndarray of int32 (int64 from 2**31 rows on)
        Group ``k``'s rows are ``rows[ptr[k]:ptr[k + 1]]`` (ascending).
    group_labels : list of str
        Each group's context label (as rate names print it).
    labels : list of str
        Each subset's label (``group_labels`` with the label condition).
    """

    __slots__ = ("dataset", "column", "cond", "values", "ptr", "rows", "group_labels", "labels")

    def __init__(self, dataset, column, cond, values, ptr, rows, group_labels, labels):
        self.dataset, self.column, self.cond, self.values = dataset, column, cond, values
        self.ptr, self.rows, self.group_labels, self.labels = ptr, rows, group_labels, labels

    @classmethod
    def build(cls, ds: Dataset, column, cond, values, given_values=None):
        """The set, or None where a group is empty (or of zero weight), or a value is not a group value.

        Parameters
        ----------
        ds : Dataset
        column : str
        cond : {None, 0, 1}
        values : tuple
            Single group values (no sequences).
        given_values : tuple, default=None
            The values as the goal was given them (None: every value of the column, ``values``).

        Returns
        -------
        GroupSet or None
        """
        if cond is not None and not ds.has_labels:
            return None
        all_values, codes = ds.group_factorization(column)
        if given_values is None and np.asarray(all_values).dtype.kind in "iufUb":  # every value, in order (distinct)
            pos = np.arange(len(all_values), dtype=np.int64)
        else:
            try:
                where = ds.group_positions(column)
                pos = [where.get(v) for v in values]
            except TypeError:  # an unhashable value
                return None
            if any(p is None for p in pos) or len(set(pos)) != len(pos):
                return None
        k = len(values)
        index = np.full(len(all_values) + 1, -1, dtype=np.int64)  # the last entry: a missing value (code -1)
        index[np.asarray(pos, dtype=np.int64)] = np.arange(k, dtype=np.int64)
        kk = index[codes]
        if cond is not None:
            kk[np.asarray(ds.y) != cond] = -1
        sel = np.flatnonzero(kk >= 0)
        group = kk[sel]
        rows = sel[np.argsort(group, kind="stable")]
        if sel.size and sel[-1] < 2**31:  # kept with the problem (sel ascending): 4 bytes a member
            rows = rows.astype(np.int32)
        counts = np.bincount(group, minlength=k)
        if not counts.all():
            return None
        ptr = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        if not (np.maximum.reduceat(np.asarray(ds.weights)[rows], ptr[:-1]) > 0).all():
            return None  # a group of zero weight: the expressions' lowering names it
        prefix = "" if ds.name == DEFAULT_DATASET_NAME else f"{ds.name}:"
        if given_values is None and np.asarray(all_values).dtype.kind in "iufU":  # str(v) is their name
            desc = [f"{column}={v}" for v in values]
        else:
            desc = [describe_group_value(column, v) for v in values]
        if len(set(desc)) != k:  # two values print alike: the expressions' names decide
            return None
        group_labels = [prefix + d for d in desc]
        labels = group_labels if cond is None else [f"{prefix}{wrap(d, '|')} & y={cond}" for d in desc]
        return cls(ds, column, cond, tuple(values), ptr, rows, group_labels, labels)

    def __len__(self):
        return len(self.values)

    @property
    def key(self):
        """What identifies the set's subsets: ``(dataset, column, cond)``."""
        return (id(self.dataset), self.column, self.cond)

    def group_context(self, k):
        """Group ``k``'s context (as the goal builds it)."""
        return self.dataset.context().subset(group=self.column, value=self.values[k])

    def context(self, k):
        """Subset ``k``'s context (the group's, with the label condition)."""
        ctx = self.group_context(k)
        return ctx if self.cond is None else ctx.positive() if self.cond == 1 else ctx.negative()


class _Side:
    """One side's prototype: the lowered row of one group, and its name and leaves with the group left open."""

    __slots__ = ("roles", "coefs", "masses", "const", "name", "leaves")

    def __init__(self, roles, coefs, masses, const, name, leaves):
        self.roles, self.coefs, self.masses, self.const = roles, coefs, masses, const
        self.name, self.leaves = name, leaves


class _Block:
    """The rows of one rate over the groups of one column: ``len(groups) x len(sides)`` rows, group-major."""

    __slots__ = ("set", "rate", "ref_rate", "ref_subset", "sides", "group_leaf")

    def __init__(self, gset, rate, ref_rate, ref_subset, sides, group_leaf):
        self.set, self.rate, self.ref_rate, self.ref_subset = gset, rate, ref_rate, ref_subset
        self.sides, self.group_leaf = sides, group_leaf

    @property
    def n_rows(self):
        return len(self.set) * len(self.sides)


def _split(template, label):
    """``template`` around its one ``label`` (None when it does not hold exactly one)."""
    if template.count(label) != 1:
        return None
    head, tail = template.split(label)
    return head, tail


class GroupFamily:
    """The constraints of one goal over every group of its column(s), lowered once.

    Build with :meth:`build`. Rows come block by block (one block per rate and
    column, in the goal's order), group by group, side by side.

    Attributes
    ----------
    goal : Goal
        The goal.
    dataset : Dataset
        The dataset it is bound to.
    datasets : tuple of Dataset
        ``(dataset,)``.
    blocks : list
        The blocks (see the module docstring).
    n_rows : int
        The number of constraints.
    """

    def __init__(self, goal, dataset, blocks, bounds, prefix, expand):
        self.goal, self.dataset, self.datasets = goal, dataset, (dataset,)
        self.blocks, self._bounds, self._prefix, self._expand = blocks, bounds, prefix, expand
        self.n_rows = sum(b.n_rows for b in blocks)
        starts = np.zeros(len(blocks) + 1, dtype=np.int64)
        np.cumsum([b.n_rows for b in blocks], out=starts[1:])
        self._starts = starts
        self._made: dict = {}

    @classmethod
    def build(cls, goal, ds, columns, values, rates, bounds, prefix, expand):
        """The family, or None when the goal's constraints are not all of its form.

        Parameters
        ----------
        goal : Goal
            The goal (kept for reports).
        ds : Dataset
            The dataset it binds to.
        columns : tuple of str
            The group columns (every value of each is a group; ``values``: those).
        values : tuple or None
            The values of the single column, or None for every value.
        rates : sequence of callable
            The rate functions, one block each (e.g. ``true_positive_rate``).
        bounds : callable
            ``bounds(rate_of_group, rate_of_all) -> list of Constraint``: one group's constraints.
        prefix : str or None
            The goal's name: the constraints are named ``"<prefix>: <name>"``.
        expand : callable
            ``expand() -> list of Constraint``: the goal's constraints one by one (:meth:`expand`).

        Returns
        -------
        GroupFamily or None
        """
        if (not isinstance(ds, Dataset) or type(ds).context is not Dataset.context
                or hasattr(ds, "compile_backend")):  # a partitioned dataset compiles where its rows live
            return None
        sets: dict = {}
        blocks = []
        env = Env()
        try:
            for fn in rates:
                all_ctx = ds.context()
                ref_rate = fn(all_ctx)
                cond = RATE_CONDITIONS.get(type(ref_rate), False)
                if cond is False:
                    return None
                for col in columns:
                    every = ds.group_values(col) if values is None else None
                    vals = values if values is not None else tuple(every.tolist())
                    if not vals or ((every is None or every.dtype.kind == "O")
                                    and any(isinstance(v, (list, tuple, set, frozenset, np.ndarray)) for v in vals)):
                        return None
                    gset = sets.get((col, cond))
                    if gset is None:
                        gset = sets[(col, cond)] = GroupSet.build(ds, col, cond, tuple(vals), values)
                    if gset is None:
                        return None
                    block = cls._block(env, ds, gset, fn, ref_rate, bounds, prefix)
                    if block is None:
                        return None
                    blocks.append(block)
        except RateoptError:  # the expressions' lowering says what is wrong
            return None
        return cls(goal, ds, blocks, bounds, prefix, expand)

    @staticmethod
    def _block(env, ds, gset, fn, ref_rate, bounds, prefix):
        proto = ds.context().subset(group=gset.column, value=gset.values[0], name=SENTINEL)
        if gset.cond is None:  # its rows are known: no scan of the column for them
            env.know(proto, gset.rows[gset.ptr[0]: gset.ptr[1]])
        sent = proto.label
        grp_sub = proto if gset.cond is None else proto.positive() if gset.cond == 1 else proto.negative()
        all_ctx = ref_rate.context
        ref_sub = all_ctx if gset.cond is None else all_ctx.positive() if gset.cond == 1 else all_ctx.negative()
        group_rate = fn(proto)
        leaf_form = lower(group_rate, env)
        if list(leaf_form.terms) != [grp_sub] or leaf_form.const != 0.0:
            return None
        group_leaf = (_split(group_rate.name, sent), leaf_form.terms[grp_sub])
        if group_leaf[0] is None:
            return None
        sides = []
        for c in bounds(group_rate, ref_rate):
            if prefix is not None:
                c = c.named(f"{prefix}: {c.name}")
            form = lower(c.expression, env)
            roles = []
            for key in form.terms:
                roles.append("grp" if key == grp_sub else "ref" if key == ref_sub else None)
            if sorted(map(str, roles)) != ["grp", "ref"]:
                return None
            name = _split(c.name, sent)
            leaves = []
            for leaf in c.expression.leaves():
                if leaf.context == proto:
                    if leaf.name != group_rate.name:
                        return None
                    leaves.append(("grp", None))
                elif leaf.context == all_ctx and leaf.name == ref_rate.name:
                    leaves.append(("ref", leaf))
                else:
                    return None
            if name is None:
                return None
            sides.append(_Side(tuple(roles), tuple(form.terms.values()), tuple(form.mass[k] for k in form.terms),
                               form.const, name, tuple(leaves)))
        if not sides:
            return None
        return _Block(gset, fn, ref_rate, ref_sub, sides, group_leaf)

    # -- names and constraints ---------------------------------------------------------------------

    def names(self) -> list:
        """Every row's constraint name, in row order."""
        out = []
        for b in self.blocks:
            templates = [s.name for s in b.sides]
            if len(templates) == 1:
                head, tail = templates[0]
                out += [head + lab + tail for lab in b.set.group_labels]
            else:
                out += [h + lab + t for lab in b.set.group_labels for h, t in templates]
        return out

    def locate(self, i):
        """Row ``i``'s ``(block, group, side)``."""
        j = int(np.searchsorted(self._starts, i, side="right")) - 1
        b = self.blocks[j]
        k, s = divmod(int(i - self._starts[j]), len(b.sides))
        return b, k, s

    def constraint(self, i):
        """Row ``i``'s constraint, as the goal states it (made once, then the same object).

        Parameters
        ----------
        i : int
            The row.

        Returns
        -------
        Constraint
        """
        c = self._made.get(i)
        if c is None:
            b, k, s = self.locate(i)
            c = self._bounds(b.rate(b.set.group_context(k)), b.ref_rate)[s]
            if self._prefix is not None:
                c = c.named(f"{self._prefix}: {c.name}")
            self._made[i] = c
        return c

    def expand(self) -> list:
        """The goal's constraints, bound one expression at a time (what :meth:`Goal.bind` returns)."""
        return self._expand()

    def __repr__(self):
        return f"GroupFamily({self.goal!r}, n_rows={self.n_rows})"
