"""The one place rateopt constructs a HiGHS solver: :func:`quiet_highs`, with no output at all.

HiGHS prints a banner ("Running HiGHS 1.x ... Copyright ...") on the C-level
standard output (file descriptor 1, not ``sys.stdout``) from its constructor,
the first time a ``Highs`` object is built in a process, before the
``output_flag`` option can be set (upstream ERGO-Code/HiGHS#2749). It would land
in ``rateopt fit``'s summary table and in any pipeline that reads rateopt's
standard output. :func:`quiet_highs` builds the first instance with file
descriptor 1 pointed at the null device (C ``stdio`` buffers flushed before
the descriptor is restored, so nothing buffered leaks afterwards), and every
instance with ``output_flag`` off. Every module that solves an LP with highspy
gets its solver here.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

import highspy

__all__ = ["quiet_highs"]

_lock = threading.Lock()
_first_done = False


def _flush_c_stdio():
    """``fflush(NULL)``: push C ``stdio`` buffers (the banner's ``printf``) to their descriptors now."""
    try:
        libc = ctypes.CDLL(None)
        libc.fflush(None)
    except (OSError, AttributeError, TypeError):  # pragma: no cover - no C library handle (e.g. Windows)
        pass


def _construct_silenced():
    """A ``highspy.Highs()`` built with file descriptor 1 on the null device (its banner discarded)."""
    fd = 1  # HiGHS prints with printf, whatever sys.stdout is
    try:
        saved = os.dup(fd)
    except OSError:  # no descriptor 1 at all (a detached process): nothing can be printed anyway
        return highspy.Highs()
    try:
        for stream in (sys.stdout, sys.__stdout__):  # what Python has buffered belongs before the redirect
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
        try:
            h = highspy.Highs()
        finally:
            _flush_c_stdio()
            os.dup2(saved, fd)
    finally:
        os.close(saved)
    return h


def quiet_highs(options=None):
    """A ``highspy.Highs`` solver that prints nothing (no banner, ``output_flag`` off).

    Parameters
    ----------
    options : mapping of str to object, default=None
        Further HiGHS options, set with ``setOptionValue`` in order.

    Returns
    -------
    highspy.Highs
        A fresh solver with ``output_flag = False`` and ``options`` set.

    Raises
    ------
    ValueError
        If HiGHS refuses an option (unknown name or invalid value).
    """
    global _first_done
    with _lock:
        if _first_done:
            h = highspy.Highs()
        else:
            h = _construct_silenced()
            _first_done = True
    for key, value in {"output_flag": False, **(options or {})}.items():
        if h.setOptionValue(key, value) == highspy.HighsStatus.kError:
            raise ValueError(f"HiGHS option {key!r}: HiGHS refused the value {value!r}")
    return h
