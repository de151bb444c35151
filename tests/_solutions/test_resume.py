"""Checkpoints and resumed fits (``train(checkpoint=..., resume=...)``, rateopt._solutions._resume).

References: the records of an uninterrupted fit. With plain SGD (no optimizer
moments) and Lagrange multipliers, a fit's whole state is in its last record,
so a resumed fit must continue an uninterrupted one exactly; with Adam and
swap regret it must at least start exactly where the records end.
"""

import numpy as np
import pytest
import rateopt
from _games_support import params_for
from rateopt._train import run_game

GAMES = ["proxy-swap", "proxy-external", "lagrangian-hinge", "unconstrained"]


@pytest.fixture(scope="module")
def problem():
    X, y, g = rateopt.make_groups_dataset(1500, random_state=3)
    ds = rateopt.Dataset(X, y, groups={"group": g})
    return rateopt.Problem(constraints=[rateopt.goals.demographic_parity("group", slack=0.02),
                                        rateopt.goals.recall_floor(0.6)], datasets=ds)


@pytest.mark.parametrize("loop", ["core", "python"])
@pytest.mark.parametrize("method", ["proxy-external", "lagrangian-hinge", "unconstrained"])
def test_resumed_sgd_fit_continues_the_uninterrupted_fit_exactly(problem, method, loop):
    kw = dict(method=method, **params_for(method, optimizer="sgd", learning_rate=0.05, eta_lambda=0.5, record_every=1,
                                          loop=loop))
    K = 25
    full = run_game(problem, n_iter=2 * K - 1, **kw)
    first = run_game(problem, n_iter=K, **kw)
    resumed = run_game(problem, n_iter=K, resume=first, **kw)
    # the resumed run starts at the first run's last record (iteration K-1) and re-records it; the
    # candidates begin with the trivial rules (iteration -1), once
    k = first.n_trivial
    assert k == 2 and resumed.n_trivial == k and full.n_trivial == k
    np.testing.assert_array_equal(resumed.weights[:k + K], first.weights)
    np.testing.assert_allclose(resumed.weights[k + K:], full.weights[k + K - 1:], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(resumed.biases[k + K:], full.biases[k + K - 1:], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(resumed.multipliers[k + K:], full.multipliers[k + K - 1:], rtol=1e-12, atol=1e-14)
    assert list(resumed.iterations) == [-1] * k + list(range(K)) + list(range(K, 2 * K))
    assert resumed.n_iter == 2 * K


@pytest.mark.parametrize("update", ["multiplicative", "additive"])
def test_resumed_swap_regret_fit_starts_at_the_recorded_iterate(problem, update):
    kw = dict(method="proxy-swap", learning_rate=0.05, eta_lambda=0.5, update=update, record_every=5)
    first = run_game(problem, n_iter=40, **kw)
    resumed = run_game(problem, n_iter=20, resume=first, **kw)
    n = first.weights.shape[0]
    np.testing.assert_array_equal(resumed.weights[n], first.weights[-1])
    # the rank-one matrix lambda 1^T has stationary distribution lambda
    np.testing.assert_allclose(resumed.multipliers[n], first.multipliers[-1], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(resumed.atom_rates[:n], first.atom_rates)
    # the joined result selects among all records
    assert resumed.shrink().support.max() < resumed.weights.shape[0]


@pytest.mark.parametrize("loop", ["core", "python"])
def test_checkpoint_holds_the_records_so_far(problem, tmp_path, loop):
    path = tmp_path / "fit.npz"
    stop_at = 30

    def stop(t, info):
        return t >= stop_at

    partial = run_game(problem, method="proxy-swap", n_iter=100, record_every=10, learning_rate=0.05,
                       checkpoint=path, callback=stop, loop=loop)
    saved = rateopt.load(path)
    assert list(saved.iterations) == [-1, -1, 0, 10, 20, 30] == list(partial.iterations)  # trivial rules first
    np.testing.assert_array_equal(saved.weights, partial.weights)
    np.testing.assert_array_equal(saved.atom_rates, partial.atom_rates)
    np.testing.assert_array_equal(saved.multipliers, partial.multipliers)
    assert not list(tmp_path.glob("*.partial-*"))  # the temporary file was renamed


def test_checkpoint_of_a_resumed_fit_holds_every_record(problem, tmp_path):
    kw = dict(method="proxy-external", learning_rate=0.05, record_every=10)
    first = run_game(problem, n_iter=30, **kw)
    resumed = run_game(problem, n_iter=30, resume=first, checkpoint=tmp_path / "r.npz", **kw)
    saved = rateopt.load(tmp_path / "r.npz")
    np.testing.assert_array_equal(saved.weights, resumed.weights)
    assert saved.n_iter == resumed.n_iter == 60


def test_resume_refuses_what_it_cannot_continue(problem):
    first = run_game(problem, method="proxy-swap", n_iter=10, learning_rate=0.05)
    with pytest.raises(TypeError, match="resume must be a TrainResult"):
        run_game(problem, method="proxy-swap", n_iter=5, resume=first.weights)
    with pytest.raises(ValueError, match="method='proxy-swap', not 'proxy-external'"):
        run_game(problem, method="proxy-external", n_iter=5, resume=first)
    with pytest.raises(ValueError, match="cannot be resumed"):
        run_game(problem, method="three-player", n_iter=5, resume=first)
    other = rateopt.Problem(constraints=[rateopt.goals.recall_floor(0.7)], datasets=problem.datasets["train"])
    with pytest.raises(ValueError, match="another problem"):
        run_game(other, method="proxy-swap", n_iter=5, resume=first)
    with pytest.raises(ValueError, match="init or resume"):
        run_game(problem, method="proxy-swap", n_iter=5, resume=first, init=(first.weights[-1], 0.0))
    with pytest.raises(ValueError, match="linear models"):
        run_game(problem, rateopt.KernelModel(n_components=20), method="proxy-swap", n_iter=5, resume=first)
