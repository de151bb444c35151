"""bench/postprocessing_processes.py end to end with its worker replaced: per-process ratios of medians, their
median and range per rateopt, failed processes left out, and the two rateopts' agreement, all counted by hand."""

import json
import pathlib

import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "postprocessing_processes.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


def _fake_worker(script_results):
    """A ``run_worker`` stand-in that hands out the given raw worker records in call order."""
    calls = []

    def run_worker(pythonpath, spec, timeout, mem_limit_gib=None):
        calls.append((str(pythonpath), spec["case"]))
        return dict(script_results[len(calls) - 1])

    return run_worker, calls


def _ok(fit, argsort, p, cpu_fit=None, cpu_argsort=None):
    rec = {"status": "ok", "samples": {"fit": fit, "argsort": argsort}, "loadavg_before": 1.0,
           "loadavg_after": 1.5, "p": p}
    if cpu_fit is not None:
        rec["cpu_samples"] = {"fit": cpu_fit, "argsort": cpu_argsort}
    return rec


def test_census_case_summarizes_each_process_ratio_of_medians(tmp_path, capsys):
    mod = load_bench_script(SCRIPT, "bench_postprocessing_processes")
    # order of calls: process 1 this, process 1 reference, process 2 this, process 2 reference, ...
    records = [
        _ok([0.30, 0.10, 0.20], [0.05, 0.05, 0.04], [0.1, 0.9], [0.3, 0.1, 0.2], [0.05, 0.05, 0.05]),  # 0.2/0.05=4
        _ok([0.60, 0.60, 0.60], [0.10, 0.20, 0.10], [0.1, 0.8], [0.6, 0.6, 0.6], [0.1, 0.1, 0.1]),     # 0.6/0.1=6
        _ok([0.25, 0.25, 0.25], [0.10, 0.10, 0.10], [0.1, 0.9], [0.2, 0.2, 0.2], [0.1, 0.1, 0.1]),     # 2.5
        {"status": "failed: boom"},
        _ok([0.09, 0.09, 0.09], [0.03, 0.02, 0.03], [0.1, 0.9], [0.1, 0.1, 0.1], [0.02, 0.02, 0.02]),  # 3
        _ok([0.50, 0.40, 0.45], [0.10, 0.10, 0.10], [0.4, 0.8], [0.5, 0.4, 0.5], [0.1, 0.1, 0.1]),     # 4.5
    ]
    fake, calls = _fake_worker(records)
    mod.run_worker = fake
    out = tmp_path / "pp.json"
    mod.main(["--quick", "--json", "--case", "census", "--processes", "3", "--reference", str(tmp_path),
              "--out", str(out)])
    assert [c[0] for c in calls] == [str(ROOT / "python"), str(tmp_path)] * 3
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result == json.loads(out.read_text())
    this = result["summary"]["this"]["fit / argsort"]
    assert this["each"] == pytest.approx([4.0, 2.5, 3.0])
    assert (this["median"], this["min"], this["max"]) == pytest.approx((3.0, 2.5, 4.0))
    ref = result["summary"]["reference"]["fit / argsort"]
    assert ref["each"] == pytest.approx([6.0, 4.5])  # the failed second process is left out
    assert ref["median"] == pytest.approx(5.25)
    # CPU ratios of medians: this 0.2/0.05, 0.2/0.1, 0.1/0.02
    assert result["summary"]["this"]["fit / argsort (CPU)"]["each"] == pytest.approx([4.0, 2.0, 5.0])
    assert result["runs"]["reference"][1]["status"] == "failed: boom"
    # agreement over the pairs that both ran: |0.9-0.8| in process 1, |0.1-0.4| in process 3
    assert result["agreement"]["max_abs_p_diff"] == pytest.approx(0.3)
    assert all("p" not in r for rs in result["runs"].values() for r in rs)
    md = out.with_suffix(".md").read_text()
    assert "median 3.00 (range 2.50-4.00)" in md and "failed: boom" in md


def test_thresholded_case_ratio_is_thresholded_over_plain(tmp_path, capsys):
    mod = load_bench_script(SCRIPT, "bench_postprocessing_processes")
    rec = {"status": "ok", "samples": {"thresholded": [0.3, 0.5, 0.4], "plain": [0.2, 0.25, 0.2]},
           "loadavg_before": 0.5, "loadavg_after": 0.7}
    fake, calls = _fake_worker([rec])
    mod.run_worker = fake
    mod.main(["--quick", "--json", "--case", "thresholded", "--processes", "1", "--out", str(tmp_path / "t.json")])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert calls == [(str(ROOT / "python"), "thresholded")]
    assert result["summary"]["this"]["thresholded / plain"]["median"] == pytest.approx(0.4 / 0.2)
    assert result["agreement"] is None and result["groups"] == 6
