"""rateopt.dask on a LocalCluster (2 worker processes, 1 thread each): partitioned datasets, partition-wise
compilation, distributed kernel passes, prediction, and their errors.

The reference of every result is the in-memory fit or compile of the same data (``rateopt.Dataset``).
One cluster serves the whole module.
"""

import os
import pathlib
import re
import signal
import sys

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import rateopt as ro  # noqa: E402
import rateopt.dask as rd  # noqa: E402
from _games_support import params_for
from rateopt._train import run_game  # noqa: E402
from rateopt.exceptions import EmptySubsetError, RateoptError  # noqa: E402

N, D, CHUNK = 600, 4, 150


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, D))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=N) > 0, "yes", "no")
    y[:CHUNK] = "no"  # partition 0 holds one label value: the positive label is decided from all partitions
    g = rng.choice(["a", "b", "c"], size=N, p=[0.5, 0.3, 0.2])
    w = rng.uniform(0.2, 3.0, size=N)
    base = (X[:, 1] > 0).astype(np.int64)
    return X, y, g, w, base


def _problem(ds):
    ctx = ds.context()
    a = ctx.subset(group="g", value="a")
    bc = ctx.subset(group="g", value=["b", "c"])
    return ro.Problem(constraints=[ro.true_positive_rate(a) >= ro.true_positive_rate(ctx) - 0.02,
                                   ro.true_positive_rate(bc) >= ro.true_positive_rate(ctx) - 0.02,
                                   ro.positive_prediction_rate(ctx) <= 0.45,
                                   ro.churn_rate(ctx) <= 0.3])


def _pair(data, client, *, X_parts=None):
    X, y, g, w, base = data
    local = ro.Dataset(X, y, weights=w, groups={"g": g}, baseline=base)
    remote = rd.Dataset(da.from_array(X, chunks=(CHUNK, D)) if X_parts is None else X_parts,
                        da.from_array(y, chunks=CHUNK), weights=da.from_array(w, chunks=CHUNK),
                        groups={"g": da.from_array(g, chunks=CHUNK)}, baseline=da.from_array(base, chunks=CHUNK),
                        client=client)
    return local, remote


@pytest.fixture(scope="module")
def problems(data, client):
    local, remote = _pair(data, client)
    return _problem(local), _problem(remote)


def test_dataset_reads_labels_from_all_partitions(problems):
    local, remote = (p.datasets["train"] for p in problems)
    assert remote.classes == local.classes == ("no", "yes")
    assert remote.n_samples == N and list(remote.sizes) == [CHUNK] * 4 and remote.n_features == D
    assert remote.total_weight == pytest.approx(local.total_weight, rel=1e-14)
    assert list(remote.group_values("g")) == list(local.group_values("g"))


def test_partitioned_compile_equals_in_memory_compile(problems, client):
    pl, pr = (p.compiled for p in problems)
    assert [a.name for a in pr.atoms] == [a.name for a in pl.atoms]
    assert [a.aliases for a in pr.atoms] == [a.aliases for a in pl.atoms]
    assert [a.n_members for a in pr.atoms] == [a.n_members for a in pl.atoms]
    np.testing.assert_allclose([a.total_weight for a in pr.atoms], [a.total_weight for a in pl.atoms], rtol=1e-14)
    np.testing.assert_allclose(pr.C, pl.C, rtol=1e-14, atol=0)
    np.testing.assert_allclose(pr.kappa, pl.kappa, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(pr.objective_coef, pl.objective_coef, rtol=1e-14, atol=0)
    assert pr.constraint_names == pl.constraint_names
    # the partitions' membership tables, stacked, are the in-memory table (weights with global denominators)
    table, blocks = pl.tables["train"], client.gather(pr.tables["train"].blocks)
    indptr = np.concatenate([[0]] + [b.atoms.indptr[1:] + off for b, off in
                                     zip(blocks, np.cumsum([0] + [b.atoms.indptr[-1] for b in blocks[:-1]]))])
    np.testing.assert_array_equal(indptr, table.indptr)
    np.testing.assert_array_equal(np.concatenate([b.atoms.indices for b in blocks]), table.indices)
    # The in-memory weights lie on the grid of exact_normalized (within 2**-53 of w_j / W(S_a)); the partitions
    # divide by the global totals without it (a known gap: their whole-atom rates are 1 only up to round-off).
    np.testing.assert_allclose(np.concatenate([b.atoms.weights for b in blocks]), table.weights, rtol=0,
                               atol=4 * 2.0**-53)


@pytest.mark.parametrize("method", ["proxy-swap", "proxy-external", "lagrangian-hinge", "unconstrained",
                                    "three-player"])
def test_full_batch_fit_equals_the_single_machine_fit(problems, method):
    pl, pr = problems
    kw = dict(method=method, **params_for(method, n_iter=30, learning_rate=0.05, eta_lambda=0.5, record_every=3))
    local, remote = run_game(pl, **kw), run_game(pr, **kw)
    assert np.max(np.abs(remote.weights - local.weights)) <= 1e-9
    assert np.max(np.abs(remote.biases - local.biases)) <= 1e-9
    assert np.max(np.abs(remote.constraints - local.constraints)) <= 1e-12
    np.testing.assert_allclose(remote.multipliers, local.multipliers, rtol=0, atol=1e-9)


def test_the_core_loop_leaves_partitioned_data_to_the_driver(problems):
    # loop="auto" (the default, used above) runs partitioned blocks in the Python driver, whose kernel
    # passes go to the workers; loop="core" says why it cannot take them.
    pl, pr = problems
    kw = dict(method="proxy-swap", n_iter=6, learning_rate=0.05, eta_lambda=0.5)
    core, remote = run_game(pl, loop="core", **kw), run_game(pr, loop="auto", **kw)
    assert np.max(np.abs(remote.weights - core.weights)) <= 1e-9
    with pytest.raises(ValueError, match=r"loop='core'.*not in this process"):
        run_game(pr, loop="core", **kw)


def test_interrupted_partitioned_fit_resumes_from_its_checkpoint(problems, tmp_path):
    # A fit whose client stops after iteration 10 leaves a checkpoint; resuming from it continues the fit.
    # With SGD and Lagrange multipliers the records hold the whole state, so the resumed fit is the
    # uninterrupted one (a single machine's, as the partitioned fit equals it).
    pl, pr = problems
    kw = dict(method="proxy-external", optimizer="sgd", learning_rate=0.05, eta_lambda=0.5, record_every=1)
    path = tmp_path / "fit.npz"
    run_game(pr, n_iter=40, checkpoint=path, callback=lambda t, info: t >= 10, **kw)
    saved = ro.load(path)
    assert list(saved.history["iteration"]) == list(range(11))
    resumed = run_game(pr, n_iter=10, resume=saved, **kw)
    local = run_game(pl, n_iter=20, **kw)
    k = saved.n_trivial  # the trivial rules come first
    assert np.max(np.abs(resumed.weights[k + 11:] - local.weights[k + 10:])) <= 1e-9
    np.testing.assert_allclose(resumed.multipliers[k + 11:], local.multipliers[k + 10:], rtol=0, atol=1e-9)


def test_csr_partitions_train_like_the_dense_dataset(data, problems, client):
    X = data[0]
    parts = [sp.csr_matrix(X[i:i + CHUNK]) for i in range(0, N, CHUNK)]
    _, remote = _pair(data, client, X_parts=parts)
    pl = problems[0]
    kw = dict(n_iter=20, learning_rate=0.05)
    local, sparse = run_game(pl, **kw), run_game(_problem(remote), **kw)
    assert np.max(np.abs(sparse.weights - local.weights)) <= 1e-9


def test_minibatch_fit_draws_the_same_rows_as_the_single_machine_fit(problems):
    # The driver draws global row ids with the seed; each partition runs its share of them and its sums are
    # rescaled to the whole block's, so the estimates are the single machine's (to round-off): same law, same draws.
    pl, pr = problems
    kw = dict(n_iter=30, learning_rate=0.05, batch_size=64, random_state=11, record_every=10)
    local, remote = run_game(pl, **kw), run_game(pr, **kw)
    assert np.max(np.abs(remote.weights - local.weights)) <= 1e-9
    other = run_game(pl, **dict(kw, random_state=12))
    assert np.max(np.abs(other.weights - local.weights)) > 1e-6  # the seed matters: the comparison can fail


def test_solutions_and_prediction_on_partitions(data, problems):
    X = data[0]
    pl, pr = problems
    result = run_game(pr, n_iter=30, learning_rate=0.05, eta_lambda=0.5)
    clf = result.solution("m-stochastic")
    Xd = da.from_array(X, chunks=(CHUNK, D))
    np.testing.assert_array_equal(rd.predict(clf, Xd, random_state=3).compute(), clf.predict(X, random_state=3))
    np.testing.assert_allclose(rd.predict(clf, Xd, method="predict_proba").compute(), clf.predict_proba(X))
    ev, ref = rd.evaluate(pr, clf), pl.evaluate(clf.predict_proba(X)[:, 1], kind="probabilities")
    assert ev.objective == pytest.approx(ref.objective, abs=1e-12)
    for name, value in ref.constraints.items():
        assert ev.constraints[name] == pytest.approx(value, abs=1e-12)


def test_prediction_on_a_dask_dataframe(data, problems):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X = data[0]
    clf = run_game(problems[1], n_iter=5).solution("last")
    ddf = dd.from_pandas(pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]), npartitions=3)
    np.testing.assert_array_equal(rd.predict(clf, ddf).compute().to_numpy(), clf.predict(X))


def test_killed_worker_mid_fit_gives_the_undisturbed_result(problems, client):
    pr = problems[1]
    kw = dict(n_iter=30, learning_rate=0.05, eta_lambda=0.5, record_every=3)
    undisturbed = run_game(pr, **kw)
    pids = client.run(os.getpid)
    killed = []

    def kill_one(t, info):
        if t == 9 and not killed:
            victim = sorted(pids)[0]
            os.kill(pids[victim], signal.SIGKILL)
            killed.append(victim)

    disturbed = run_game(pr, callback=kill_one, **kw)
    assert killed
    np.testing.assert_array_equal(disturbed.weights, undisturbed.weights)
    np.testing.assert_array_equal(disturbed.atom_rates, undisturbed.atom_rates)
    _wait_for_replacement(client, killed[0])  # the nanny restarts the worker for the tests after this one


def _wait_for_replacement(client, victim, timeout=60.0):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        workers = set(client.scheduler_info()["workers"])
        if victim not in workers and len(workers) == 2:
            return
        time.sleep(0.1)
    raise TimeoutError(f"worker {victim} was not replaced within {timeout} s")


class _RestrictionLog(distributed.diagnostics.plugin.SchedulerPlugin):
    """A scheduler plugin (the LocalCluster's scheduler runs in this process): where each task ran, its
    dependencies and its worker restrictions."""

    name = "test-restriction-log"

    def __init__(self):
        self.runs = []

    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "processing":
            ts = self.scheduler.tasks[key]
            self.runs.append((key, {d.key for d in ts.dependencies}, set(ts.worker_restrictions or ()),
                              ts.loose_restrictions, ts.processing_on.address))


def test_partitions_never_leave_their_worker(data, client):
    # Every partition starts on one worker (its inputs scattered there), so the other worker idles and Dask
    # would balance the load by copying partitions to it; every task reading a partition is pinned to its
    # holder, so none is copied: not to build the tables, not to fit, not to evaluate.
    X, y, g, w = data[:4]
    workers = sorted(client.scheduler_info()["workers"])
    n_parts = 12
    rows = np.array_split(np.arange(N), n_parts)
    on_first = lambda a: client.scatter([a[r] for r in rows], workers=workers[:1], hash=False)
    log = _RestrictionLog()
    log.scheduler = client.cluster.scheduler
    client.cluster.scheduler.add_plugin(log)
    try:
        ds = rd.Dataset(on_first(X), on_first(y), weights=on_first(w), groups={"g": on_first(g)}, client=client)
        who = client.who_has(ds.partitions)
        start = {f.key: set(who[f.key]) for f in ds.partitions}
        pr = _fairness(ds)
        result = run_game(pr, n_iter=10, learning_rate=0.05)
        rd.evaluate(pr, result.solution("last"))
        ds.group_values("g")
    finally:
        client.cluster.scheduler.remove_plugin(log.name)
    blocks = pr.compiled.tables["train"].blocks
    who = client.who_has(blocks)
    held = {**start, **{f.key: set(who[f.key]) for f in blocks}}
    assert all(len(h) == 1 for h in held.values())
    readers = [run for run in log.runs if run[1] & held.keys()]
    assert len(readers) >= 4 * n_parts  # shapes, two subsets' statistics, tables, kernel passes, evaluation
    for key, deps, restrictions, loose, ran_on in readers:
        holder = set.union(*(held[d] for d in deps & held.keys()))
        assert (restrictions, loose, {ran_on}) == (holder, False, holder), key
    assert {k: set(h) for k, h in client.who_has(ds.partitions).items()} == start
    def incoming_keys(dask_worker):  # nested: pickled by value, so worker processes need not import this module
        return [key for entry in dask_worker.transfer_incoming_log for key in entry["keys"]]

    moved = [k for keys in client.run(incoming_keys).values() for k in keys if k in held]
    assert moved == []


def test_partitions_weigh_their_arrays():
    # Dask decides whether moving a partition is cheap by its size: a partition and its membership table weigh
    # the bytes of their arrays, not the 56 bytes of a bare object.
    from dask.sizeof import sizeof
    from rateopt._language._lowering import WeightSum
    from rateopt._language._predicates import All
    from rateopt.dask._compile import partition_block
    from rateopt.dask._partitions import make_partition

    rng = np.random.default_rng(0)
    X, w = rng.normal(size=(500, 6)), rng.uniform(1, 2, size=500)
    y, g = rng.choice(["n", "p"], size=500), rng.choice(["a", "b"], size=500).astype(object)
    part = make_partition(0, "train", X, y, weights=w, groups={"g": g}, positive_label="p")
    arrays = X.nbytes + part.data.y.nbytes + w.nbytes + sizeof(part.data.groups["g"])
    assert arrays <= sizeof(part) <= arrays + 200
    total = WeightSum.of(part.data.weights)
    block = partition_block(part, [All()], [total.exp], [total.mant])
    table = block.atoms.indptr.nbytes + block.atoms.indices.nbytes + block.atoms.weights.nbytes
    assert X.nbytes + table <= sizeof(block) <= X.nbytes + table + 200


def test_losing_in_memory_partitions_with_a_worker_is_a_clear_error(data, client):
    # Partitions given as in-memory arrays are scattered: Dask has no source to recompute them from when the
    # worker holding one dies. The fit stops with an error that says so and how to avoid it.
    X, y, g = data[:3]
    parts = lambda a: [a[i:i + CHUNK] for i in range(0, N, CHUNK)]
    ds = rd.Dataset(parts(X), parts(y), groups={"g": parts(g)}, client=client)
    pr = _fairness(ds)
    pids = client.run(os.getpid)
    victim = client.who_has(ds.partitions[:1])[ds.partitions[0].key][0]

    def kill(t, info):
        if t == 3:
            os.kill(pids[victim], signal.SIGKILL)

    with pytest.raises(RateoptError, match=r"partitions of dataset 'train' are gone from the cluster, as when a "
                                           r"worker holding them is lost \(Dask: .*\): .*build the dataset from "
                                           r"dask collections"):
        run_game(pr, n_iter=10, learning_rate=0.05, callback=kill)
    _wait_for_replacement(client, victim)


def test_estimator_probabilities_on_partitions(data):
    # RateConstrainedClassifier.predict_proba has two columns and predict gives its labels: both on a dask
    # array and on a dask DataFrame, as in memory.
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, g = data[:3]
    est = ro.RateConstrainedClassifier(n_iter=20, solution="m-stochastic").fit(X, y, groups={"g": g})
    Xd = da.from_array(X, chunks=(CHUNK, D))
    proba = rd.predict(est, Xd, method="predict_proba")
    assert proba.shape == (N, 2)
    np.testing.assert_array_equal(proba.compute(), est.predict_proba(X))
    np.testing.assert_array_equal(rd.predict(est, Xd).compute(), est.predict(X))
    ddf = dd.from_pandas(pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]), npartitions=3)
    frame = rd.predict(est, ddf, method="predict_proba").compute()
    assert list(frame.columns) == ["no", "yes"]
    np.testing.assert_array_equal(frame.to_numpy(), est.predict_proba(X))
    np.testing.assert_array_equal(rd.predict(est, ddf).compute().to_numpy(), est.predict(X))


def test_the_estimator_refuses_dask_collections(data):
    # fit and predict would pull a dask collection into this process whole: they say where to work instead.
    X, y, g = data[:3]
    Xd, yd, gd = da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, chunks=CHUNK), da.from_array(g, chunks=CHUNK)
    est = ro.RateConstrainedClassifier(n_iter=5)
    with pytest.raises(TypeError, match=r"^X is a dask Array, which RateConstrainedClassifier would pull into this "
                                        r"process whole: train on the cluster with rateopt\.dask\.Dataset"):
        est.fit(Xd, yd)
    with pytest.raises(TypeError, match=r"^y is a dask Array, .*or pass y\.compute\(\) to work in memory$"):
        est.fit(X, yd)
    with pytest.raises(TypeError, match=r"^groups\['g'\] is a dask Array"):
        est.fit(X, y, groups={"g": gd})
    est.fit(X, y)
    with pytest.raises(TypeError, match=r"^X is a dask Array, .*rateopt\.dask\.predict\(estimator, X"):
        est.predict_proba(Xd)


def test_mismatched_partitions_are_refused_naming_the_argument(data, client):
    X, y, g, w, base = data
    Xd = da.from_array(X, chunks=(CHUNK, D))
    with pytest.raises(RateoptError, match=r"y has 3 partitions but X has 4"):
        rd.Dataset(Xd, da.from_array(y, chunks=200), client=client)
    with pytest.raises(RateoptError, match=r"partition 0 of weights has 100 rows but partition 0 of X has 150"):
        rd.Dataset(Xd, weights=da.from_array(w, chunks=(100, 150, 150, 200)), client=client)
    # lengths known only where the partitions live: the worker's check names the partition
    X_parts = [X[i:i + CHUNK] for i in range(0, N, CHUNK)]
    y_parts = [y[i:i + CHUNK] for i in range(0, N, CHUNK)]
    y_parts[2] = y_parts[2][:-1]
    with pytest.raises(RateoptError, match=r"y has 3 partitions but X has 4"):
        rd.Dataset(X_parts, y_parts[:3], client=client)
    with pytest.raises(RateoptError, match=r"partition 2 of y has 149 rows but partition 2 of X has 150"):
        rd.Dataset(X_parts, y_parts, client=client)
    import dask

    lazy = [dask.delayed(lambda a: a)(p) for p in y_parts]
    with pytest.raises(RateoptError, match=r"partition 2 of dataset 'train': y has 149 entries but X has 150 rows"):
        rd.Dataset(X_parts, lazy, client=client)


def test_bad_values_are_refused_naming_the_partition(data, client):
    X, y, _, w, _ = data
    bad = w.copy()
    bad[CHUNK + 5] = -1.0
    with pytest.raises(RateoptError, match=r"partition 1 of dataset 'train': weights must be non-negative"):
        rd.Dataset(da.from_array(X, chunks=(CHUNK, D)), weights=da.from_array(bad, chunks=CHUNK), client=client)
    with pytest.raises(RateoptError, match=r"^X has no rows: every partition is empty$"):
        rd.Dataset(da.from_array(X[:0], chunks=((0, 0), (D,))), client=client)
    import dask

    # an empty partition whose columns are not: the worker's check names it
    lazy_x = [dask.delayed(np.asarray)(X[CHUNK:2 * CHUNK]), dask.delayed(np.asarray)(X[:0])]
    lazy_y = [dask.delayed(np.asarray)(y[CHUNK:2 * CHUNK]), dask.delayed(np.asarray)(y[:3])]
    with pytest.raises(RateoptError, match=r"partition 1 of dataset 'train': y has 3 entries but X has 0 rows"):
        rd.Dataset(lazy_x, lazy_y, client=client)


def _filtered_frame(data):
    """A dask DataFrame of the data in 4 partitions, filtered so that partition 2 is empty, and the kept rows."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, g, w = data[:4]
    keep = np.ones(N, dtype=bool)
    keep[2 * CHUNK:3 * CHUNK] = False  # partition 2 loses every row
    keep[::7] = False  # and the others some
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]).assign(y=y, g=g, w=w, keep=keep)
    ddf = dd.from_pandas(frame, npartitions=4, sort=False)
    filtered = ddf[ddf["keep"]]
    assert [len(p) for p in filtered.partitions] == [int(keep[i:i + CHUNK].sum()) for i in range(0, N, CHUNK)]
    return filtered, keep


def test_empty_partitions_are_skipped(data, client):
    # A filtered dask DataFrame, a dask array with an empty chunk and a list of CSR partitions with an empty one:
    # each gives the dataset, the compiled problem and the fit of its non-empty rows.
    X, y, g, w = data[:4]
    filtered, keep = _filtered_frame(data)
    cols = [f"x{j}" for j in range(D)]
    local = ro.Dataset(X[keep], y[keep], weights=w[keep], groups={"g": g[keep]})
    sizes = tuple(int(keep[i:i + CHUNK].sum()) for i in range(0, N, CHUNK))
    arr = lambda a: da.from_array(a[keep], chunks=(sizes,) + ((D,) if a.ndim == 2 else ()))
    csr = [sp.csr_matrix(X[keep][s - n:s]) for n, s in zip(sizes, np.cumsum(sizes))]
    remotes = [
        rd.Dataset(filtered[cols], filtered["y"], weights=filtered["w"], groups=filtered[["g"]], client=client),
        rd.Dataset(arr(X), arr(y), weights=arr(w), groups={"g": arr(g)}, client=client),
        rd.Dataset(csr, arr(y), weights=arr(w), groups={"g": arr(g)}, client=client),
    ]
    assert sizes[2] == 0 and [len(r.partitions) for r in remotes] == [3, 3, 3]
    pl = _fairness(local)
    kw = {"n_iter": 15, "learning_rate": 0.05, "eta_lambda": 0.5}
    ref = run_game(pl, **kw)
    for remote in remotes:
        assert remote.n_samples == int(keep.sum()) and list(remote.sizes) == [s for s in sizes if s]
        pr = _fairness(remote)
        assert [a.n_members for a in pr.compiled.atoms] == [a.n_members for a in pl.compiled.atoms]
        np.testing.assert_allclose(pr.compiled.C, pl.compiled.C, rtol=1e-14, atol=0)
        assert np.max(np.abs(run_game(pr, **kw).weights - ref.weights)) <= 1e-9


def _fairness(ds):
    ctx = ds.context()
    return ro.Problem(constraints=[ro.true_positive_rate(ctx.subset(group="g", value="a")) >=
                                   ro.true_positive_rate(ctx) - 0.02,
                                   ro.positive_prediction_rate(ctx) <= 0.45])


def test_a_named_dask_series_of_groups_is_one_group_column(data, client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, g = data[:3]
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]).assign(y=y, g=g)
    ddf = dd.from_pandas(frame, npartitions=3)
    remote = rd.Dataset(ddf[[f"x{j}" for j in range(D)]], ddf["y"], groups=ddf["g"], client=client)
    local = ro.Dataset(X, y, groups={"g": g})
    assert list(remote.groups) == ["g"]
    assert list(remote.group_values("g")) == list(local.group_values("g"))
    pr, pl = (_fairness(d).compiled for d in (remote, local))
    assert [a.n_members for a in pr.atoms] == [a.n_members for a in pl.atoms]
    np.testing.assert_allclose(pr.C, pl.C, rtol=1e-14, atol=0)


def test_subset_errors_name_the_subset(data, client):
    X, y, g, w, base = data
    ds = rd.Dataset(da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, chunks=CHUNK),
                    groups={"g": da.from_array(g, chunks=CHUNK)}, client=client)
    ctx = ds.context()
    with pytest.raises(EmptySubsetError, match=r"subset 'g=zz'.* which is empty"):
        ro.Problem(constraints=[ro.true_positive_rate(ctx.subset(group="g", value="zz")) >= 0.5])
    with pytest.raises(RateoptError, match=r"boolean mask over the whole dataset"):
        ro.Problem(constraints=[ro.positive_prediction_rate(ctx.subset(g == "a")) <= 0.5])


def test_kernel_model_is_refused_with_a_clear_error(problems):
    with pytest.raises(RateoptError, match=r"features stay on the workers"):
        ro.train(problems[1], model=ro.KernelModel(n_components=5), n_iter=3)


def test_a_worker_without_rateopt_is_named(client):
    worker = sorted(client.scheduler_info()["workers"])[0]

    def hide():
        sys.modules["_hidden_rateopt"] = sys.modules["rateopt"]
        sys.modules["rateopt"] = None

    def restore():
        sys.modules["rateopt"] = sys.modules.pop("_hidden_rateopt")

    client.run(hide, workers=[worker])
    try:
        with pytest.raises(RateoptError, match=re.escape(worker) + r": cannot import rateopt"):
            rd.check_workers(client)
    finally:
        client.run(restore, workers=[worker])
    rd.check_workers(client)


def test_guide_dask_example_runs():
    from _doc_examples import run_blocks

    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "dask.md"
    if not page.exists():
        pytest.skip("not run from a source checkout")
    namespace = run_blocks(page, language="py")
    local, remote = namespace["local_result"], namespace["result"]
    # the same candidates but the in-memory fit's threshold rules (iterations == -3), which a Dask fit lacks
    assert not np.any(remote.iterations == -3)
    assert np.max(np.abs(remote.weights - local.weights[local.iterations != -3])) <= 1e-9


def test_baseline_reading_is_decided_from_all_partitions(data, client):
    # Partition 0's scores happen to be 0/1 only: read alone it would be decisions (0 -> negative); over the
    # whole dataset the baseline is scores (0 -> positive), as the in-memory dataset reads it.
    X, y, g, w, base = data
    scores = np.random.default_rng(3).normal(size=N)
    scores[:CHUNK] = np.where(scores[:CHUNK] > 0, 1.0, 0.0)
    local = ro.Dataset(X, y, baseline=scores)
    remote = rd.Dataset(da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, chunks=CHUNK),
                        baseline=da.from_array(scores, chunks=CHUNK), client=client)
    pl, pr = (ro.Problem(constraints=[ro.churn_rate(d.context()) <= 0.2]).compiled for d in (local, remote))
    assert [a.n_members for a in pr.atoms] == [a.n_members for a in pl.atoms]
    np.testing.assert_allclose(pr.C, pl.C, rtol=1e-14, atol=0)
    np.testing.assert_allclose(pr.kappa, pl.kappa, rtol=1e-14, atol=1e-16)


def test_dask_dataframe_columns_compile_like_the_in_memory_dataset(data, client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, g, w, base = data
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]).assign(y=y, g=g, w=w)
    ddf = dd.from_pandas(frame, npartitions=3)
    remote = rd.Dataset(ddf[[f"x{j}" for j in range(D)]], ddf["y"], weights=ddf["w"], groups=ddf[["g"]],
                        client=client)
    local = ro.Dataset(X, y, weights=w, groups={"g": g})
    ctx_r, ctx_l = remote.context(), local.context()
    pr, pl = (ro.Problem(constraints=[ro.true_positive_rate(c.subset(group="g", value="a")) >= 0.5]).compiled
              for c in (ctx_r, ctx_l))
    assert remote.n_samples == N and remote.classes == local.classes
    assert [a.n_members for a in pr.atoms] == [a.n_members for a in pl.atoms]
    np.testing.assert_allclose(pr.C, pl.C, rtol=1e-14, atol=0)
