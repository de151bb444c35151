"""Resolution of the ``n_threads`` argument shared by every entry point."""

import operator

from ._runtime import extension as _core

__all__ = ["resolve_n_threads", "MAX_THREADS"]

# The core keeps one set of scratch buffers per requested thread: far more
# threads than any machine has would only waste memory (and 2**31 does not fit
# the core's int).
MAX_THREADS = 4096


def resolve_n_threads(n_threads):
    """Turn a user's ``n_threads`` into a positive thread count for the core.

    Parameters
    ----------
    n_threads : int or None
        ``None`` follows the OpenMP setting (``OMP_NUM_THREADS`` and any limit set
        with threadpoolctl); ``-1`` uses every core; a positive integer is used as
        is. Without OpenMP the core always runs on one thread.

    Returns
    -------
    int
        The number of threads to request (at least 1).

    Raises
    ------
    ValueError
        If ``n_threads`` is 0, below -1, above ``MAX_THREADS`` (4096), or not an
        integer.
    """
    if n_threads is None:
        return max(1, int(_core.default_threads()))
    try:
        if isinstance(n_threads, bool):
            raise TypeError
        n = operator.index(n_threads)
    except TypeError:
        raise ValueError(f"n_threads must be an integer, -1 or None, got {n_threads!r}") from None
    if n == -1:
        return max(1, int(_core.available_cores()))
    if n < 1:
        raise ValueError(f"n_threads must be a positive integer, -1 (all cores) or None, got {n_threads!r}")
    if n > MAX_THREADS:
        raise ValueError(f"n_threads={n} is more than the supported maximum of {MAX_THREADS} threads")
    return n
