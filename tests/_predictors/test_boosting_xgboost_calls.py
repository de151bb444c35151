"""XGBoost's direct calls of the booster adapter (``_predictors._boosting._XGBoostCalls``) against XGBoost's
public API.

The adapter grows each tree through ``XGBoosterTrainOneIter`` with interface
JSON it builds once per gradient array, and reads the training margins through
``XGBoosterPredictFromDMatrix`` into a view it makes again only when XGBoost's
buffer moves. The reference is ``xgboost.Booster.boost`` and
``Booster.predict(output_margin=True)`` on the same rows and gradients: the
same trees (the saved models' bytes) and the same margins, bit for bit, after
every round, whether the caller reuses its gradient buffers (the training
loop), hands new ones every round (whose addresses may be freed ones), or
hands arrays the direct call cannot read (then the public call runs).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from rateopt import BoostingModel  # noqa: E402
from rateopt._predictors import _boosting as adapters  # noqa: E402


def _rows(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d))


def _gradients(rng, n, dtype=np.float32):
    return rng.normal(size=n).astype(dtype), rng.uniform(0.1, 1.0, n).astype(dtype)


def _public_trees(X, rounds, seed):
    """The reference: the same booster grown by ``Booster.boost`` on the same gradients, margins by ``predict``."""
    model = BoostingModel("xgboost")
    booster = adapters._XGBoostBooster.start(model, X, n_threads=1, random_state=0)
    rng = np.random.default_rng(seed)
    margins = []
    for t in range(rounds):
        g, h = _gradients(rng, X.shape[0])
        booster.booster.boost(booster.dtrain, t, grad=g, hess=h)
        margins.append(booster.booster.predict(booster.dtrain, output_margin=True))
    return bytes(booster.booster.save_raw("json")), margins


@pytest.mark.parametrize("buffers", ["reused", "new every round", "float64"])
def test_direct_calls_grow_the_trees_and_margins_of_the_public_api(buffers):
    X = _rows()
    n, rounds, seed = X.shape[0], 12, 3
    want_trees, want_margins = _public_trees(X, rounds, seed)
    model = BoostingModel("xgboost")
    booster = adapters._XGBoostBooster.start(model, X, n_threads=1, random_state=0)
    assert booster._direct_calls() is not None  # this XGBoost exposes the calls: they are what runs below
    rng = np.random.default_rng(seed)
    grad, hess = np.empty(n, np.float32), np.empty(n, np.float32)
    for t in range(rounds):
        g, h = _gradients(rng, n)
        if buffers == "reused":
            grad[:], hess[:] = g, h
            g, h = grad, hess
        elif buffers == "float64":  # not what XGBoost's call reads: the public boost() converts them
            g, h = g.astype(np.float64), h.astype(np.float64)
        gc.collect()  # the last round's arrays are freed: new ones may take their addresses
        margins = booster.add_tree(g, h)
        assert margins.dtype == np.float32
        assert np.array_equal(margins, want_margins[t])
    assert bytes(booster.booster.save_raw("json")) == want_trees


def test_interfaces_follow_the_array_not_its_address():
    calls = adapters._XGBoostBooster.start(BoostingModel("xgboost"), _rows(n=64), n_threads=1,
                                           random_state=0)._direct_calls()
    for _ in range(3 * calls.MAX_ARRAYS):  # freed arrays' addresses are reused by new ones
        a = np.arange(64, dtype=np.float32)
        assert calls._interface(a) == adapters._array_interface(a)
        del a
    assert len(calls._arrays) <= calls.MAX_ARRAYS
    assert calls._interface(np.zeros(64)) is None  # float64
    assert calls._interface(np.zeros(63, np.float32)) is None  # not the rows' length
    assert calls._interface(np.zeros(128, np.float32)[::2]) is None  # not contiguous
    assert calls._interface([0.0] * 64) is None
