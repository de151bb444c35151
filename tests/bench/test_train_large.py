"""bench/train_large.py's huge case: the generator and a scaled-down end-to-end run.

The 10^7-row run itself is a benchmark (bench/results/train_large_huge.*); this
test checks, on small sizes, that the generator builds the CSR matrix it
describes in the arrays it allocated (float32 values, int32 indices, one
column per stratum, the group's one-hot column first), that its labels follow
the stated model, and that the case runs end to end and reports a fit whose
independently checked violation matches the training result's.
"""

import json
import pathlib
import sys

import numpy as np
import pytest
from _bench_scripts import load_bench_script

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "train_large.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not run from a source checkout (no bench/)")


@pytest.fixture(scope="module")
def bench():
    yield load_bench_script(SCRIPT, "train_large")
    sys.modules.pop("train_large", None)


def test_generator_builds_the_described_csr(bench):
    n, k, stratum, n_groups = 3000, 6, 7, 5
    X, y, group, w, beta = bench.make_huge_csr(n, nnz_per_row=k, n_groups=n_groups, stratum=stratum, seed=3,
                                               block_rows=512)  # several blocks, the last one partial
    assert X.shape == (n, k * stratum) and X.nnz == n * k
    assert X.data.dtype == np.float32 and X.indices.dtype == np.int32 and X.indptr.dtype == np.int32
    np.testing.assert_array_equal(X.indptr, np.arange(0, n * k + 1, k))
    cols = X.indices.reshape(n, k)
    vals = X.data.reshape(n, k)
    np.testing.assert_array_equal(cols // stratum, np.broadcast_to(np.arange(k), (n, k)))  # one per stratum
    np.testing.assert_array_equal(cols[:, 0], group)  # the group's one-hot column, value 1
    np.testing.assert_array_equal(vals[:, 0], 1.0)
    assert X.has_canonical_format or np.all(np.diff(cols, axis=1) > 0)
    assert set(np.unique(group)) == set(range(n_groups)) and set(np.unique(y)) == {0, 1}
    # Labels: y = [x . w + beta_group + 0.5 noise > 0], recomputed from the dense matrix.
    clean = X.toarray().astype(np.float64) @ w + beta[group]
    assert np.mean((clean > 0) == (y == 1)) > 0.8
    base = np.array([y[group == g].mean() for g in range(n_groups)])
    assert np.all(np.diff(base) > 0.05)  # base rates differ, in the order of beta


def test_generator_refuses_more_values_than_int32_indexes(bench):
    with pytest.raises(ValueError, match="int32"):
        bench.make_huge_csr(2**31 // 50 + 1)


def test_huge_case_runs_scaled_down(bench, tmp_path, capsys):
    bench.main(["--case", "huge", "--n-rows", "20000", "--n-iter", "40", "--batch-size", "2000",
                "--record-every", "10", "--json", "--results-dir", str(tmp_path)])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    saved = json.loads((tmp_path / "train_large_huge_20000.json").read_text())
    assert saved["n_samples"] == out["n_samples"] == 20000 and out["X_read_in_place"] is True
    assert out["n_constraints"] == 10 and out["epochs"] == 4.0 and out["n_records"] == 5
    assert out["data_gb"] == pytest.approx((20000 * 50 * 8 + 20001 * 4) / 1e9)
    assert out["train_max_violation_checked"] == pytest.approx(out["train_max_violation"], abs=1e-9)
    assert out["train_error_checked"] == pytest.approx(out["train_error"], abs=1e-9)
    assert out["peak_rss_gb"] >= out["rss_by_stage_gb"]["generated"]["VmRSS"] > 0
    assert out["unconstrained_max_violation"] > 0.05  # the groups' base rates differ: parity binds


def test_huge_case_has_no_quick_form(bench):
    with pytest.raises(SystemExit):
        bench.main(["--case", "huge", "--quick"])
