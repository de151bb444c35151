"""bench/threshold_rules_cost.py end to end with its per-tree worker replaced: the medians over every timed stage,
the reference / this ratios, the digest check and the outputs, counted by hand."""

import json
import pathlib

import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "threshold_rules_cost.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


def test_medians_ratios_and_digests(tmp_path, capsys):
    mod = load_bench_script(SCRIPT, "bench_threshold_rules_cost")
    # per (fit, tree): one worker per repeat, each with its timed stages' CPU seconds
    stages = {("adult_tpr4", "this"): [[0.010, 0.030], [0.020, 0.040]],
              ("adult_tpr4", "reference"): [[0.030, 0.030], [0.060, 0.050]],
              ("adult_tpr4_n1000", "this"): [[0.100, 0.100], [0.100, 0.300]],
              ("adult_tpr4_n1000", "reference"): [[0.200, 0.200], [0.100, 0.200]]}
    digests = {"adult_tpr4": {"this": "aa", "reference": "aa"}, "adult_tpr4_n1000": {"this": "bb", "reference": "cc"}}
    calls = []

    def run(tree, job):
        tree_name = "this" if tree == mod.THIS_TREE else "reference"
        k = sum(1 for c in calls if c[:2] == (job["fit"], tree_name))
        calls.append((job["fit"], tree_name, job["timed"], job["threads"]))
        cpu = stages[(job["fit"], tree_name)][k]
        return {"cpu_s": cpu, "wall_s": [2 * x for x in cpu], "n_rules": 6, "digest": digests[job["fit"]][tree_name]}

    mod._run = run
    out = tmp_path / "rules.json"
    assert mod.main(["--json", "--repeats", "2", "--timed", "2", "--threads", "1", "--reference", str(tmp_path),
                     "--out", str(out)]) == 0
    # interleaved: each repeat runs every fit in both trees, this tree first
    assert calls[:4] == [("adult_tpr4", "this", 2, 1), ("adult_tpr4", "reference", 2, 1),
                         ("adult_tpr4_n1000", "this", 2, 1), ("adult_tpr4_n1000", "reference", 2, 1)]
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res == json.loads(out.read_text())
    r = res["results"]
    # medians over all four stages: this 0.010, 0.020, 0.030, 0.040 -> 25 ms; reference 30, 30, 50, 60 -> 40 ms
    assert r["adult_tpr4"]["this"]["cpu_ms"] == pytest.approx(25.0)
    assert r["adult_tpr4"]["reference"]["cpu_ms"] == pytest.approx(40.0)
    assert r["adult_tpr4"]["this"]["wall_ms"] == pytest.approx(50.0)
    assert res["ratios"]["adult_tpr4 CPU"] == pytest.approx(40.0 / 25.0)
    assert res["ratios"]["adult_tpr4_n1000 CPU"] == pytest.approx(200.0 / 100.0)
    assert res["identical_results"] == {"adult_tpr4": True, "adult_tpr4_n1000": False}
    assert "adult_tpr4 CPU: 1.60" in out.with_suffix(".md").read_text()
