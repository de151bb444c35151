"""The Dask client a partitioned dataset uses, and the check that its workers can run rateopt."""

from __future__ import annotations

from .._version import __version__
from ..exceptions import RateoptError

__all__ = ["get_client", "check_workers"]


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
