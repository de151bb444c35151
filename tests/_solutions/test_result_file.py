"""A saved training result read back (``rateopt._solutions._result_file``, through ``rateopt.load``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import rateopt as ro
from rateopt.exceptions import RateoptError


def _trained_with_validation(n_iter=20):
    X, y, g = ro.make_groups_dataset(300)
    Xv, yv, gv = ro.make_groups_dataset(200, random_state=1)
    goal = ro.goals.demographic_parity("group", slack=0.05)
    v = ro.Problem(constraints=[goal], datasets=ro.Dataset(Xv, yv, groups={"group": gv}, name="validation"))
    problem = ro.Problem(constraints=[goal], datasets=ro.Dataset(X, y, groups={"group": g}))
    return ro.train(problem, n_iter=n_iter, validation=v)


def test_a_result_with_a_named_validation_dataset_round_trips(tmp_path):
    r = _trained_with_validation()
    # The validation constraints are named after their dataset, unlike the training ones.
    assert r.val_rate_map.constraint_names != r.rate_map.constraint_names
    assert all("validation:" in n for n in r.val_rate_map.constraint_names)
    r.save(tmp_path / "r.npz")
    back = ro.load(tmp_path / "r.npz")
    assert back.val_rate_map.constraint_names == r.val_rate_map.constraint_names
    assert back.rate_map.constraint_names == r.rate_map.constraint_names
    assert back.val_rate_map.const0 == r.val_rate_map.const0
    for name in ("c0", "C", "kappa"):
        np.testing.assert_array_equal(getattr(back.val_rate_map, name), getattr(r.val_rate_map, name), err_msg=name)
    for name in ("val_atom_rates", "val_objectives", "val_constraints"):
        np.testing.assert_array_equal(getattr(back, name), getattr(r, name), err_msg=name)
