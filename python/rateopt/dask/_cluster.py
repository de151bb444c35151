"""The Dask client a partitioned dataset uses, the check that its workers can run rateopt, and tasks pinned
to the worker holding their partition.

Every task that reads a partition (or its membership table) runs on the worker
holding it, and only there (``workers=[addr], allow_other_workers=False``):
Dask never copies a partition to balance the load, so each worker holds its
own partitions and no more. A pin must not outlive its worker: a scheduler
plugin (:func:`lift_lost_pins`) lifts the pins to a worker that leaves the
cluster, so that the tasks it held and the partitions it lost are recomputed
elsewhere, as Dask does for unpinned tasks.
"""

from __future__ import annotations

import uuid
from concurrent.futures import CancelledError

from .._version import __version__
from ..exceptions import RateoptError

__all__ = ["PINNED_PREFIX", "check_workers", "gather", "get_client", "holders", "lift_lost_pins", "lost_partitions_error",
           "lost_cluster_error", "scheduler_lost_error", "submit_on"]

#: Key prefix of the tasks pinned to a partition's worker (the only pins the scheduler plugin lifts).
PINNED_PREFIX = "rateopt-pinned-"


def get_client(client=None):
    """``client``, or the current ``distributed`` client.

    Raises
    ------
    RateoptError
        If ``client`` is None and no client is running (the message says how to start one).
    """
    from distributed import Client, default_client

    if client is not None:
        if not isinstance(client, Client):
            raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")
        return client
    try:
        return default_client()
    except ValueError:
        raise RateoptError(
            "no Dask client is running: start one first, e.g. "
            "distributed.Client(distributed.LocalCluster(n_workers=2, threads_per_worker=1)), or pass client="
        ) from None


def _probe():
    """A function shipped to the workers by value (it does not need rateopt to be unpickled there)."""

    def probe():
        import importlib

        try:  # by name: importing rateopt there is what the probe tests
            package = importlib.import_module("rateopt")
            importlib.import_module("rateopt._core")
        except Exception as exc:  # noqa: BLE001 - any failure means the worker cannot run the kernel
            return f"cannot import rateopt ({type(exc).__name__}: {exc})"
        return "rateopt " + getattr(package, "__version__", "?")

    return probe


def check_workers(client):
    """Raise unless every worker of ``client`` imports rateopt with its compiled core, at the client's version.

    Parameters
    ----------
    client : distributed.Client
        The cluster to check.

    Raises
    ------
    RateoptError
        If the cluster has no worker, or a worker cannot import rateopt (the
        message names the workers and the import error) or runs another version.
    """
    answers = client.run(_probe())
    if not answers:
        raise RateoptError("the Dask cluster has no workers: start some before building a rateopt.dask.Dataset")
    want = f"rateopt {__version__}"
    bad = {w: a for w, a in answers.items() if a != want}
    if bad:
        lines = "; ".join(f"{w}: {a}" for w, a in sorted(bad.items()))
        raise RateoptError(
            f"{len(bad)} of {len(answers)} Dask workers cannot run rateopt ({want} on the client): {lines}. "
            "Install the same rateopt[dask] on every worker (the kernel runs where the partitions live)"
        )


def _lift_lost_pins_plugin():
    """A scheduler plugin, shipped by value (the scheduler need not import rateopt): pins to a worker that is not
    in the cluster are lifted, for tasks already known when it leaves and for tasks submitted after."""
    from distributed.diagnostics.plugin import SchedulerPlugin

    prefix = PINNED_PREFIX

    def pinned(ts):
        return ts.worker_restrictions and not ts.loose_restrictions and str(ts.key).startswith(prefix)

    class LiftLostPins(SchedulerPlugin):
        name = "rateopt-lift-lost-pins"
        idempotent = True

        def update_graph(self, scheduler, *, tasks=(), **kwargs):  # before the new tasks are scheduled
            for key in tasks:
                ts = scheduler.tasks.get(key)
                if ts is not None and pinned(ts) and not any(w in scheduler.workers for w in ts.worker_restrictions):
                    ts.worker_restrictions = None

        def remove_worker(self, scheduler, worker, *, stimulus_id, **kwargs):
            recommendations = {}
            for ts in list(scheduler.tasks.values()):
                if pinned(ts) and worker in ts.worker_restrictions:
                    ts.worker_restrictions = None
                    if ts.state == "no-worker":
                        recommendations[ts.key] = "processing"
            if recommendations:
                scheduler.transitions(recommendations, stimulus_id)

    return LiftLostPins()


def lift_lost_pins(client):
    """Install (once per scheduler) the plugin that lifts pins to workers that left the cluster.

    Parameters
    ----------
    client : distributed.Client
        The cluster's client.
    """
    client.register_plugin(_lift_lost_pins_plugin())


def holders(client, futures, dataset=None):
    """The worker holding each future now (the first in address order), None where none holds it yet.

    Parameters
    ----------
    client : distributed.Client
        The cluster's client.
    futures : list of distributed.Future
        Partitions, or lists of partitions that one task reads (held by one worker, else None).
    dataset : str, default=None
        The dataset's name, for the errors.

    Returns
    -------
    list of (str or None)

    Raises
    ------
    RateoptError
        If the connection to the scheduler was lost (or the partitions with a worker).
    """
    flat = [f for x in futures for f in (x if isinstance(x, list) else [x])]
    try:
        who = client.who_has(flat)
    except (CancelledError, OSError) as exc:  # OSError: distributed's CommClosedError
        raise lost_cluster_error(client, dataset, exc) from None
    out = []
    for x in futures:
        common = None
        for f in x if isinstance(x, list) else [x]:
            held = set(who.get(f.key, ()))
            common = held if common is None else common & held
        out.append(min(common) if common else None)
    return out


def submit_on(client, worker, fn, *args, **kwargs):
    """Submit ``fn(*args, **kwargs)`` to run on ``worker`` only (anywhere Dask chooses where ``worker`` is None).

    Parameters
    ----------
    client : distributed.Client
        The cluster's client.
    worker : str or None
        The address of the worker holding the partitions the task reads.
    fn : callable
        The task.
    *args, **kwargs
        Its arguments.

    Returns
    -------
    distributed.Future
    """
    key = f"{PINNED_PREFIX}{fn.__name__}-{uuid.uuid4().hex}"
    if worker is None:
        return client.submit(fn, *args, key=key, **kwargs)
    return client.submit(fn, *args, key=key, workers=[worker], allow_other_workers=False, **kwargs)


def lost_partitions_error(dataset, exc):
    """The error raised where a partition's task was cancelled: its data are gone from the cluster.

    Parameters
    ----------
    dataset : str
        The dataset's name.
    exc : Exception
        Dask's cancellation error.

    Returns
    -------
    RateoptError
    """
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return RateoptError(
        f"partitions of dataset {dataset!r} are gone from the cluster, as when a worker holding them is lost "
        f"(Dask: {reason}): partitions given as in-memory arrays are scattered to the workers with no source to "
        "recompute them from; build the dataset from dask collections (dask.array.from_array, dask.delayed, a "
        "dask DataFrame) so that Dask recomputes the partitions a lost worker held"
    )


def scheduler_lost_error(dataset, exc):
    """The error raised where the client lost its connection to the scheduler (killed, or the network gone).

    Parameters
    ----------
    dataset : str or None
        The dataset's name.
    exc : Exception
        Dask's error.

    Returns
    -------
    RateoptError
    """
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    where = "" if dataset is None else f" while working on dataset {dataset!r}"
    return RateoptError(
        f"the connection to the Dask scheduler was lost{where} ({type(exc).__name__}: "
        f"{reason}); the cluster's partitions are gone with it: start a new cluster and client, build the dataset "
        "again, and resume the fit from its last checkpoint: rateopt.train(problem, ..., "
        "resume=rateopt.load(path)) where the interrupted fit ran with checkpoint=path"
    )


def lost_cluster_error(client, dataset, exc):
    """The error for a cancelled task or a closed connection: the scheduler lost, or partitions lost with a worker.

    Parameters
    ----------
    client : distributed.Client
        The cluster's client.
    dataset : str or None
        The dataset's name.
    exc : Exception
        Dask's error (a cancellation, or ``CommClosedError``, an ``OSError``).

    Returns
    -------
    RateoptError
    """
    if isinstance(exc, OSError) or "scheduler-connection-lost" in str(exc) or getattr(client, "status", "running") \
            not in ("running", "newly-created"):
        return scheduler_lost_error(dataset, exc)
    return lost_partitions_error(dataset, exc)


def gather(client, futures, dataset):
    """``client.gather(futures)``, a cancellation (partitions lost with a worker) raised as a clear error.

    Parameters
    ----------
    client : distributed.Client
        The cluster's client.
    futures : list of distributed.Future
        The tasks.
    dataset : str
        The dataset's name, for the error.

    Returns
    -------
    list
        The tasks' results.

    Raises
    ------
    RateoptError
        If a task was cancelled because data it reads are gone from the cluster, or the connection to the
        scheduler was lost.
    """
    try:
        return client.gather(futures)
    except (CancelledError, OSError) as exc:  # OSError: distributed's CommClosedError
        raise lost_cluster_error(client, dataset, exc) from None
