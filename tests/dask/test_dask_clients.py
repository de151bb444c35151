"""rateopt.dask with a client that is not the default one, and a scheduler lost mid-fit (issue 32, item 9).

Each test runs its own in-process LocalCluster whose client is made with
``set_as_default=False``. The reference is the in-memory fit of the same data
(``rateopt.Dataset``), which the partitioned fit equals.
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import rateopt as ro  # noqa: E402
import rateopt.dask as rd  # noqa: E402
from rateopt._train import run_game  # noqa: E402
from rateopt.exceptions import RateoptError  # noqa: E402

N, CHUNK = 200, 50
KW = dict(method="proxy-external", optimizer="sgd", learning_rate=0.05, eta_lambda=0.5, record_every=1)


def _data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=N) > 0).astype(int)
    g = np.where(X[:, 1] > 0, "a", "b")
    return X, y, g


def _problem(ds):
    ctx = ds.context()
    return ro.Problem(constraints=[ro.positive_prediction_rate(ctx.subset(group="g", value="a"))
                                   <= ro.positive_prediction_rate(ctx) + 0.05],
                      datasets={"train": ds})


def _cluster():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
    return cluster, distributed.Client(cluster, set_as_default=False)


def _remote(client):
    X, y, g = _data()
    return rd.Dataset(da.from_array(X, chunks=(CHUNK, 3)), da.from_array(y, chunks=CHUNK),
                      groups={"g": da.from_array(g, chunks=CHUNK)}, client=client)


def _local():
    X, y, g = _data()
    return ro.Dataset(X, y, groups={"g": g})


def test_a_dataset_on_a_client_that_is_not_the_default_trains_like_the_in_memory_one():
    cluster, client = _cluster()
    try:
        with pytest.raises(ValueError, match="No clients found"):
            distributed.default_client()  # the bug's condition: no default client (was "No clients found")
        remote = _remote(client)
        res = run_game(_problem(remote), n_iter=5, **KW)
    finally:
        client.close()
        cluster.close()
    local = run_game(_problem(_local()), n_iter=5, **KW)
    assert np.max(np.abs(res.weights - local.weights)) <= 1e-9


def test_a_scheduler_lost_mid_fit_says_so_and_the_checkpoint_resumes(tmp_path):
    path = tmp_path / "fit.npz"
    cluster, client = _cluster()
    try:
        problem = _problem(_remote(client))

        def kill_scheduler(t, info):
            if t == 3:
                client.sync(cluster.scheduler.close)

        with pytest.raises(RateoptError) as info:
            run_game(problem, n_iter=20, checkpoint=path, callback=kill_scheduler, **KW)
    finally:
        client.close()
        cluster.close()
    msg = str(info.value)
    assert "\n" not in msg
    assert "connection to the Dask scheduler was lost" in msg and "dataset 'train'" in msg
    assert "resume=rateopt.load(path)" in msg and "checkpoint=path" in msg
    # the advice works: on a new cluster, the checkpoint resumes into the uninterrupted fit
    saved = ro.load(path)
    done, k = len(saved.history["iteration"]), saved.n_trivial  # records after the k trivial rules
    assert done >= 4
    cluster, client = _cluster()
    try:
        resumed = run_game(_problem(_remote(client)), n_iter=6, resume=saved, **KW)
    finally:
        client.close()
        cluster.close()
    # as tests/dask/test_dask.py's resume test: the resumed records continue the uninterrupted fit's
    local = run_game(_problem(_local()), n_iter=done - 1 + 6, **KW)
    assert resumed.weights[k + done:].shape == local.weights[k + done - 1:].shape == (6, 3)
    assert np.max(np.abs(resumed.weights[k + done:] - local.weights[k + done - 1:])) <= 1e-9
    np.testing.assert_allclose(resumed.multipliers[k + done:], local.multipliers[k + done - 1:], rtol=0, atol=1e-9)
