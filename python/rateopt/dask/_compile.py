"""Partition-wise compilation: the compile steps that read data, run where the partitions live.

:func:`rateopt._compiler._compile.compile_problem` lowers the expressions on the client
as usual; the three steps that read data come from :class:`PartitionedData`:

* the lowering's environment (:class:`PartitionedEnv`) gets each subset's
  member count and total weight by one global reduction over the partitions
  (each partition sums its exactly rescaled weights, the client adds the
  partial sums in partition order);
* subsets are merged into atoms when their memberships are identical on
  every partition (compared through a digest of each partition's mask);
* each partition builds its own membership table with the global
  denominators, ``w_j 2**-e_a / mant_a`` for the atom's total weight
  ``mant_a 2**e_a``, and keeps it next to its features.

No partition travels to the client: only counts, weight sums and digests.
"""

from __future__ import annotations

import hashlib

import numpy as np

from rateopt import core
from rateopt._compiler._compile import merge_by_membership, number_atoms
from rateopt._language._validation import readonly
from rateopt._language._data import Context
from rateopt._language._lowering import Env, WeightSum
from rateopt._language._predicates import Mask
from rateopt.exceptions import EmptySubsetError, RateoptError

from ._partitions import nbytes

__all__ = ["PartitionedData", "PartitionedEnv", "PartitionedTable", "PartitionBlock"]


# --------------------------------------------------------------------------- on the workers


def _mask(part, predicate):
    m = np.asarray(predicate.evaluate(part.data), dtype=bool)
    if m.shape != (part.n_samples,):  # pragma: no cover - refused on the client (a whole-dataset mask)
        raise RateoptError(f"a subset's mask has shape {m.shape} on a partition of {part.n_samples} rows")
    return m


def subset_stats(part, predicate):
    """``(members, mant, exp, digest)`` of one subset on one partition: its size, its total weight
    ``mant * 2**exp`` (exactly rescaled, as :class:`rateopt._language._lowering.WeightSum`) and a digest of its mask."""
    m = _mask(part, predicate)
    w = WeightSum.of(part.data.weights[m]) if m.any() else WeightSum()
    digest = hashlib.blake2b(np.packbits(m).tobytes(), digest_size=16).digest()
    return int(np.count_nonzero(m)), w.mant, w.exp, digest


class PartitionBlock:
    """A partition's features and its membership table (global denominators), as the kernel reads them."""

    def __init__(self, index, X, atoms):
        self.index, self.X, self.atoms = index, X, atoms

    @property
    def n_samples(self):
        return self.X.n_samples

    def __sizeof__(self):  # what Dask weighs before moving it: the bytes of its arrays
        a = self.atoms
        return object.__sizeof__(self) + nbytes(self.X.data, a.indptr, a.indices, a.weights)

    def __reduce__(self):  # moved between workers: rebuilt (and validated) from the plain arrays
        a = self.atoms
        return (_rebuild_block, (self.index, self.X.data, a.indptr, a.indices, a.weights, a.n_atoms))


def _rebuild_block(index, X, indptr, indices, weights, n_atoms):
    return PartitionBlock(index, core.FeatureMatrix(X), core.AtomTable(indptr, indices, weights, n_atoms))


def partition_block(part, predicates, exps, mants):
    """The membership table of one partition (CSR, ascending atom ids within a row) with its atoms' global
    weight sums ``mants * 2**exps``: the same table :func:`rateopt._compiler._compile._membership_table` builds."""
    n = part.n_samples
    w = part.data.weights
    rows_parts, cols_parts, val_parts = [], [], []
    for a, (pred, e, mant) in enumerate(zip(predicates, exps, mants)):
        idx = np.flatnonzero(_mask(part, pred))
        rows_parts.append(idx)
        cols_parts.append(np.full(idx.size, a, dtype=np.int32))
        val_parts.append(np.ldexp(w[idx], -int(e)) / mant)
    rows = np.concatenate(rows_parts) if rows_parts else np.empty(0, dtype=np.int64)
    cols = np.concatenate(cols_parts) if cols_parts else np.empty(0, dtype=np.int32)
    vals = np.concatenate(val_parts) if val_parts else np.empty(0, dtype=np.float64)
    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    atoms = core.AtomTable(indptr, np.ascontiguousarray(cols[order], dtype=np.int32),
                           np.ascontiguousarray(vals[order], dtype=np.float64), len(predicates))
    return PartitionBlock(part.index, part.X, atoms)


# --------------------------------------------------------------------------- on the client


class SubsetStats:
    """A subset's global member count, total weight and per-partition mask digests."""

    def __init__(self, count, weight, digests):
        self.count, self.weight, self.digests = count, weight, digests


def _has_mask(predicate):
    if isinstance(predicate, Mask):
        return True
    parts = getattr(predicate, "parts", None)
    if parts is not None:
        return any(_has_mask(p) for p in parts)
    part = getattr(predicate, "part", None)
    return part is not None and _has_mask(part)


class PartitionedEnv(Env):
    """The lowering's data access for partitioned datasets: statistics by global reductions."""

    def __init__(self):
        super().__init__()
        self._stats: dict = {}

    def stats(self, ctx: Context) -> SubsetStats:
        s = self._stats.get(ctx)
        if s is None:
            if _has_mask(ctx._predicate):
                raise RateoptError(
                    f"{self.where}: subset {ctx.label!r} uses a boolean mask over the whole dataset, which a "
                    f"partitioned dataset ({ctx.dataset.name!r}) cannot evaluate where its rows live: state the "
                    "subset with a group column (rateopt.dask.Dataset(..., groups=...) and "
                    "subset(group=..., value=...))"
                )
            s = ctx.dataset.subset_stats(ctx._predicate)
            self._stats[ctx] = s
        return s

    def mask(self, ctx):  # pragma: no cover - the partitioned steps never ask for a client-side mask
        raise RateoptError("a partitioned dataset's masks live on the workers")

    def weight(self, ctx):
        return self.stats(ctx).weight

    def nonempty(self, ctx, node):
        s = self.stats(ctx)
        if not s.count:
            raise EmptySubsetError(
                f"{self.where}: {node} is measured on subset {ctx.label!r} of dataset "
                f"{ctx.dataset.name!r}, which is empty"
            )
        if not s.weight:
            raise EmptySubsetError(
                f"{self.where}: {node} is measured on subset {ctx.label!r} of dataset "
                f"{ctx.dataset.name!r}, whose weights sum to zero"
            )
        return s.weight


def merge_subsets(env, datasets, forms):
    """As :func:`rateopt._compiler._compile._merge_subsets`, memberships compared by their per-partition digests."""

    def membership(ctx):
        s = env.stats(ctx)
        return (s.digests, id(getattr(ctx, "threshold", None))), s

    return merge_by_membership(datasets, forms, membership)


class PartitionedTable:
    """A dataset's membership table split by partition: the tables live on the workers, next to the features.

    Attributes
    ----------
    dataset : str
    n_samples : int
    n_atoms : int
    atom_ids : ndarray of int64
        Global id of each local atom.
    offset : int
    blocks : list of distributed.Future
        One :class:`PartitionBlock` per partition, in row order.
    """

    def __init__(self, dataset, n_samples, n_atoms, offset, blocks):
        self.dataset, self.n_samples, self.n_atoms, self.offset = dataset, n_samples, n_atoms, offset
        self.atom_ids = readonly(np.arange(offset, offset + n_atoms, dtype=np.int64))
        self.blocks = blocks

    def atom_rates(self, values):
        raise RateoptError(
            f"dataset {self.dataset!r} is partitioned on a Dask cluster: evaluate a classifier there with "
            "rateopt.dask.evaluate(problem, classifier)"
        )


def atoms_and_tables(env, datasets, per_ds):
    """Global atom numbering, atom descriptions and per-partition membership tables (built on the workers)."""
    return number_atoms(
        datasets, per_ds, lambda stats, ctxs: (stats.count, stats.weight.value()),
        lambda name, entries, offset: datasets[name].membership_tables(
            [ctxs[0]._predicate for _, ctxs in entries], [s.weight for s, _ in entries], offset))


class PartitionedData:
    """The compile backend of :class:`rateopt.dask.Dataset` (see :func:`rateopt._compiler._compile._data_backend`)."""

    env = PartitionedEnv
    merge_subsets = staticmethod(merge_subsets)
    atoms_and_tables = staticmethod(atoms_and_tables)
