"""bench/import_time.py on one round: what each statement loads, and the medians and ratios it reports.

Timings are not asserted (the machine is shared); what is checked is that the
fresh processes import the rateopt under test, that the probe of slow modules
sees scikit-learn where it is imported and nothing after ``import rateopt``, and
that the reported medians and ratios are those of the recorded samples
(recomputed with :func:`statistics.median`).
"""

import json
import os
import pathlib
import statistics
import sys

import pytest
from _bench_scripts import load_bench_script

import rateopt

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "import_time.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


@pytest.fixture(scope="module")
def bench():
    yield load_bench_script(SCRIPT, "import_time")
    sys.modules.pop("import_time", None)


def test_one_round_reports_what_each_statement_loads(bench, tmp_path, capsys):
    here = os.path.dirname(os.path.dirname(os.path.abspath(rateopt.__file__)))
    assert bench.main(["--repeats", "2", "--json", "--out", str(tmp_path / "it.json"), "--rateopt-path", here]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result == json.loads((tmp_path / "it.json").read_text())
    assert os.path.realpath(result["rateopt_imported_from"]) == os.path.realpath(rateopt.__file__)
    cases = {c["case"]: c for c in result["cases"]}
    assert set(cases) == {"numpy + scipy.sparse", "rateopt", "rateopt + estimator", "sklearn.base"}
    assert cases["rateopt"]["heavy_modules"] == []
    assert "sklearn" in cases["sklearn.base"]["heavy_modules"]
    assert "sklearn" in cases["rateopt + estimator"]["heavy_modules"]
    base = statistics.median(cases["numpy + scipy.sparse"]["samples_s"])
    for c in cases.values():
        assert len(c["samples_s"]) == 2
        assert c["median_s"] == pytest.approx(statistics.median(c["samples_s"]), rel=1e-12)
        assert c["ratio_to_baseline"] == pytest.approx(c["median_s"] / base, rel=1e-12)
    assert result["target"]["ratio"] == cases["rateopt"]["ratio_to_baseline"]
    assert result["target"]["met"] == (result["target"]["ratio"] <= 2.0)


def test_a_folder_without_rateopt_is_refused(bench, tmp_path):
    with pytest.raises(SystemExit, match="holds no rateopt package"):
        bench.rateopt_dir(str(tmp_path))
