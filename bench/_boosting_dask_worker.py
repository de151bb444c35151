"""The worker side of bench/boosting_dask_traffic.py: a data-parallel LightGBM booster beside its rows.

An importable module (the bench puts bench/ on the workers' PYTHONPATH), so a
task names its function by reference (a few dozen pickled bytes) instead of
shipping its code, as a function of an installed package would be.
"""

from __future__ import annotations

import numpy as np


def _worker_state():
    from distributed import get_worker

    w = get_worker()
    if not hasattr(w, "_rateopt_boosting"):
        w._rateopt_boosting = {}
    return w._rateopt_boosting


def start_part(token, part, model_fields, params, n_total, seed):
    """Build this worker's data-parallel booster on its partition; its atom sums at the empty ensemble."""
    import lightgbm as lgb

    from rateopt._predictors._boosting import _LightGBMBooster

    X, V = part
    full = {"objective": "none", "learning_rate": model_fields["learning_rate"],
            "max_depth": model_fields["max_depth"], "num_leaves": model_fields["num_leaves"],
            "min_sum_hessian_in_leaf": model_fields["min_child_weight"], "num_threads": 1, "seed": seed,
            "deterministic": True, "verbosity": -1, "boost_from_average": False, **params}
    train_set = lgb.Dataset(X, label=np.zeros(X.shape[0]), params=dict(full), free_raw_data=False)
    booster = lgb.Booster(params=full, train_set=train_set)
    _worker_state()[token] = {"booster": _LightGBMBooster(booster), "V": V, "scores": np.zeros(X.shape[0]),
                              "n_total": float(n_total)}
    bins = [int(train_set.feature_num_bin(i)) for i in range(train_set.num_feature())]
    return V.T @ np.ones(X.shape[0]), bins


def logistic_derivatives(u, scores, scale):
    """Per-row gradient and Hessian of the logistic proxy of ``scale * sum_j u_j 1[s_j >= 0]``.

    The formula of :func:`rateopt.core.boosting_pass` with ``proxy="logistic"``
    (``u_j sigma(s_j)`` or ``u_j (1 - sigma(s_j))`` by the sign of ``u_j``, and
    ``|u_j| sigma (1 - sigma)``), in NumPy on the worker's own rows, as float32
    as the backend takes them.
    """
    from scipy.special import expit

    sigma = expit(scores)
    grad = u * np.where(u > 0, sigma, 1.0 - sigma) * scale
    hess = np.abs(u) * sigma * (1.0 - sigma) * scale
    return grad.astype(np.float32), hess.astype(np.float32)


def round_part(token, net):
    """One round on this worker: derivatives in place, one data-parallel tree, the new atom sums."""
    st = _worker_state()[token]
    grad, hess = logistic_derivatives(st["V"] @ net, st["scores"], st["n_total"])
    st["scores"] = st["booster"].add_tree(grad, hess)
    return st["V"].T @ (st["scores"] >= 0).astype(np.float64)


def model_string(token):
    """This worker's booster in LightGBM's text format."""
    st = _worker_state()[token]
    return st["booster"].booster.model_to_string()


def finish_part(token):
    """Drop this fit's state and LightGBM's network; the bytes this worker's ``get_data`` has served."""
    import lightgbm as lgb

    state = _worker_state()
    state.pop(token, None)
    lgb.basic._safe_call(lgb.basic._LIB.LGBM_NetworkFree())
    from distributed import get_worker

    return int(get_worker().transfer_outgoing_bytes_total)


