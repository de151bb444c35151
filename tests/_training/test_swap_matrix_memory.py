"""The swap-regret player's (m+1)^2 matrix: its measured memory and the refusal of a run it would not fit."""

import tracemalloc

import numpy as np
import pytest

import rateopt as ro
from rateopt._training import _players
from rateopt._training._players import SWAP_MATRIX_COPIES, SwapRegretPlayer, check_swap_matrix_memory


def test_the_players_peak_memory_is_within_the_budgeted_copies():
    m = 999
    k = m + 1
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        player = SwapRegretPlayer(m, eta_lambda=0.1, update="multiplicative", init="objective", floor=1e-3)
        for seed in range(3):
            player.update(np.random.default_rng(seed).random(m) - 0.5)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert 8 * k * k <= peak <= (SWAP_MATRIX_COPIES - 1) * 8 * k * k + 10 * 8 * k  # the matrix, its update


def test_refusal_counts_the_matrix_copies():
    m = 999
    need = SWAP_MATRIX_COPIES * 8 * (m + 1) ** 2
    check_swap_matrix_memory(m, memory=need)  # exactly fits
    with pytest.raises(MemoryError, match=r"method='proxy-external'") as info:
        check_swap_matrix_memory(m, memory=need - 1)
    assert "m=999" in str(info.value) and "\n" not in str(info.value)
    # 24 GiB holds m = 32767 (k = 2**15: three copies of 8 GiB), not one more
    check_swap_matrix_memory(2**15 - 1, memory=24 * 2**30)
    with pytest.raises(MemoryError):
        check_swap_matrix_memory(2**15, memory=24 * 2**30)


def test_a_proxy_swap_run_too_large_for_memory_is_refused_naming_proxy_external(monkeypatch):
    rng = np.random.default_rng(0)
    n = 40
    ds = ro.Dataset(rng.normal(size=(n, 2)), np.tile([0, 1], n // 2), groups={"g": np.arange(n) // 4})
    problem = ro.Problem(constraints=[ro.goals.demographic_parity("g", slack=0.05)], datasets=ds)
    m = problem.compiled.C.shape[0]
    monkeypatch.setattr(_players, "_physical_memory", lambda: SWAP_MATRIX_COPIES * 8 * (m + 1) ** 2 - 1)
    with pytest.raises(MemoryError, match="proxy-external"):
        ro.train(problem, method="proxy-swap", n_iter=5)
    res = ro.train(problem, method="proxy-external", n_iter=5)  # linear in m: runs
    assert res.constraints.shape[1] == m
