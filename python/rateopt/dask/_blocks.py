"""A dataset whose rows are partitions on a Dask cluster, as one block of a training game.

:class:`RemoteBlock` has the members the driver uses of a
:class:`rateopt._training._spec.Block` (``n_samples``, ``n_features``, ``run_kernel``,
``revalidated``). Its :meth:`~RemoteBlock.run_kernel` is one map and one
reduction: the partitions are grouped by the worker that held them when the
block was made; one task per group, pinned to the worker holding the group's
partitions (so no partition is ever copied to balance the load), runs the
core's fused kernel on each of its partitions, in row order, with that
worker's threads, and sums them; the groups' sums are added in group order
(by a tree of tasks on the cluster when there are more than ``fan_in``
groups). The grouping is fixed, so the sums are added in the same order
whichever worker runs a group's task: a fit that loses a worker (its pins
lifted, its partitions recomputed elsewhere by Dask) gives the same numbers
as an undisturbed one.
"""

from __future__ import annotations

import time

import numpy as np

from rateopt._training._spec import Block
from rateopt.exceptions import RateoptError

from ._cluster import gather, holders, submit_on

__all__ = ["RemoteBlock", "KernelSums"]

#: At most this many partial sums are added by one task (and gathered by the client).
FAN_IN = 16


class KernelSums:
    """The kernel's outputs, summed over partitions (the fields of a core kernel result).

    ``kernel_s`` is the time the slowest group spent in the kernel (the
    iteration's critical path through the workers), for measurements.
    """

    __slots__ = ("rates", "proxy_pos_rates", "proxy_neg_rates", "grad", "grad_bias", "proxy_values",
                 "grad_offsets", "kernel_s")

    def __init__(self, rates, proxy_pos_rates, proxy_neg_rates, grad, grad_bias, proxy_values, grad_offsets,
                 kernel_s=0.0):
        self.rates, self.proxy_pos_rates, self.proxy_neg_rates = rates, proxy_pos_rates, proxy_neg_rates
        self.grad, self.grad_bias, self.proxy_values, self.grad_offsets = grad, grad_bias, proxy_values, grad_offsets
        self.kernel_s = kernel_s

    @classmethod
    def of(cls, res, scale=1.0):
        g = getattr(res, "grad_offsets", None)
        f = (lambda a: np.array(a, dtype=np.float64)) if scale == 1.0 else (lambda a: np.asarray(a) * scale)
        return cls(f(res.rates), f(res.proxy_pos_rates), f(res.proxy_neg_rates), f(res.grad),
                   float(res.grad_bias) * scale, f(res.proxy_values), np.zeros(0) if g is None else f(g),
                   float(getattr(res, "kernel_s", 0.0)))

    def add(self, other):
        """Add ``other`` into ``self`` (in place) and return ``self``."""
        for k in ("rates", "proxy_pos_rates", "proxy_neg_rates", "grad", "proxy_values"):
            getattr(self, k).__iadd__(getattr(other, k))
        self.grad_bias += other.grad_bias
        self.kernel_s = max(self.kernel_s, other.kernel_s)
        if other.grad_offsets.size:
            self.grad_offsets = self.grad_offsets + other.grad_offsets if self.grad_offsets.size else \
                other.grad_offsets.copy()
        return self

    def __reduce__(self):
        return (KernelSums, tuple(getattr(self, k) for k in self.__slots__))


def _worker_threads():
    try:
        from distributed import get_worker

        return max(1, int(get_worker().state.nthreads))
    except (ImportError, ValueError, AttributeError):  # pragma: no cover - outside a worker
        return None


def group_kernel(blocks, theta, bias, coefs, proxies, grad_weights, offset_ids, offsets, margin, rows, scales):
    """Run the kernel on a group's partitions (row order) with the worker's threads; their sum (a task)."""
    threads = _worker_threads()
    start = time.perf_counter()
    total = None
    for i, pb in enumerate(blocks):
        r = None if rows is None else rows[i]
        if r is not None and r.size == 0:
            continue
        res = Block(pb.X, pb.atoms, None).run_kernel(theta, bias, coefs, proxies, grad_weights, offset_ids, offsets,
                                                     margin=margin, rows=r, n_threads=threads)
        part = KernelSums.of(res, 1.0 if scales is None else scales[i])
        total = part if total is None else total.add(part)
    if total is not None:
        total.kernel_s = time.perf_counter() - start
    return total


def add_sums(*sums):
    """The sum of partial kernel sums, in the order given (None: a group without sampled rows)."""
    total = None
    for s in sums:
        if s is None:
            continue
        total = KernelSums.of(s) if total is None else total.add(s)
    return total


class RemoteBlock:
    """One partitioned dataset of a game: its partitions' features and tables live on the workers.

    Parameters
    ----------
    client : distributed.Client
        The cluster holding the partitions.
    blocks : list of distributed.Future
        One :class:`~rateopt.dask._compile.PartitionBlock` per partition, in row order.
    sizes : list of int
        Rows of each partition.
    atom_ids : ndarray of int64
        Global ids of the dataset's atoms.
    name : str
        The dataset's name.
    n_features : int
        Features of every partition.
    fan_in : int, default=FAN_IN
        Partial sums added per reduction task.
    """

    def __init__(self, client, blocks, sizes, atom_ids, name, n_features, *, fan_in=FAN_IN):
        self.client, self.blocks, self.name = client, list(blocks), name
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)])
        self.atom_ids = atom_ids
        self._n_features = int(n_features)
        self.fan_in = int(fan_in)
        self.groups = _groups_by_worker(client, self.blocks)
        #: Seconds the slowest group spent in the kernel during the last :meth:`run_kernel` (measurements).
        self.last_kernel_s = 0.0

    @property
    def n_samples(self):
        return int(self.starts[-1])

    @property
    def n_features(self):
        return self._n_features

    @property
    def n_partitions(self):
        return len(self.blocks)

    @property
    def X(self):
        raise RateoptError(
            f"dataset {self.name!r} is partitioned on a Dask cluster: its features stay on the workers. A "
            "KernelModel, an estimator oracle or another step that needs the features in this process is not "
            "available for it; use LinearModel and a gradient game (proxy-swap, proxy-external, "
            "lagrangian-hinge, unconstrained, three-player)"
        )

    atoms = X

    def revalidated(self):
        """Return this block unchanged (remote partitions are not validated again).

        Returns
        -------
        RemoteBlock
            ``self``: each partition was validated once, where it lives, and the cluster holds it read-only.
        """
        return self

    def run_kernel(self, theta, bias, coefs, proxies, grad_weights, offset_ids, offsets, *, margin, rows,
                   n_threads=None):
        """The kernel over every partition, summed.

        Parameters
        ----------
        theta : ndarray of shape (n_features,)
            The model's weights.
        bias : float
            The model's intercept.
        coefs : ndarray of shape (k, n_atoms of this dataset)
            The combinations' coefficients on this dataset's atoms.
        proxies : tuple of str
            The proxy of each combination.
        grad_weights : ndarray of shape (k,)
            Weights of the combinations in the gradient.
        offset_ids : ndarray of int64 or None
            Offset id of each atom (None: no offset atom).
        offsets : ndarray or None
            The trainable offsets.
        margin : float
            The hinge margin.
        rows : ndarray of int or None
            Global row ids of a minibatch (None: every row).
        n_threads : int or None
            Ignored: each worker runs the kernel with its own threads.

        Returns
        -------
        KernelSums
            The fields of the core kernel's result, summed over the partitions.
        """
        local_rows = scales = None
        if rows is not None:
            local_rows, scales = self._split_rows(np.asarray(rows, dtype=np.int64))
        theta = np.asarray(theta, dtype=np.float64)
        members_blocks = [[self.blocks[i] for i in members] for members in self.groups]
        where = holders(self.client, members_blocks, self.name)  # now: a lost worker's partitions are recomputed elsewhere
        futures = []
        for g, members in enumerate(self.groups):
            r = None if local_rows is None else [local_rows[i] for i in members]
            if r is not None and not any(x.size for x in r):
                continue
            s = None if scales is None else [scales[i] for i in members]
            futures.append(submit_on(self.client, where[g], group_kernel, members_blocks[g], theta, bias, coefs,
                                     proxies, grad_weights, offset_ids, offsets, margin, r, s))
        while len(futures) > self.fan_in:  # a reduction tree on the cluster
            futures = [self.client.submit(add_sums, *futures[i:i + self.fan_in], pure=False)
                       for i in range(0, len(futures), self.fan_in)]
        total = add_sums(*gather(self.client, futures, self.name))
        self.last_kernel_s = 0.0 if total is None else total.kernel_s
        return total

    def _split_rows(self, rows):
        """Per partition: its local row ids and the factor that turns its scaled sums into the full block's."""
        if rows.size == 0:
            raise ValueError("rows must not be empty")
        if rows.min() < 0 or rows.max() >= self.n_samples:
            raise ValueError(f"rows holds a row index outside [0, n_samples={self.n_samples})")
        part = np.searchsorted(self.starts, rows, side="right") - 1
        local, scales = [], []
        for p in range(self.n_partitions):
            r = rows[part == p] - self.starts[p]
            local.append(r)
            # the kernel scales a partition's sums by n_p / len(r); the full block's by n / len(rows)
            scales.append((self.n_samples * r.size) / (rows.size * int(self.sizes[p])) if r.size else 0.0)
        return local, scales


def _groups_by_worker(client, blocks):
    """Partitions grouped by the worker holding them now (a partition held nowhere yet: its own group)."""
    by_worker: dict = {}
    for i, w in enumerate(holders(client, blocks)):
        by_worker.setdefault(w if w is not None else f"unplaced-{i}", []).append(i)
    return sorted(by_worker.values())
