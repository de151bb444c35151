"""Build and runtime configuration report."""

import platform
import sys
from importlib.metadata import version

import numpy
import scipy

from ._runtime import extension as _core

__all__ = ["show_config", "get_config"]


def get_config():
    """Return the build and runtime configuration as a dict.

    Returns
    -------
    dict
        ``version``, ``openmp`` (whether the core was built with OpenMP),
        ``openmp_version``, ``compiler``, ``default_threads`` (what
        ``n_threads=None`` resolves to now), ``available_cores``, and the
        versions of Python, NumPy, SciPy and highspy.
    """
    info = dict(_core.build_info())
    try:
        highspy_version = version("highspy")
    except Exception:  # pragma: no cover - highspy is a declared dependency
        highspy_version = None
    info.update(
        default_threads=int(_core.default_threads()),
        available_cores=int(_core.available_cores()),
        python=sys.version.split()[0],
        platform=platform.platform(),
        numpy=numpy.__version__,
        scipy=scipy.__version__,
        highspy=highspy_version,
    )
    return info


def show_config(file=None):
    """Print how rateopt was built and what it will use at run time.

    Parameters
    ----------
    file : file-like, default=None
        Where to print (default: standard output).

    Examples
    --------
    >>> import rateopt
    >>> rateopt.show_config()  # doctest: +SKIP
    rateopt 0.1.0
      openmp: True (201511) ...
    """
    info = get_config()
    out = file or sys.stdout
    print(f"rateopt {info['version']}", file=out)
    if info["openmp"]:
        print(f"  openmp: yes (version {info['openmp_version']})", file=out)
    else:
        print("  openmp: NO - the core was built without OpenMP and runs single-threaded", file=out)
    print(f"  compiler: {info['compiler']} (C++ {info['cplusplus']}, debug={info['debug']})", file=out)
    print(f"  threads: default {info['default_threads']} of {info['available_cores']} cores", file=out)
    print(f"  python {info['python']} on {info['platform']}", file=out)
    print(f"  numpy {info['numpy']}, scipy {info['scipy']}, highspy {info['highspy']}", file=out)
