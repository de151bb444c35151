"""The Assessment object: its one-table view, its NumPy view, its plot, and lazy third-party imports."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import rateopt as ro
from rateopt.exceptions import RateoptError

pd = pytest.importorskip("pandas")


def _assessment():
    rng = np.random.default_rng(0)
    n = 300
    y, p = rng.integers(0, 2, n), rng.integers(0, 2, n)
    g = np.array(["a"] * 150 + ["b"] * 140 + ["c"] * 10)
    return y, p, g, ro.assess(y, p, {"g": g}, metrics=["selection_rate", "tpr"])


def test_to_frame_and_to_dict_agree_with_the_views():
    y, p, g, a = _assessment()
    t = a.to_frame()
    assert list(t.index) == ["a", "b", "c", "overall"]
    assert t[("count", "")].tolist() == [150, 140, 10, 300]
    for m in a.metrics:
        np.testing.assert_array_equal(t[(m, "value")].to_numpy()[:3], a.by_group[m].to_numpy())
        assert t[(m, "value")].iloc[3] == a.overall[m]
        np.testing.assert_array_equal(t[(m, "insufficient")].to_numpy()[:3], a.insufficient[m].to_numpy())
    d = a.to_dict()
    assert d["keys"] == [("a",), ("b",), ("c",)] and d["names"] == ["g"]
    np.testing.assert_array_equal(d["values"]["tpr"], a.by_group["tpr"].to_numpy())
    assert d["overall"]["count"] == 300 and d["overall"]["selection_rate"] == p.mean()
    assert a.insufficient.loc["c"].all() and not a.insufficient.loc["a"].any()
    assert "3 cells x 2 metrics" in repr(a)


def test_plot_is_managed_by_pyplot():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, _, _, a = _assessment()
    fig = a.plot()
    try:
        assert fig.number in plt.get_fignums()  # plt.show() and sphinx-gallery see it
        assert [ax.get_title() for ax in fig.axes] == ["selection_rate", "tpr"]
        bars = fig.axes[1].patches
        assert [b.get_width() for b in bars] == pytest.approx(a.by_group["tpr"].tolist())
        assert bars[2].get_hatch() == "//" and not bars[0].get_hatch()  # c is flagged insufficient
    finally:
        plt.close(fig)
    with pytest.raises(RateoptError, match="not among"):
        a.plot("fpr")


def test_group_rates_is_computed_by_assess():
    y, p, g, a = _assessment()
    t = ro.group_rates(y, p, {"g": g}, as_frame=False)
    assert t["tpr"][1:].tolist() == a.by_group["tpr"].tolist()
    assert t["positive_rate"][1:].tolist() == a.by_group["selection_rate"].tolist()


def test_assess_modules_import_pandas_and_matplotlib_lazily():
    package = Path(ro.__file__).parent / "_assess"
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text())
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        names = {a.name.split(".")[0] for n in top if isinstance(n, ast.Import) for a in n.names}
        names |= {(n.module or "").split(".")[0] for n in top if isinstance(n, ast.ImportFrom) and not n.level}
        assert not names & {"pandas", "matplotlib", "sklearn"}, (path.name, names)
