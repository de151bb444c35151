"""The README's main job: the demo trains a fairer classifier than the unconstrained one."""

import io

import numpy as np

from rateopt._demo import make_groups_dataset, run_demo


def test_generated_dataset_is_deterministic_and_shaped():
    X, y, g = make_groups_dataset(1000, random_state=3)
    X2, y2, g2 = make_groups_dataset(1000, random_state=3)
    assert X.shape == (1000, 3) and y.shape == (1000,) and g.shape == (1000,)
    assert np.array_equal(X, X2) and np.array_equal(y, y2) and np.array_equal(g, g2)
    assert set(np.unique(g)) == {"A", "B"} and set(np.unique(y)) == {0, 1}


def test_demo_meets_equal_opportunity_that_the_unconstrained_model_misses():
    out = io.StringIO()
    res = run_demo(8000, n_iter=600, file=out)
    X, y, g = make_groups_dataset(8000)

    def shortfall(rows):
        tpr = {r[0]: r[2] for r in rows}
        return max(tpr["all"] - tpr["A"], tpr["all"] - tpr["B"])

    assert shortfall(res["unconstrained"]) > 0.08
    assert shortfall(res["constrained"]) <= 0.05 + 1e-6
    assert "constrained" in out.getvalue()
