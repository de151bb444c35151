"""Atomic file output: nothing half-written, nothing overwritten before the new content is complete.

Every file rateopt writes (saved models and results, reports, the command
line's predictions, encodings and evaluations) is written to a temporary file
in the target's directory and renamed onto the target (``os.replace``, atomic
on one file system) only once it is complete. Each temporary file is flushed
to disk (``fsync``) before its rename and the directory after it, so a power
loss cannot leave a renamed but empty target. On any failure (an exception,
``KeyboardInterrupt``) the temporary files are deleted and an existing target
is left as it was.

A process killed outright (``SIGKILL``, power loss) cannot delete its
temporary files. Their names carry the writing host and process id
(``.NAME.HOST-PID.RANDOM.part.SUFFIX``), and the next write of the same target
deletes those whose process no longer runs on this host; a live concurrent
writer's temporary files are kept.

* :func:`atomic_path` — one file: ``with atomic_path(target) as tmp: write(tmp)``;
* :class:`AtomicFiles` — several files that appear together or not at all
  (a model with its encoding and training result, and its report);
* :func:`check_writable` — refuse, before any work, a target whose directory
  is missing or not writable.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import stat
import tempfile

from ..exceptions import RateoptError

__all__ = ["AtomicFiles", "atomic_path", "check_writable", "fsync_rename", "remove_stale_temporaries"]


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


def _host():
    """This host's name reduced to ``[A-Za-z0-9_]`` (it sits between dots and before ``-PID`` in a name)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname() or "host")[:40] or "host"


def _alive(pid):
    """Whether a process ``pid`` runs on this host (a process of another user counts as running)."""
    if pid <= 0 or os.name == "nt":  # Windows: os.kill(pid, 0) would send CTRL_C_EVENT; keep the file
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists
        return True
    return True


def remove_stale_temporaries(target):
    """Delete ``target``'s temporary files left by killed processes of this host; return their paths.

    A temporary file of :class:`AtomicFiles` is named ``.NAME.HOST-PID.RANDOM.part.SUFFIX``; one whose HOST
    is this host and whose PID no longer runs is stale. Files of other hosts (a shared directory) and of
    running processes are kept.
    """
    folder, name = os.path.split(os.path.abspath(os.fspath(target)))
    suffix = os.path.splitext(name)[1]
    pattern = re.compile(re.escape(f".{name}.{_host()}-") + r"(\d+)\.[A-Za-z0-9_]+" + re.escape(".part" + suffix)
                         + "$")
    removed = []
    try:
        entries = os.listdir(folder)
    except OSError:
        return removed
    for entry in entries:
        m = pattern.match(entry)
        if m and not _alive(int(m.group(1))):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(folder, entry))
                removed.append(os.path.join(folder, entry))
    return removed


def _fsync_file(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder):
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # a platform without directory handles (Windows): the rename is the best it offers
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a directory
    finally:
        os.close(fd)


def fsync_rename(tmp, target):
    """``fsync`` ``tmp``, rename it onto ``target``, then ``fsync`` the directory (the rename is durable)."""
    _fsync_file(tmp)
    os.replace(tmp, target)
    _fsync_dir(os.path.dirname(os.path.abspath(os.fspath(target))))


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
        remove_stale_temporaries(target)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.{_host()}-{os.getpid()}.", suffix=".part" + suffix,
                                       dir=folder)
        except OSError as exc:  # name the file asked for, not the temporary one
            raise type(exc)(exc.errno, f"cannot write {target}: {exc.strerror}") from None
        os.close(fd)
        self._pending.append((tmp, target))
        return tmp

    def commit(self):
        """Flush every temporary file to disk, then rename each onto its target and flush its directory."""
        pending, self._pending = self._pending, []
        i = 0
        try:
            for tmp, target in pending:  # every file on disk first, so the renames follow each other closely
                os.chmod(tmp, _final_mode(target))
                _fsync_file(tmp)
            for i, (tmp, target) in enumerate(pending):
                os.replace(tmp, target)
            for folder in dict.fromkeys(os.path.dirname(os.path.abspath(t)) for _, t in pending):
                _fsync_dir(folder)
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
