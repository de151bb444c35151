"""Progress bars: tqdm on a terminal, nothing otherwise (tqdm is optional)."""

from __future__ import annotations

import sys

__all__ = ["progress"]


class _Silent:
    def update(self, n=1):
        pass

    def close(self):
        pass


def progress(total, desc, quiet=False, stream=None):
    """A bar with ``update(n)`` and ``close()``: tqdm when installed, the stream is a TTY and not ``quiet``."""
    stream = stream or sys.stderr
    if quiet or not getattr(stream, "isatty", lambda: False)():
        return _Silent()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _Silent()
    return tqdm(total=total, desc=desc, file=stream, leave=False)
