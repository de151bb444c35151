"""Values made JSON-ready (reports, the command line's machine-readable output)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["json_ready"]


def json_ready(v, nonfinite=None):
    """``v`` with arrays turned into lists, NumPy scalars into Python ones and NaN/inf into ``nonfinite``.

    ``nonfinite="keep"`` keeps NaN and inf as floats (for files that JSON-encode them as ``NaN``).
    """
    if isinstance(v, dict):
        return {str(k): json_ready(x, nonfinite) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_ready(x, nonfinite) for x in v]
    if isinstance(v, np.ndarray):
        return json_ready(v.tolist(), nonfinite)
    if isinstance(v, (np.floating, float)):
        return float(v) if nonfinite == "keep" or math.isfinite(v) else nonfinite
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v
