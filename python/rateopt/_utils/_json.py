"""Values made JSON-ready (reports, the command line's machine-readable output)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["json_ready"]


def json_ready(v):
    """``v`` with arrays turned into lists, NumPy scalars into Python ones and NaN/inf into None."""
    if isinstance(v, dict):
        return {str(k): json_ready(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_ready(x) for x in v]
    if isinstance(v, np.ndarray):
        return json_ready(v.tolist())
    if isinstance(v, (np.floating, float)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v
