"""Atomic file output: nothing half-written, nothing overwritten before the new content is complete.

Every file rateopt writes (saved models and results, reports, the command
line's predictions, encodings and evaluations) is written to a temporary file
in the target's directory and renamed onto the target (``os.replace``, atomic
on one file system) only once it is complete. On any failure (an exception,
``KeyboardInterrupt``) the temporary files are deleted and an existing target
is left as it was.

* :func:`atomic_path` — one file: ``with atomic_path(target) as tmp: write(tmp)``;
* :class:`AtomicFiles` — several files that appear together or not at all
  (a model with its encoding and training result, and its report);
* :func:`check_writable` — refuse, before any work, a target whose directory
  is missing or not writable.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

from ..exceptions import RateoptError

__all__ = ["AtomicFiles", "atomic_path", "check_writable"]


def check_writable(path, what="the output file"):
    """Raise :class:`~rateopt.exceptions.RateoptError` unless ``path`` can be written.

    ``path``'s directory must exist and be writable, and ``path`` must not be
    a directory. Call it before long work (training) so that a bad output path
    is reported at once, not after the work.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise RateoptError(f"{what} {path}: is a directory; give a file name")
    if not os.path.isdir(folder):
        raise RateoptError(f"{what} {path}: the directory {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise RateoptError(f"{what} {path}: the directory {folder} is not writable")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise RateoptError(f"{what} {path}: the file exists and is not writable")


def _final_mode(path):
    """The permission bits the target gets: an existing file's, else a new file's (0o666 less the umask)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


class AtomicFiles:
    """Temporary files beside their targets, renamed onto them together when the ``with`` block succeeds.

    ``with AtomicFiles() as files:`` then ``files.path(target)`` gives the
    temporary path to write ``target`` to (in the same directory, with the same
    suffix, so writers that choose a format by suffix still do). When the block
    ends without an exception every temporary file replaces its target; when it
    raises, the temporary files are deleted and no target is touched.
    """

    def __init__(self):
        self._pending = []  # [(temporary path, target)]

    def path(self, target):
        """A new temporary path for ``target`` (an empty file, in ``target``'s directory)."""
        target = os.fspath(target)
        folder, name = os.path.split(os.path.abspath(target))
        suffix = os.path.splitext(name)[1]
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".part" + suffix, dir=folder)
        except OSError as exc:  # name the file asked for, not the temporary one
            raise type(exc)(exc.errno, f"cannot write {target}: {exc.strerror}") from None
        os.close(fd)
        self._pending.append((tmp, target))
        return tmp

    def commit(self):
        """Rename every temporary file onto its target."""
        pending, self._pending = self._pending, []
        try:
            for i, (tmp, target) in enumerate(pending):
                os.chmod(tmp, _final_mode(target))
                os.replace(tmp, target)
        except BaseException:
            self._pending = pending[i:]
            self.discard()
            raise

    def discard(self):
        """Delete every temporary file not yet renamed."""
        for tmp, _ in self._pending:
            with contextlib.suppress(OSError):
                os.remove(tmp)
        self._pending = []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self.discard()
        return False


@contextlib.contextmanager
def atomic_path(target):
    """A temporary path to write ``target`` to; renamed onto ``target`` when the block succeeds.

    Parameters
    ----------
    target : str or os.PathLike
        The file to write.

    Yields
    ------
    str
        The temporary path (same directory and suffix as ``target``).
    """
    with AtomicFiles() as files:
        yield files.path(target)
