"""Training on data partitioned across a Dask cluster (optional extra ``rateopt[dask]``).

A :class:`Dataset` keeps its partitions on the workers (``dask.array``,
``dask.dataframe`` or a list of scipy CSR/NumPy partitions). Problems are
stated on it as on an in-memory :class:`rateopt.Dataset`, compiled
partition-wise (subset weights by global reductions, membership tables built
on the workers) and trained by :func:`rateopt.train` with the same games,
records and solutions: each iteration runs the core's kernel on every
partition where it lives and reduces the tiny results (atom rates, gradient,
proxy values) to the client, which steps the players. :func:`predict` applies
a fitted classifier with ``map_partitions``.
"""

from ._blocks import RemoteBlock
from ._cluster import check_workers
from ._dataset import Dataset
from ._predict import evaluate, predict

__all__ = ["Dataset", "RemoteBlock", "check_workers", "predict", "evaluate"]
