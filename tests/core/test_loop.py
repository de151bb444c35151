"""The core training loop (``train(loop="core")``, ``rateopt.core.run_train_loop``).

The reference is the Python driver (``loop="python"``): the same game run one
kernel pass and one ``game.step`` at a time by ``rateopt._training._players``. Both loops
must give the same recorded iterates (model, multipliers, atom rates) to
round-off for every built-in game, data layout, optimizer and setting, and the
same rows for minibatches with a seed (the driver's generator draws them in
both cases). On the development machine they agree bit for bit; the tests allow
1e-12 relative (different BLAS builds may sum ``lam @ C`` or ``||theta||`` in
another order).
"""

from __future__ import annotations

import numpy as np
import pytest
import rateopt
import scipy.sparse as sp
from _games_support import params_for
from rateopt import core
from rateopt._train import run_game
from rateopt.exceptions import NumericalError

GAMES = ("proxy-swap", "proxy-external", "lagrangian-hinge", "unconstrained")
RTOL = 1e-12


#: The players' settings of a direct run_train_loop call (it has no defaults of its own: these are the
#: training parameters' values for a hinge-proxy game).
PLAYERS = dict(optimizer="adam", learning_rate=0.01, l2=0.0, radius=None, fit_intercept=True,
               update="multiplicative", lambda_radius=None, lambda_floor=0.0, proxy="hinge", margin=1.0)

def _data(n, seed, d=4, sparse=False, dtype=np.float64, labels=True, name="train"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if sparse:
        X[rng.random(size=X.shape) < 0.5] = 0.0
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int) if labels else None
    X = X.astype(dtype)
    X = sp.csr_matrix(X) if sparse else X
    return rateopt.Dataset(X, y, weights=rng.uniform(0.5, 2.0, n), groups={"g": rng.integers(0, 2, n)},
                           baseline=rng.integers(0, 2, n).astype(bool), name=name)


def _problem(n=600, seed=0, m=2, **kw):
    ds = _data(n, seed, **kw)
    ctx = ds.context()
    cons = [rateopt.positive_prediction_rate(ctx) <= 0.45,
            rateopt.true_positive_rate(ctx.subset(group="g", value=1)) >= 0.6][:m]
    return rateopt.Problem(constraints=cons)


def _two_dataset_problem(seed=0, **kw):
    """A labelled training set and an unlabelled one (churn and coverage on it): two blocks."""
    train, unl = _data(500, seed, **kw), _data(200, seed + 1, labels=False, name="unlabeled", **kw)
    ctx, uctx = train.context(), unl.context()
    return rateopt.Problem(constraints=[
        rateopt.true_positive_rate(ctx.subset(group="g", value=1)) >= rateopt.true_positive_rate(ctx) - 0.05,
        rateopt.churn_rate(uctx.subset(group="g", value=0)) <= 0.2,
        rateopt.positive_prediction_rate(uctx) >= 0.3,
    ])


def _close(a, b, rtol=RTOL):
    scale = max(1.0, float(np.max(np.abs(a), initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale)


def assert_same_run(py, co):
    """Every recorded quantity of the two loops agrees to round-off."""
    assert co.n_iter == py.n_iter
    np.testing.assert_array_equal(co.iterations, py.iterations)
    _close(py.weights, co.weights)
    _close(py.biases, co.biases)
    _close(py.multipliers, co.multipliers)
    _close(py.atom_rates, co.atom_rates)
    if py.val_atom_rates is not None:
        _close(py.val_atom_rates, co.val_atom_rates)
    assert co.settings["loop"] == "core" and py.settings["loop"] == "python"


def _both(problem, model=None, **params):
    # the core loop runs the gradient optimizers; "unconstrained" would default to L-BFGS (Python, scipy)
    params.setdefault("optimizer", "adam")
    params = params_for(params.get("method", "proxy-swap"), **params)
    return (run_game(problem, model, loop="python", **params), run_game(problem, model, loop="core", **params))


@pytest.mark.parametrize("method", GAMES)
@pytest.mark.parametrize("layout", [dict(), dict(sparse=True), dict(dtype=np.float32),
                                    dict(sparse=True, dtype=np.float32)], ids=["dense64", "csr64", "dense32", "csr32"])
def test_core_loop_matches_the_python_driver(method, layout):
    py, co = _both(_problem(**layout), method=method, n_iter=200, eta_lambda=0.5)
    assert_same_run(py, co)
    # the 2 trivial rules, the 4 averages of 50-iterate windows, the averages' threshold rules (-3; windows 0, 1
    # and 3), then every iterate (record_every=None records all of a full-batch run)
    k = py.n_trivial
    assert py.iterations[:6].tolist() == [-1, -1, -2, -2, -2, -2] and np.all(py.iterations[6:k] == -3)
    assert py.weights.shape == (k + 200, 4) and py.iterations[k:].tolist() == list(range(200))
    for j in range(4):  # each average is the mean of its window's iterates, recounted
        np.testing.assert_allclose(py.weights[2 + j], py.weights[k + 50 * j:k + 50 * (j + 1)].mean(axis=0),
                                   rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("method", GAMES)
@pytest.mark.parametrize("opts", [
    dict(optimizer="sgd", learning_rate=0.05, record_every=7),
    dict(optimizer="adagrad", proxy="logistic", update="additive", lambda_radius=2.0),
    dict(optimizer="adam", proxy="logistic", margin=0.5, record_every=1),
], ids=["sgd", "adagrad-logistic", "adam-logistic"])
def test_core_loop_matches_for_every_optimizer_and_proxy(method, opts):
    py, co = _both(_problem(), method=method, n_iter=120, eta_lambda=0.5, **opts)
    assert_same_run(py, co)


@pytest.mark.parametrize("case", [
    dict(record_every=5),
    dict(margin=2.0, batch_size=300, random_state=4, record_every=10),
    dict(margin=0.5, n_threads=2, record_every=3),
], ids=["full-batch", "minibatch-margin2", "two-threads-margin0.5"])
@pytest.mark.parametrize("method", ["proxy-swap", "proxy-external", "unconstrained"])
def test_core_loop_matches_with_the_logistic_objective_on_rows_without_objective_atoms(method, case):
    """The core loop's logistic-objective pass (one logistic combination whose value it does not read, plus the
    constraints' hinge: its own branch-free row code in rate_kernel.hpp) against the Python driver, whose
    passes take the general path. The unlabelled dataset's rows have a zero objective coefficient, and
    rows outside the constrained groups a zero hinge coefficient: the cases the branch-free code adds as
    exact zeros where the general path skips them."""
    problem, val = _two_dataset_problem(2, sparse=True), _two_dataset_problem(6)
    py, co = _both(problem, method=method, n_iter=90, eta_lambda=0.5, proxy="logistic", validation=val,
                   learning_rate=0.05, **case)
    assert_same_run(py, co)


@pytest.mark.parametrize("model", [rateopt.LinearModel(l2=0.05, radius=0.3),
                                   rateopt.LinearModel(fit_intercept=False, radius=5.0)], ids=["l2-ball", "no-bias"])
@pytest.mark.parametrize("method", ["proxy-swap", "lagrangian-hinge"])
def test_core_loop_matches_with_regularization_and_radius(model, method):
    py, co = _both(_problem(), model, method=method, n_iter=200, eta_lambda=0.5, learning_rate=0.05)
    assert_same_run(py, co)
    norms = np.linalg.norm(co.weights, axis=1)
    assert np.all(norms <= model.radius * (1 + 1e-12))
    if model.radius == 0.3:
        assert np.isclose(norms.max(), 0.3)  # the projection was active
    if not model.fit_intercept:
        assert np.all(co.biases == 0.0)


@pytest.mark.parametrize("method", GAMES)
def test_core_loop_matches_on_several_datasets_with_validation(method):
    problem, val = _two_dataset_problem(0, sparse=True), _two_dataset_problem(5, sparse=True)
    py, co = _both(problem, method=method, n_iter=150, eta_lambda=0.5, validation=val, record_every=10)
    assert_same_run(py, co)
    assert co.val_atom_rates.shape == co.atom_rates.shape


@pytest.mark.parametrize("method", ["proxy-swap", "proxy-external"])
def test_minibatches_use_the_drivers_rows(method):
    problem = _two_dataset_problem(1)
    # batch 300: the 500-row set is sampled, the 200-row one read in full.
    py, co = _both(problem, method=method, n_iter=150, eta_lambda=0.5, batch_size=300, random_state=7,
                   record_every=10)
    assert_same_run(py, co)
    other = run_game(problem, method=method, n_iter=150, eta_lambda=0.5, batch_size=300, random_state=8,
                     record_every=10, loop="core")
    assert not np.allclose(other.weights, co.weights)  # the seed matters: rows really are sampled


def test_minibatch_segments_draw_the_same_rows(monkeypatch):
    """Rows drawn for several core calls (segments) are the rows of one long draw."""
    problem = _problem()
    one = run_game(problem, n_iter=60, eta_lambda=0.5, batch_size=64, random_state=3, loop="core")
    monkeypatch.setattr(rateopt._train, "_ROWS_PER_SEGMENT", 64 * 7)  # segments of 7 iterations
    calls = []
    real = core.run_train_loop
    monkeypatch.setattr(core, "run_train_loop", lambda *a, **k: calls.append(k["t_begin"]) or real(*a, **k))
    seg = run_game(problem, n_iter=60, eta_lambda=0.5, batch_size=64, random_state=3, loop="core")
    assert calls == list(range(0, 60, 7))
    np.testing.assert_array_equal(seg.weights, one.weights)
    np.testing.assert_array_equal(seg.multipliers, one.multipliers)


@pytest.mark.parametrize("n, batch", [(600, 64), (34_190, 4_273), (5, 1), (2**33 + 7, 9)],
                         ids=["even", "odd", "batch-1", "64-bit-range"])
def test_one_draw_of_a_segment_is_the_per_iteration_draws(n, batch):
    """The core loop draws a segment of one sampled dataset's minibatches in one generator call
    (``_train.draw_segment``): the same rows as one ``draw_rows`` call per iteration, in order, and the
    generator left in the same state."""
    from rateopt._train import draw_rows, draw_segment
    a, b = np.random.default_rng(11), np.random.default_rng(11)
    one = draw_segment(a, n, batch, 7)
    each = np.stack([draw_rows(b, n, batch, sort=False) for _ in range(7)])
    assert one.shape == (7, batch) and one.dtype == np.int64
    np.testing.assert_array_equal(one, each)
    assert a.integers(0, 2**62) == b.integers(0, 2**62)
    assert len(np.unique(one)) > 1 or batch == 1 or n < 2  # rows really are drawn


@pytest.mark.parametrize("n, batch", [(600, 64), (700, 1), (70_000, 5000)], ids=["2-byte", "batch-1", "3-byte"])
def test_the_core_loop_sorts_minibatch_rows_as_numpy_does(monkeypatch, n, batch):
    """train() hands the core loop unsorted draws with sort_rows=True (its radix sort, one byte of the row ids per
    pass); the reference sorts the same draws with numpy.sort and asks the loop to keep their order. Every record
    must be the same bits, and the loop must have been given unsorted rows (else the test proves nothing)."""
    problem = _problem(n=n)
    kw = dict(n_iter=12, eta_lambda=0.5, batch_size=batch, random_state=5, record_every=4, proxy="logistic")
    given = []
    real = core.run_train_loop

    def spy(*a, **k):
        given.append(k["rows"].copy())
        assert k["sort_rows"] is True
        return real(*a, **k)

    monkeypatch.setattr(core, "run_train_loop", spy)
    ours = run_game(problem, loop="core", **kw)

    def numpy_sorted(*a, **k):
        return real(*a, **dict(k, rows=np.sort(k["rows"], axis=-1), sort_rows=False))

    monkeypatch.setattr(core, "run_train_loop", numpy_sorted)
    ref = run_game(problem, loop="core", **kw)
    if batch > 1:
        assert any(np.any(np.diff(r, axis=-1) < 0) for r in given)
    for f in ("weights", "biases", "multipliers", "atom_rates"):
        np.testing.assert_array_equal(getattr(ours, f), getattr(ref, f))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_core_loop_is_deterministic_for_a_thread_count(threads):
    problem = _problem(n=12000, sparse=True)  # enough rows for several kernel chunks
    kw = dict(n_iter=40, eta_lambda=0.5, n_threads=threads)
    a, b = run_game(problem, loop="core", **kw), run_game(problem, loop="core", **kw)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.multipliers, b.multipliers)
    assert_same_run(run_game(problem, loop="python", **kw), a)


def test_kernel_models_run_in_the_core_loop():
    problem = _problem(n=300)
    model = rateopt.KernelModel(kernel="rbf", n_components=40, random_state=0)
    py, co = _both(problem, model, n_iter=80, eta_lambda=0.5)
    assert_same_run(py, co)
    assert co.weights.shape[1] == 40


def test_auto_uses_the_core_for_built_in_games_and_python_otherwise(monkeypatch):
    calls = []
    real = core.run_train_loop
    monkeypatch.setattr(core, "run_train_loop", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    problem = _problem()
    for method in GAMES:
        params = params_for(method, n_iter=5, eta_lambda=0.5, optimizer="adam")
        assert run_game(problem, method=method, **params).settings["loop"] == "auto"
    assert calls == list(GAMES)
    run_game(problem, method="three-player", n_iter=5, eta_lambda=0.5)
    run_game(problem, method="proxy-swap", n_iter=5, eta_lambda=0.5, loop="python")
    # "unconstrained" at its default optimizer (L-BFGS: scipy on the core's pass) neither
    assert run_game(problem, method="unconstrained", n_iter=5).settings["optimizer"] == "lbfgs"
    assert calls == list(GAMES)  # none reached the core loop


def test_subclassed_games_stay_in_the_python_driver():
    """A user's subclass may change any step: only the exact built-in classes run in the core."""
    from rateopt.games import GAMES as REGISTRY
    from rateopt.games.proxy_lagrangian import ProxySwapGame

    class Frozen(ProxySwapGame):
        name = "test-frozen-multipliers"

        def step(self, result):
            self.model_player.step(result.grad, result.grad_bias)

    REGISTRY[Frozen.name] = Frozen
    try:
        res = run_game(_problem(), method=Frozen.name, n_iter=20, eta_lambda=0.5)
        lam = res.history["multipliers"]
        assert np.all(lam == lam[0])  # the subclass's step ran
        with pytest.raises(ValueError, match="loop='core'.*has no core loop"):
            run_game(_problem(), method=Frozen.name, n_iter=5, loop="core")
    finally:
        del REGISTRY[Frozen.name]


def test_callback_stops_the_core_loop_like_the_driver():
    seen = {"python": [], "core": []}

    def make(key):
        def cb(t, info):
            seen[key].append((t, info["objective"], info["constraints"].copy(), info["multipliers"].copy()))
            return t >= 40
        return cb

    problem = _problem()
    py = run_game(problem, n_iter=200, eta_lambda=0.5, record_every=10, loop="python", callback=make("python"))
    co = run_game(problem, n_iter=200, eta_lambda=0.5, record_every=10, loop="core", callback=make("core"))
    assert co.n_iter == py.n_iter == 41
    assert_same_run(py, co)
    assert [s[0] for s in seen["core"]] == [s[0] for s in seen["python"]] == [0, 10, 20, 30, 40]
    for (_, o1, c1, m1), (_, o2, c2, m2) in zip(seen["python"], seen["core"]):
        assert abs(o1 - o2) <= RTOL
        _close(c1, c2)
        _close(m1, m2)


def test_the_progress_bar_advances_between_iterations(monkeypatch):
    class Bar:
        def __init__(self):
            self.n, self.seen, self.closed = 0, [], False

        def update(self, k):
            self.n += k
            self.seen.append(self.n)

        def close(self):
            self.closed = True

    bars = []
    monkeypatch.setattr(rateopt._train, "_progress", lambda verbose, total: bars.append(Bar()) or bars[-1])
    run_game(_problem(), n_iter=300, eta_lambda=0.5, record_every=100, verbose=True, loop="core")
    # After the records (t = 0, 100, 200, 299) and every 64 iterations (t = 63, 127, 191, 255).
    assert bars[0].seen == [1, 64, 101, 128, 192, 201, 256, 300] and bars[0].closed


def test_callback_exceptions_propagate():
    class Boom(Exception):
        pass

    def cb(t, info):
        if t == 20:
            raise Boom("from the callback")

    with pytest.raises(Boom, match="from the callback"):
        run_game(_problem(), n_iter=100, eta_lambda=0.5, record_every=10, loop="core", callback=cb)


def test_progress_callback_of_the_core_function():
    """``run_train_loop`` calls back after every record and every ``progress_every`` iterations."""
    problem = _problem()
    from rateopt._training._spec import spec_from_problem

    spec = spec_from_problem(problem)
    d, m = spec.n_features, spec.n_constraints
    state = core.LoopState(np.zeros(d), np.zeros(1), np.zeros(d + 1), np.zeros(d + 1), np.zeros(1, np.int64),
                           np.zeros((1, 1)), np.zeros(m))
    records = core.LoopRecords.allocate(4, d, m, spec.n_atoms)
    calls = []
    out = core.run_train_loop([(b.X, b.atoms, b.atom_ids) for b in spec.blocks], "proxy-external", spec.C,
                              spec.kappa, spec.c0, state, records, n_iter=30, record_every=10, eta_lambda=0.5,
                              **PLAYERS, callback=lambda t, n: calls.append((t, n)) or False, progress_every=4)
    assert out == core.LoopOutcome("done", 30, 4)
    assert calls == [(0, 1), (3, 1), (7, 1), (10, 2), (11, 2), (15, 2), (19, 2), (20, 3), (23, 3), (27, 3),
                     (29, 4)]
    np.testing.assert_array_equal(records.iterations, [0, 10, 20, 29])
    assert state.opt_t[0] == 30 and np.any(state.lam > 0)
    # Resuming from the state continues the run: two halves equal one call.
    state2 = core.LoopState(np.zeros(d), np.zeros(1), np.zeros(d + 1), np.zeros(d + 1), np.zeros(1, np.int64),
                            np.zeros((1, 1)), np.zeros(m))
    rec2 = core.LoopRecords.allocate(4, d, m, spec.n_atoms)
    blocks = [(b.X, b.atoms, b.atom_ids) for b in spec.blocks]
    for t0, t1 in ((0, 13), (13, 30)):
        core.run_train_loop(blocks, "proxy-external", spec.C, spec.kappa, spec.c0, state2, rec2, n_iter=30,
                            record_every=10, eta_lambda=0.5, t_begin=t0, t_end=t1, **PLAYERS)
    np.testing.assert_array_equal(rec2.weights, records.weights)
    np.testing.assert_array_equal(state2.theta, state.theta)


def test_numerical_failures_raise_like_the_driver():
    # One sgd step makes theta ~ 1e300, and the next scores ~ 1e600: not finite.
    ds = rateopt.Dataset(np.full((50, 3), 1e300) * np.where(np.arange(50) % 2, 1, -1)[:, None],
                         np.arange(50) % 2)
    problem = rateopt.Problem(constraints=[rateopt.positive_prediction_rate(ds.context()) <= 0.5])
    for loop in ("python", "core"):
        with pytest.raises(NumericalError, match="scores x.theta \\+ bias of 50 row"):
            run_game(problem, n_iter=20, eta_lambda=0.5, optimizer="sgd", learning_rate=1.0, loop=loop)


def test_non_finite_scores_are_counted_across_the_logistic_pass_blocks():
    """The core loop's logistic-objective pass runs in blocks of 64 rows (rate_kernel.hpp): rows whose score
    overflows, spread over several blocks and mixed with finite ones, are all counted, as the driver counts
    them, and the loop stops with the driver's error."""
    n, huge = 300, np.r_[40:110, 150:151, 299:300]  # 72 rows in blocks 0, 1, 2 and the last (partial) one
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 3))
    X[huge] = 1e300 * np.where(np.arange(huge.size) % 2, 1.0, -1.0)[:, None]
    ds = rateopt.Dataset(X, np.arange(n) % 2)
    problem = rateopt.Problem(constraints=[rateopt.positive_prediction_rate(ds.context()) <= 0.5])
    for loop in ("python", "core"):
        with pytest.raises(NumericalError, match=f"scores x.theta \\+ bias of {huge.size} row"):
            run_game(problem, n_iter=20, eta_lambda=0.5, optimizer="sgd", learning_rate=1.0, proxy="logistic",
                     loop=loop, n_threads=1)


def test_bad_arguments_give_clear_errors():
    problem = _problem()
    with pytest.raises(ValueError, match="loop"):
        run_game(problem, n_iter=5, loop="fast")
    with pytest.raises(ValueError, match="loop='core'.*three-player"):
        run_game(problem, method="three-player", n_iter=5, loop="core")
    with pytest.raises(TypeError, match="unknown training parameter"):
        run_game(problem, n_iter=5, loops="core")

    from rateopt._training._spec import spec_from_problem

    spec = spec_from_problem(problem)
    d, m, A = spec.n_features, spec.n_constraints, spec.n_atoms
    blocks = [(b.X, b.atoms, b.atom_ids) for b in spec.blocks]

    def state(d=d, lam=m):
        return core.LoopState(np.zeros(d), np.zeros(1), np.zeros(d + 1), np.zeros(d + 1), np.zeros(1, np.int64),
                              np.zeros((1, 1)), np.zeros(lam))

    def run(**kw):
        args = dict(blocks=blocks, game="proxy-external", C=spec.C, kappa=spec.kappa, c0=spec.c0, state=state(),
                    records=core.LoopRecords.allocate(3, d, m, A), n_iter=20, record_every=10, eta_lambda=0.5,
                    **PLAYERS)
        args.update(kw)
        return core.run_train_loop(**args)

    with pytest.raises(ValueError, match="game must be one of"):
        run(game="three-player")
    with pytest.raises(ValueError, match="optimizer"):
        run(optimizer="rmsprop")
    with pytest.raises(ValueError, match="state.theta"):
        run(state=state(d=d + 1))
    with pytest.raises(ValueError, match="lam"):
        run(state=state(lam=m + 1))
    with pytest.raises(ValueError, match="matrix"):
        run(game="proxy-swap")  # the swap player's matrix is (m+1, m+1) and its lam has m + 1 entries
    with pytest.raises(ValueError, match="record buffers are too small"):
        run(records=core.LoopRecords.allocate(2, d, m, A))
    with pytest.raises(ValueError, match="t_begin <= t_end"):
        run(t_begin=5, t_end=3)
    with pytest.raises(ValueError, match="learning_rate"):
        run(learning_rate=-1.0)
    with pytest.raises(ValueError, match="row index outside"):
        run(rows=np.full((20, 1, 4), spec.blocks[0].X.n_samples), sampled=[True])
    with pytest.raises(ValueError, match="sampled"):
        run(rows=np.zeros((20, 1, 4)))
    with pytest.raises(ValueError, match="C must have shape"):
        run(C=np.zeros((m, A + 1)))
    bad = state()
    bad.theta = list(bad.theta)
    with pytest.raises(TypeError, match="state.theta must be a writeable"):
        run(state=bad)
    with pytest.raises(TypeError, match="FeatureMatrix"):
        run(blocks=[(np.zeros((3, d)), spec.blocks[0].atoms, spec.blocks[0].atom_ids)])
