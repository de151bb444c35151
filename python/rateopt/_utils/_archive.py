"""The file container of saved models and results: one ``.npz`` archive, arrays plus JSON metadata.

Nothing is pickled: the metadata is a JSON document stored as a ``uint8``
array under :data:`META_KEY`, beside plain numeric arrays. :func:`write_archive`
stamps the metadata with the format name it is given and
:data:`FORMAT_VERSION`; :func:`read_archive` reads the metadata and the
arrays a caller accepts, and turns every way a file can be damaged (empty,
a ``.npy``, not a zip, a corrupt or encrypted member, no metadata, bad JSON)
into a :class:`~rateopt.exceptions.RateoptError` naming the file. The
readers of each format (``rateopt.load``) check the fields with
:func:`real_array`, :func:`meta_number` and :func:`damaged`.
"""

from __future__ import annotations

import json
import math
import os
import zipfile

import numpy as np

from ..exceptions import RateoptError
from ._atomic import atomic_path

__all__ = ["FORMAT_VERSION", "META_KEY", "RATE_TOL", "check_range", "damaged", "meta_number", "read_archive",
           "real_array", "write_archive"]

#: The version every rateopt file is written with (and the only one read).
FORMAT_VERSION = 1
#: The archive member that holds the JSON metadata.
META_KEY = "__rateopt_metadata__"

#: How far outside [0, 1] a saved rate may lie: the round-off of a weighted sum of normalized weights
#: (far below any value a damaged or edited file would hold, e.g. 7.0 or -0.5).
RATE_TOL = 1e-6

#: A compressed member may expand at most this many times ...
MAX_RATIO = 100
#: ... unless it expands to at most this many bytes (small members compress well and are harmless).
SMALL_MEMBER = 1 << 20

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_NPY_MAGIC = b"\x93NUMPY"


def write_archive(path, meta, arrays, format_name):
    """Write ``arrays`` and ``meta`` (stamped with ``format_name`` and the version) to ``path``.

    The file is written beside ``path`` under a temporary name and renamed onto
    it once complete, so ``path`` never holds a half-written archive (a
    failed save leaves any previous file as it was).
    """
    meta = dict(meta, format=format_name, version=FORMAT_VERSION)
    payload = {META_KEY: np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)}
    for name, a in arrays.items():
        a = np.asarray(a)
        if a.dtype.kind not in "biuf":  # np.savez would pickle an object array, which load() never reads
            raise RateoptError(f"cannot save the array {name!r} of dtype {a.dtype}: rateopt files hold numbers only")
        payload[name] = a
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, **payload)


def read_archive(path, accepts):
    """The metadata dict and the accepted arrays of the file at ``path``.

    Parameters
    ----------
    path : str or os.PathLike
    accepts : callable
        ``accepts(name)`` says whether the array member ``name`` is read
        (members of no known field are ignored).

    Returns
    -------
    meta : object
        The decoded JSON metadata (the caller checks its format and fields).
    arrays : dict of str to ndarray

    Raises
    ------
    rateopt.exceptions.RateoptError
        If the file cannot be read or is damaged (the message names the file).
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            return _read_open(f, path, accepts)
    except RateoptError:
        raise
    except OSError as exc:
        raise RateoptError(f"{path!r} cannot be read as a rateopt model file: {exc}") from None
    except Exception as exc:  # zipfile, zlib and the .npy reader raise many types on damaged data
        raise RateoptError(f"{path!r} is a damaged rateopt model file: {type(exc).__name__}: {exc}") from None


def _read_open(f, path, accepts):
    """The metadata dict and the known arrays of an open model file."""
    head = f.read(6)
    if not head:
        raise RateoptError(f"{path!r} is empty, not a rateopt model file")
    if head.startswith(_NPY_MAGIC):
        raise RateoptError(f"{path!r} is a .npy file (a single NumPy array), not a rateopt model file "
                           "(a .npz archive written by save())")
    if head[:4] not in _ZIP_MAGIC:
        raise RateoptError(f"{path!r} is not a rateopt model file: not a .npz (zip) archive")
    f.seek(0)
    try:
        zf = zipfile.ZipFile(f)
    except zipfile.BadZipFile as exc:
        raise RateoptError(f"{path!r} is a damaged rateopt model file: its zip directory is unreadable "
                           f"({exc}); the file may be truncated or corrupt") from None
    with zf:
        listing = zf.infolist()
        infos = {info.filename: info for info in listing}
        if len(infos) != len(listing):
            seen = set()
            twice = next(i.filename for i in listing if i.filename in seen or seen.add(i.filename))
            raise RateoptError(f"{path!r} is not a valid rateopt model file: its member {twice!r} appears more "
                               "than once (rateopt never writes such archives; which copy is meant is ambiguous)")
        for name, info in infos.items():
            if info.flag_bits & 0x1:
                raise RateoptError(f"{path!r} is not a valid rateopt model file: its member {name!r} is "
                                   "encrypted (rateopt never writes encrypted files)")
            _check_declared_size(info, path)
        if META_KEY + ".npy" not in infos:
            listed = sorted(infos)
            shown = ", ".join(repr(n) for n in listed[:5]) + (", ..." if len(listed) > 5 else "")
            raise RateoptError(f"{path!r} is not a rateopt model file (no metadata entry; the archive lists "
                               f"{len(listed)} member(s){': ' + shown if listed else ''})")

        def read(key):
            info = infos[key + ".npy"]
            with zf.open(info) as member:
                return _read_npy(member, info, path)

        raw = read(META_KEY)
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise RateoptError(f"{path!r} is damaged: the metadata entry is not JSON bytes")
        try:
            meta = json.loads(bytes(raw).decode())
        except (UnicodeDecodeError, ValueError) as exc:
            raise RateoptError(f"{path!r} is damaged: the metadata entry is not valid JSON ({exc})") from None
        known = sorted(n[:-4] for n in infos if n.endswith(".npy") and n[:-4] != META_KEY and accepts(n[:-4]))
        arrays = {k: read(k) for k in known}
    return meta, arrays


def _check_declared_size(info, path):
    """Refuse a member whose declared size is that of a zip bomb, before any of it is decompressed.

    rateopt writes stored (uncompressed) members, whose bytes are all in the
    file; a compressed member is accepted while it expands at most
    :data:`MAX_RATIO` times, or to at most :data:`SMALL_MEMBER` bytes. The
    zip reader never yields more than the declared ``file_size``.
    """
    size, packed = info.file_size, info.compress_size
    if info.compress_type != zipfile.ZIP_STORED and size > SMALL_MEMBER and size > MAX_RATIO * max(packed, 1):
        raise RateoptError(f"{path!r} is not a valid rateopt model file: its member {info.filename!r} declares "
                           f"{size} bytes compressed into {packed} (a ratio over {MAX_RATIO}: a zip bomb; rateopt "
                           "never writes compressed members)")


def _read_npy(member, info, path):
    """The array of an open ``.npy`` member, once its header's shape agrees with the member's declared size."""
    version = np.lib.format.read_magic(member)
    # np.savez writes version 1.0 (2.0 for a header over 64 KiB); 3.0 only for structured dtypes' unicode names.
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
    else:
        raise RateoptError(f"{path!r} is damaged: member {info.filename!r} has .npy version {version}, "
                           "expected 1.0 or 2.0")
    if dtype.hasobject:
        raise RateoptError(f"{path!r} is damaged: member {info.filename!r} holds Python objects (pickled data, "
                           "which rateopt never reads)")
    nbytes = math.prod(shape) * dtype.itemsize
    if member.tell() + nbytes != info.file_size:
        raise RateoptError(f"{path!r} is damaged: member {info.filename!r} declares an array of shape {shape} "
                           f"({nbytes} bytes) but holds {info.file_size - member.tell()} bytes of data")
    data = member.read(nbytes)
    order = "F" if fortran else "C"
    return np.frombuffer(data, dtype=dtype).reshape(shape, order=order)


def damaged(path, field, problem):
    """The error of a file whose ``field`` has a ``problem`` (a phrase: "is missing")."""
    return RateoptError(f"{path!r} is damaged: field {field!r} {problem}")


def real_array(arrays, name, ndim, path):
    """A present, real, finite array of ``ndim`` dimensions, as float64."""
    if name not in arrays:
        raise damaged(path, name, "is missing")
    a = arrays[name]
    if a.dtype.kind not in "iuf":
        raise damaged(path, name, f"has dtype {a.dtype}, expected real numbers")
    if a.ndim != ndim:
        raise damaged(path, name, f"has shape {a.shape}, expected a {ndim}-D array")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise damaged(path, name, "holds a non-finite value (NaN or inf)")
    return a


def meta_number(meta, name, path, *, where="metadata", minimum=None, strict=False):
    """The finite number ``meta[name]`` (``minimum``: its lower bound, strict or not)."""
    v = meta.get(name) if isinstance(meta, dict) else None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise damaged(path, f"{where}.{name}", f"is {v!r}, expected a number")
    v = float(v)
    if not math.isfinite(v):
        raise damaged(path, f"{where}.{name}", f"is {v!r}, expected a finite number")
    if minimum is not None and (v <= minimum if strict else v < minimum):
        raise damaged(path, f"{where}.{name}", f"is {v!r}, expected a number {'>' if strict else '>='} {minimum}")
    return v


def check_range(a, name, path, expected, *, low=None, high=None):
    """``a`` itself, once every entry lies in ``[low, high]`` (None: unbounded); else a damaged-file error.

    ``expected`` says what the values should be in the message (e.g. "rates in [0, 1]").
    """
    bad = np.zeros(a.shape, dtype=bool)
    if low is not None:
        bad |= a < low
    if high is not None:
        bad |= a > high
    if np.any(bad):
        at = [int(i) for i in np.argwhere(bad)[0]]
        raise damaged(path, name, f"holds {float(a[tuple(at)])!r} at index {at}, expected {expected}")
    return a
