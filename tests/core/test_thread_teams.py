"""The core under OpenMP teams smaller than requested.

``OMP_THREAD_LIMIT``, ``OMP_DYNAMIC`` and calls from inside another parallel
region give a parallel region fewer threads than ``n_threads`` asks for. Every
entry point must still see all of its input (no missed NaN, no unwritten
scratch) and return exactly what it returns with a full team: the work split
depends on the requested count only. Each case runs in a fresh interpreter
(``tests/_thread_probe.py``), since OpenMP reads its variables at start-up and
a crash must fail the test rather than the test run.
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import _thread_probe
import rateopt
from rateopt import _core

pytestmark = pytest.mark.skipif(not _core.openmp_enabled(), reason="built without OpenMP")

PROBE = pathlib.Path(_thread_probe.__file__)
PACKAGE_ROOT = str(pathlib.Path(rateopt.__file__).resolve().parents[1])


@pytest.fixture(scope="module")
def reference():
    # This process: the default team, N_THREADS chunks each run by its own thread.
    return _thread_probe.probe()


def expected_positions():
    n = _thread_probe.N_ROWS * _thread_probe.N_COLS
    return {"nonfinite_5": 5, f"nonfinite_{n // 2 + 3}": n // 2 + 3, f"nonfinite_{n - 1}": n - 1,
            "out_of_range": n - 2, "decrease": n - 4, "negative": n - 4}


@pytest.mark.parametrize(
    "env, context",
    [
        ({"OMP_THREAD_LIMIT": "1"}, "plain"),
        ({"OMP_THREAD_LIMIT": "2"}, "plain"),
        ({"OMP_DYNAMIC": "true"}, "plain"),
        ({}, "nested"),
        ({"OMP_THREAD_LIMIT": "2"}, "nested"),
        ({}, "pool"),
        ({"OMP_DYNAMIC": "true"}, "pool"),
    ],
    ids=["limit1", "limit2", "dynamic", "nested", "nested-limit2", "pool", "pool-dynamic"],
)
def test_smaller_teams_give_identical_results(reference, tmp_path, env, context):
    out = tmp_path / "probe.npz"
    full_env = dict(os.environ, **env)
    # The probe runs from its own folder: it imports the rateopt this test imported, whichever
    # way that one was found (an installed package, or a relative PYTHONPATH to a source tree).
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, str(PROBE), str(out), context], env=full_env,
                          capture_output=True, text=True, cwd=PROBE.parent, timeout=300)
    assert proc.returncode == 0, f"probe died (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    got = dict(np.load(out))
    if context == "nested":
        # The region really was nested: an outer team of two (one under a limit of 1).
        assert int(got.pop("outer_team")[0]) == 2
    assert set(got) == set(reference)
    for key, want in reference.items():
        np.testing.assert_array_equal(got[key], want, err_msg=key)


def test_reference_positions_are_the_first_offenders(reference):
    # The probe's planted defects are found where they are, by the full team too.
    for key, pos in expected_positions().items():
        assert int(reference[key][0]) == pos, key
