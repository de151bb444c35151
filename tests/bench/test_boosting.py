"""The measures and the verdict rule of bench/boosting.py (issue 33 item 4), against brute-force counts.

The bench's frontier verdicts rest on three measures of expected decisions (the test disparity a
tolerance bounds, the pairwise gap, the training violation) and on the issue's counting rule; each
is checked here against a per-row Python loop, not against the NumPy code it checks.
"""

import pathlib

import numpy as np
import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "boosting.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


def _mod():
    return load_bench_script(SCRIPT, "bench_boosting")


def _loop_rates(p, y, g, rate):
    """{group or 'all': (rate, rows)} by a per-row loop."""
    sums, counts = {}, {}
    for pi, yi, gi in zip(p, y, g):
        if (rate == "tpr" and yi != 1) or (rate == "fpr" and yi != 0):
            continue
        for key in (gi, "all"):
            sums[key] = sums.get(key, 0.0) + pi
            counts[key] = counts.get(key, 0) + 1
    return {k: (sums[k] / counts[k], counts[k]) for k in sums}


def _data(seed, n=300, k=3):
    rng = np.random.default_rng(seed)
    return rng.random(n), (rng.random(n) < 0.4).astype(np.int64), rng.choice([f"g{i}" for i in range(k)], n)


@pytest.mark.parametrize("goal", ["equal_opportunity", "equalized_odds", "demographic_parity"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_disparity_gap_violation_equal_brute_force(goal, seed):
    mod = _mod()
    p, y, g = _data(seed)
    rates = {"equal_opportunity": ["tpr"], "equalized_odds": ["tpr", "fpr"], "demographic_parity": ["ppr"]}[goal]
    dev, gap, best = 0.0, 0.0, None
    for rate in rates:
        r = _loop_rates(p, y, g, rate)
        groups = [k for k in r if k != "all"]
        for k in groups:
            d = abs(r[k][0] - r["all"][0])
            if d > dev:
                dev, best = d, r[k]
        gap = max(gap, max(r[k][0] for k in groups) - min(r[k][0] for k in groups))
    got, se = mod.disparity(p, y, g, goal)
    assert got == pytest.approx(dev, abs=1e-12)
    assert se == pytest.approx(np.sqrt(best[0] * (1 - best[0]) / best[1]), rel=1e-12)
    assert mod.gap(p, y, g, goal) == pytest.approx(gap, abs=1e-12)
    for tol in (0.0, 0.05):
        assert mod.violation(p, y, g, goal, tol) == pytest.approx(dev - tol, abs=1e-12)


def test_coverage_violation_is_the_positive_rate_beyond_the_cap():
    mod = _mod()
    p, y, g = _data(3)
    assert mod.violation(p, y, g, "coverage_budget", 0.3) == pytest.approx(sum(p) / len(p) - 0.3, abs=1e-12)


def _pt(err, disp, tol=0.02, err_se=0.001, disp_se=0.002, system="x"):
    return {"test_error": err, "test_disparity": disp, "tolerance": tol, "test_error_se": err_se,
            "test_disparity_se": disp_se, "system": system}


def test_counting_rule_and_comparison():
    mod = _mod()
    # a point counts iff its disparity <= tolerance + 1 SE
    assert mod._counts(_pt(0.1, 0.022))
    assert not mod._counts(_pt(0.1, 0.0221))
    # within 1 SE (the larger of the two) counts as <=; better by >= 1 SE as a win
    assert mod._compare(_pt(0.1009, 0.0), _pt(0.1, 0.0))[1:] == (True, False)
    assert mod._compare(_pt(0.1011, 0.0), _pt(0.1, 0.0))[1:] == (False, False)
    assert mod._compare(_pt(0.1011, 0.0), _pt(0.1, 0.0, err_se=0.002))[1:] == (True, False)
    assert mod._compare(_pt(0.0989, 0.0), _pt(0.1, 0.0))[1:] == (True, True)
    # a comparator whose point does not count loses; rateopt's not counting fails the cell
    assert mod._compare(_pt(0.2, 0.0), _pt(0.1, 0.05))[1:] == (True, True)
    assert mod._compare(_pt(0.05, 0.05), _pt(0.1, 0.0))[1:] == (False, False)
    assert mod._compare(_pt(0.1, 0.0), None)[0] == "n/a"


def test_verdicts_pick_fairgbms_better_counting_setting():
    mod = _mod()
    base = {"dataset": "d", "goal": "equal_opportunity", "n_seeds": 1}
    summary = [dict(base, **_pt(0.100, 0.01, system="rateopt-lightgbm")),
               dict(base, **_pt(0.090, 0.10, system="fairgbm-mlr0.1")),   # better error, but does not count
               dict(base, **_pt(0.102, 0.01, system="fairgbm-mlr0.01")),
               dict(base, **_pt(0.150, 0.01, system="post-blind"))]
    (v,) = mod.verdicts(summary, ("fairgbm", "post-blind"))
    assert v["fairgbm"]["system"] == "fairgbm-mlr0.01" and v["fairgbm"]["le_within_se"] and v["fairgbm"]["better_by_se"]
    assert v["post-blind"]["better_by_se"]


def _brute_envelope(points, d, n_a=4001):
    """The least error of a mixture of two of ``points`` (pairs suffice: an LP with two constraints) whose
    interpolated disparity is at most ``d``, on a grid of mixing weights."""
    best = np.inf
    a = np.linspace(0.0, 1.0, n_a)
    for d1, e1 in points:
        for d2, e2 in points:
            dd, ee = a * d1 + (1 - a) * d2, a * e1 + (1 - a) * e2
            ok = dd <= d + 1e-12
            if ok.any():
                best = min(best, float(ee[ok].min()))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_envelope_is_the_least_error_of_two_point_mixtures(seed):
    mod = _mod()
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 8))
    points = list(zip(rng.random(n) * 0.2, 0.1 + rng.random(n) * 0.1))
    curve = mod.frontier_curve([_pt(e, d) for d, e in points], envelope=True)
    dmin = min(d for d, _ in points)
    for d in np.linspace(0.0, 0.3, 61):
        got = mod.curve_at(curve, d)
        if d < dmin:
            assert got is None
            continue
        ref = _brute_envelope(points, d)
        # the grid of mixing weights finds the optimum up to its spacing (slope <= 0.1 / tiny disparity steps)
        assert got[0] <= ref + 1e-12 and got[0] >= ref - 2e-3, (d, got, ref)
        assert all(got[0] <= e + 1e-12 for dp, e in points if dp <= d)  # never above a point to its left


def test_envelope_points_are_attained_by_mixing_classifiers():
    """A point of the envelope between two vertices: the randomized mixture of the two classifiers has that
    test error exactly and a test disparity at most that abscissa (recounted by the per-row loop)."""
    mod = _mod()
    rng = np.random.default_rng(7)
    n = 400
    y, g = (rng.random(n) < 0.4).astype(np.int64), rng.choice(["a", "b", "c"], n)
    clfs = [np.clip(rng.random(n) + shift * (g == "a"), 0, 1) for shift in (0.0, 0.3, -0.3, 0.6)]
    pts = []
    for p in clfs:
        r = _loop_rates(p, y, g, "ppr")
        d = max(abs(r[k][0] - r["all"][0]) for k in r if k != "all")
        pts.append((p, d, float(np.mean(np.abs(p - y)))))
    curve = mod.frontier_curve([_pt(e, d) for _, d, e in pts], envelope=True)
    verts = curve[0]
    assert len(verts) >= 2
    for (d0, e0, _), (d1, e1, _) in zip(verts, verts[1:]):
        p0 = next(p for p, d, e in pts if (d, e) == (d0, e0))
        p1 = next(p for p, d, e in pts if (d, e) == (d1, e1))
        for a in (0.25, 0.5, 0.8):
            mix = (1 - a) * p0 + a * p1
            r = _loop_rates(mix, y, g, "ppr")
            d_mix = max(abs(r[k][0] - r["all"][0]) for k in r if k != "all")
            e_at = mod.curve_at(curve, (1 - a) * d0 + a * d1)[0]
            assert float(np.mean(np.abs(mix - y))) == pytest.approx(e_at, abs=1e-12)
            assert d_mix <= (1 - a) * d0 + a * d1 + 1e-12


def test_raw_interpolation_and_the_interpolated_verdicts():
    mod = _mod()
    pts = [(0.05, 0.12), (0.01, 0.15), (0.03, 0.11), (0.08, 0.10)]
    raw = mod.frontier_curve([_pt(e, d) for d, e in pts], envelope=False)
    xs, ys = zip(*sorted(pts))
    for d in np.linspace(0.01, 0.08, 15):
        assert mod.curve_at(raw, d)[0] == pytest.approx(np.interp(d, xs, ys), abs=1e-12)
    assert mod.curve_at(raw, 0.0) is None and mod.curve_at(raw, 0.09) is None
    # the envelope drops the point above the hull (0.05, 0.12) and stays flat after the least error
    env = mod.frontier_curve([_pt(e, d) for d, e in pts], envelope=True)
    assert [v[:2] for v in env[0]] == [(0.01, 0.15), (0.03, 0.11), (0.08, 0.10)]
    assert mod.curve_at(env, 0.2)[0] == pytest.approx(0.10)
    # verdicts at d = tolerance: rateopt 0.11 at 0.03 against a comparator of 0.12 there (SE 0.001: a win);
    # at 0.01 the comparator starts at 0.02: outside, not counted
    base = {"dataset": "d", "goal": "equal_opportunity", "n_seeds": 1}
    summary = [dict(base, **_pt(e, d, tol=t, system="rateopt-lightgbm")) for (d, e), t in zip(
        [(0.01, 0.15), (0.03, 0.11)], (0.01, 0.03))]
    summary += [dict(base, **_pt(e, d, tol=t, system="post-blind")) for (d, e), t in zip(
        [(0.02, 0.13), (0.04, 0.11)], (0.01, 0.03))]
    ivs, ranges = mod.interpolated_verdicts(summary, ("post-blind",))
    by_tol = {v["tolerance"]: v for v in ivs}
    assert by_tol[0.01]["post-blind"]["le_within_se"] is None
    assert by_tol[0.03]["post-blind"]["better_by_se"] and by_tol[0.03]["post-blind"]["error"] == pytest.approx(0.12)
    assert mod.interpolated_summary(ivs, ("post-blind",))["post-blind"] == {
        "comparable": 1, "le_within_se": 1, "better_by_se": 1}


def test_simulated_disparity_of_two_groups_is_a_scaled_half_normal():
    """Two groups in the same proportions on both splits: group 1's test deviation is ``w2 D`` and group 2's
    ``-w1 D``, with ``D`` the difference of the groups' training noises minus that of their test noises, so
    the disparity is ``max(w1, w2) |D|`` (median 0.6745 sd), the smaller group's deviation, and its SE that of
    the smaller group's rate."""
    mod = _mod()
    n_tr, n_te, r = np.array([700, 2100]), np.array([300, 900]), 0.3
    var = r * (1 - r)
    sd = np.sqrt(var * (1 / n_tr + 1 / n_te).sum())
    d, se = mod.simulated_disparity([n_tr], [n_te], [r], [np.zeros(2)], 40000, np.random.default_rng(0))
    assert np.median(d) == pytest.approx(0.75 * sd * 0.6745, rel=0.03)
    assert np.allclose(se, np.sqrt(var / 300))
    # with two rates the disparity is the larger of the two rates' draws
    d2, _ = mod.simulated_disparity([n_tr, n_tr], [n_te, n_te], [r, r], [np.zeros(2)] * 2, 40000,
                                    np.random.default_rng(1))
    # the median of the larger of two independent half-normals: sd * Phi^-1((1 + sqrt(0.5)) / 2) = 1.0383 sd
    assert np.median(d2) == pytest.approx(0.75 * sd * 1.0383, rel=0.03)


def _row(system, dataset="d", seed=0, goal="equal_opportunity", tol=0.02, n_train=70, n_test=30, rounds=100):
    return {"system": system, "dataset": dataset, "seed": seed, "goal": goal, "tolerance": tol, "n_train": n_train,
            "n_test": n_test, "rounds": rounds, "test_gap": None}


def test_reuse_rows_takes_the_recorded_rows_of_the_splits_that_ran():
    mod = _mod()
    ran = [_row("lightgbm", tol=t, seed=s) for t in (0.0, 0.02) for s in (0, 1)]
    recorded = ([_row("fairgbm-mlr0.1", tol=t, seed=s) for t in (0.0, 0.02, 0.05) for s in (0, 1, 2)]
                + [_row("post-aware", tol=0.02, seed=0), _row("fairgbm-mlr0.1", dataset="other", tol=0.02)])
    got = mod.reuse_rows(recorded, ran, ["fairgbm-mlr0.1"])
    # by enumeration: the reused system, on the seeds and cells that ran, nothing else
    want = {("fairgbm-mlr0.1", "d", s, t) for s in (0, 1) for t in (0.0, 0.02)}
    assert {(r["system"], r["dataset"], r["seed"], r["tolerance"]) for r in got} == want
    assert len(got) == len(want) and all(r["reused"] and np.isnan(r["test_gap"]) for r in got)


def test_reuse_rows_refuses_another_split_or_a_missing_system():
    mod = _mod()
    ran = [_row("lightgbm")]
    with pytest.raises(SystemExit, match="train, test, trees"):
        mod.reuse_rows([_row("fairgbm-mlr0.1", n_train=71)], ran, ["fairgbm-mlr0.1"])
    with pytest.raises(SystemExit, match="train, test, trees"):
        mod.reuse_rows([_row("fairgbm-mlr0.1", rounds=50)], ran, ["fairgbm-mlr0.1"])
    with pytest.raises(SystemExit, match="no recorded eg-lightgbm"):
        mod.reuse_rows([_row("fairgbm-mlr0.1")], ran, ["fairgbm-mlr0.1", "eg-lightgbm"])


def test_cpu_against_pairs_each_split_and_takes_medians():
    mod = _mod()
    rows = [dict(_row("rateopt-lightgbm", seed=s), cpu_s=c) for s, c in ((0, 2.0), (1, 4.0), (2, 3.0))]
    rows += [dict(_row("eg-lightgbm", seed=s), cpu_s=c) for s, c in ((0, 300.0), (1, 200.0))]  # seed 2: no EG row
    (cell,), smallest = mod.cpu_against(rows, "eg-lightgbm")
    assert cell["seeds"] == [0, 1] and cell["per_seed_ratios"] == [150.0, 50.0] and smallest == 50.0
    assert cell["rateopt-lightgbm_cpu_s"] == 3.0 and cell["eg-lightgbm_cpu_s"] == 250.0  # medians of seeds 0, 1
    assert cell["ratio_of_medians"] == 250.0 / 3.0


def test_collapse_grid_counts_each_cell():
    mod = _mod()
    runs = [{"system": "rateopt-xgboost", "dataset": "d", "goal": "g", "tolerance": t, "seed": s,
             "excess_loss": e, "collapsed": e > 0.02}
            for t, es in ((0.0, (0.01, 0.03, -0.002)), (0.1, (0.0, 0.005))) for s, e in enumerate(es)]
    runs.append(dict(runs[0], system="fairgbm-mlr0.1", excess_loss=0.5, collapsed=True))
    table = mod.collapse_grid(runs, "rateopt-xgboost")
    assert table.splitlines()[-1] == "| d | g | 1/3, +0.0300 | 0/2, +0.0050 |"


def test_collapse_merge_joins_pieces_and_refuses_a_run_twice(tmp_path):
    import json

    mod = _mod()

    def piece(seeds, name):
        runs = [{"system": "rateopt-xgboost", "dataset": "adult-sex", "goal": "equal_opportunity", "tolerance": 0.0,
                 "seed": s, "excess_loss": 0.03 if s == 1 else 0.001, "collapsed": s == 1, "train_violation": 0.0}
                for s in seeds]
        path = tmp_path / name
        path.write_text(json.dumps({"rounds": 100, "loadavg": [1.0, 1.0, 1.0], "runs": runs}))
        return str(path)

    a, b = piece([0, 1], "a.json"), piece([2], "b.json")
    out = tmp_path / "m.json"
    mod.main(["--collapse-merge", f"{a},{b}", "--out", str(out)])
    merged = json.loads(out.read_text())
    assert merged["counts"] == {"rateopt-xgboost": 1} and merged["seeds"] == {"adult-sex": [0, 1, 2]}
    assert "| adult-sex | equal_opportunity | 1/3, +0.0300 |" in out.with_suffix(".md").read_text()
    with pytest.raises(SystemExit):
        mod.main(["--collapse-merge", f"{a},{a}", "--out", str(tmp_path / "n.json")])


def test_xgboost_acs_equalized_odds_at_zero_seed_7_does_not_collapse():
    """Issue 33's XGBoost collapse, reproduced on the bench's own split (ACSEmployment race, 42,000 training
    rows, equalized odds at tolerance 0, seed 7, 100 trees): at main's Hessian (``|u_j|``, before the curvature
    coefficients) the default solution's training error was 0.256 against 0.182 for group-aware
    post-processing of plain LightGBM (the issue's reference), so the thresholded solution lost 7 pp on the
    training rows. Checked here on the training rows, against that reference: within the issue's 2 pp, and
    the goal met (training violation <= 1e-3)."""
    pytest.importorskip("xgboost")
    pytest.importorskip("lightgbm")
    import importlib.util

    if importlib.util.find_spec("nannyml") is None:
        pytest.skip("ACSEmployment ships in the nannyml wheel (DATASETS.md)")
    import rateopt

    B = _mod()
    X, y, g, col = B._data("acs-race")
    tr, _ = B._split(X.shape[0], 7, B.ACS_ROWS)
    X_tr, y_tr, g_tr = X[tr], y[tr], g[tr]
    res = B.train_rateopt("xgboost", X_tr, y_tr, g_tr, col, "equalized_odds", 0.0, 100, 7)
    p = res.solution().predict_proba(X_tr)[:, 1]
    plain = B.fit_lightgbm(X_tr, y_tr, 100, 7)
    s_tr = plain.predict(X_tr, raw_score=True)
    tc = rateopt.ThresholdClassifier(goals=B._goal_constraints("equalized_odds", col, 0.0), prefit=True)
    tc.fit(s_tr, y_tr, groups={col: g_tr})
    post = tc.predict_proba(s_tr, groups={col: g_tr})[:, 1]
    err, post_err = float(np.mean(np.abs(p - y_tr))), float(np.mean(np.abs(post - y_tr)))
    assert err <= post_err + 0.02, (err, post_err)
    assert B.violation(p, y_tr, g_tr, "equalized_odds", 0.0) <= 1e-3
