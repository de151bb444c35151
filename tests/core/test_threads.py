"""n_threads resolution and the OpenMP/threadpoolctl contract."""

import os
import subprocess
import sys

import numpy as np
import pytest

import rateopt
from rateopt import _core
from rateopt.core._threads import resolve_n_threads


def test_explicit_counts_pass_through():
    assert resolve_n_threads(1) == 1
    assert resolve_n_threads(3) == 3
    assert resolve_n_threads(np.int64(2)) == 2


def test_minus_one_means_all_cores():
    assert resolve_n_threads(-1) == _core.available_cores()


@pytest.mark.parametrize("bad", [0, -2, 1.5, "2", True])
def test_invalid_counts_are_refused(bad):
    with pytest.raises(ValueError, match="n_threads"):
        resolve_n_threads(bad)


def test_default_follows_omp_num_threads():
    # A fresh interpreter, so the OpenMP runtime reads the variable at start-up.
    code = "import rateopt.core._threads as t; print(t.resolve_n_threads(None))"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


@pytest.mark.skipif(not _core.openmp_enabled(), reason="built without OpenMP: always one thread")
def test_default_follows_threadpoolctl_limits():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(limits=1, user_api="openmp"):
        assert resolve_n_threads(None) == 1


def test_show_config_reports_openmp(capsys):
    rateopt.show_config()
    out = capsys.readouterr().out
    assert "openmp" in out
    assert ("openmp: yes" in out) == bool(_core.openmp_enabled())


def test_openmp_waits_passively_unless_the_user_says_otherwise():
    code = "import os, rateopt; print(os.environ['OMP_WAIT_POLICY'])"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "passive"
    env["OMP_WAIT_POLICY"] = "active"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "active"
