"""The informational commands: ``reproduce``, ``selfcheck`` and ``demo`` (``datasets``: :mod:`._datasets`)."""

from __future__ import annotations

import os
import subprocess
import sys

from .._demo import run_demo
from ..core._config import show_config
from ._io import InputError
from ._selfcheck import selfcheck as run_selfcheck
from ._shared import EXIT_OK, EXIT_VIOLATED

__all__ = ["reproduce", "selfcheck", "demo", "bench_dir"]

def bench_dir():
    """The bench/ folder of a source checkout."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/rateopt in a checkout
    return os.path.join(os.path.dirname(os.path.dirname(package)), "bench")


def reproduce(args):
    bench = bench_dir()
    script = os.path.join(bench, f"reproduce_{args.name}.py")
    if not os.path.isfile(script):
        found = sorted(f[len("reproduce_"):-3] for f in os.listdir(bench)
                       if f.startswith("reproduce_") and f.endswith(".py")) if os.path.isdir(bench) else []
        if not found:
            raise InputError("rateopt reproduce runs bench/reproduce_<NAME>.py of a source checkout; this "
                             f"installation has no bench/ folder ({bench}): clone the repository and install it "
                             "with pip install -e .")
        raise InputError(f"no reproduction named {args.name!r}; available: {found}")
    return subprocess.call([sys.executable, script, *args.args])


def selfcheck(args):
    show_config()
    print("self-check:")
    ok = run_selfcheck()
    print("self-check passed" if ok else "SELF-CHECK FAILED")
    return EXIT_OK if ok else EXIT_VIOLATED


def demo(args):
    status = selfcheck(args)
    if status:
        return status
    print()
    run_demo()
    return EXIT_OK
