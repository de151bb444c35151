"""Exact bin edges for neighbouring and extreme scores, and rule files that cannot be read wrongly (issue 32, 4-5).

Edges are checked against the definition, independently of how they are
computed: a score ``s`` falls in the bin of the last edge ``<= s``, so two
distinct scores ``a < b`` are separated iff some edge ``e`` has
``a < e <= b``. Tampered files are built from a valid saved file by
rewriting one member of the ``.npz`` (the metadata's JSON text, or an
array's ``.npy`` bytes); each must be refused with one line naming the file
and the field.
"""

import io
import json
import zipfile

import numpy as np
import pytest
import rateopt as ro
from rateopt._postprocess._bins import bin_chains
from rateopt.exceptions import RateoptError

TINY = 5e-324  # the smallest subnormal double
NEIGHBOURS = [
    (1.0, np.nextafter(1.0, 2.0)),
    (1.0 - 2.0 ** -52, 1.0 - 2.0 ** -53),
    (0.0, TINY),
    (-TINY, 0.0),
    (-1.5e308, 1.5e308),
    (-np.finfo(float).max, np.finfo(float).max),
    (np.nextafter(np.finfo(float).max, 0.0), np.finfo(float).max),
    (-np.finfo(float).max, np.nextafter(-np.finfo(float).max, 0.0)),
    (1e300, 1.5e308),
]


def bin_edges(scores):
    """The lower edges of one chain's bins, one bin per distinct score (the live binning, unmerged)."""
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[0]
    return bin_chains(scores, np.zeros(n, dtype=np.int64), 1, np.zeros((n, 0), dtype=np.int64), np.zeros((n, 0)), 0,
                      merge=False).edges


def _bin(edges, s):
    """The bin of score ``s``: the last edge ``<= s`` (the rule's own reading, as a Python loop)."""
    return max([i for i, e in enumerate(edges) if e <= s], default=0)


@pytest.mark.parametrize("a, b", NEIGHBOURS)
def test_an_edge_separates_neighbouring_and_extreme_scores(a, b):
    assert a < b
    edges = bin_edges(np.array([b, a, a, b]))
    assert edges.shape == (2,) and np.all(np.isfinite(edges))
    assert edges[0] == a and a < edges[1] <= b
    assert _bin(edges, a) == 0 and _bin(edges, b) == 1


def test_the_midpoint_is_kept_where_a_double_lies_between():
    # hand-computed midpoints: round-off of a recomputed score stays in its bin
    assert bin_edges(np.array([0.0, 1.0, 3.0])).tolist() == [0.0, 0.5, 2.0]
    assert bin_edges(np.array([1.0, 1.0 + 2.0 ** -51])).tolist() == [1.0, 1.0 + 2.0 ** -52]


def test_every_distinct_score_gets_its_own_bin_among_runs_of_neighbouring_doubles():
    rng = np.random.default_rng(3)
    base = rng.normal(size=40) * 10.0 ** rng.integers(-300, 300, 40)
    scores = np.concatenate([base, np.nextafter(base, np.inf), np.nextafter(np.nextafter(base, np.inf), np.inf),
                             [0.0, TINY, 2 * TINY, -TINY, 1.5e308, -1.5e308]])
    edges = bin_edges(scores)
    distinct = np.unique(scores)
    assert np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0)
    bins = np.searchsorted(edges, distinct, side="right") - 1
    assert bins.tolist() == list(range(distinct.size))  # one bin per distinct score, in order


@pytest.mark.parametrize("lo, hi", [(1.0, np.nextafter(1.0, 2.0)), (1.0 - 2.0 ** -52, 1.0 - 2.0 ** -53),
                                    (0.0, TINY), (-1.5e308, 1.5e308)])
def test_a_separable_sample_gets_error_zero_and_its_rule_saves_and_loads(tmp_path, lo, hi):
    y = np.tile([0, 1], 50)
    s = np.where(y == 1, hi, lo)
    tc = ro.ThresholdClassifier().fit(s, y)
    assert tc.training_.objective == 0.0  # the error of "positive iff s >= hi", which separates the sample
    assert int(np.sum(tc.predict(s) != y)) == 0
    tc.save(tmp_path / "r.npz")
    back = ro.load(tmp_path / "r.npz")
    assert back.rule_.edges.tobytes() == tc.rule_.edges.tobytes()
    assert int(np.sum(back.predict(s) != y)) == 0
    np.testing.assert_array_equal(back.predict_proba(s), tc.predict_proba(s))


# --------------------------------------------------------------------------- tampered files


def _members(path):
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def _write(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _npy(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def _meta_text(members):
    """The metadata's JSON text (the ``.npy`` member of uint8 bytes)."""
    return bytes(np.load(io.BytesIO(members["__rateopt_metadata__.npy"]))).decode()


def _with_meta(src, dst, edit_text):
    members = _members(src)
    text = edit_text(_meta_text(members))
    members["__rateopt_metadata__.npy"] = _npy(np.frombuffer(text.encode(), dtype=np.uint8))
    return _write(dst, members)


def _with_field(src, dst, key, value):
    """``src`` with one metadata field's JSON text replaced (``value`` is JSON text, e.g. ``NaN``)."""
    def edit(text):
        meta = json.loads(text)
        meta[key] = "@@"
        return json.dumps(meta).replace('"@@"', value)
    return _with_meta(src, dst, edit)


def _refused(path, field):
    with pytest.raises(RateoptError, match=field) as info:
        ro.load(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)
    return str(info.value)


@pytest.fixture(scope="module")
def two_class_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 400
    g = np.where(rng.random(n) < 0.5, "A", "B")
    y = rng.integers(0, 2, n)
    s = y + rng.normal(size=n)
    path = tmp_path_factory.mktemp("rules") / "two.npz"
    ro.ThresholdClassifier().fit(s, y, groups={"g": g}).save(path)
    return path


@pytest.fixture(scope="module")
def k_class_file(tmp_path_factory):
    rng = np.random.default_rng(1)
    n = 300
    y = rng.integers(0, 3, n)
    P = rng.dirichlet(np.ones(3), n)
    path = tmp_path_factory.mktemp("rules") / "k.npz"
    ro.ThresholdClassifier().fit(P, y).save(path)
    return path


def test_the_untampered_files_load(two_class_file, k_class_file):
    assert ro.load(two_class_file).classes_.tolist() == [0, 1]
    assert ro.load(k_class_file).classes_.tolist() == [0, 1, 2]


def test_a_uint64_rule_start_that_would_wrap_is_refused(two_class_file, tmp_path):
    members = _members(two_class_file)
    n = int(np.load(io.BytesIO(members["rule_start.npy"]))[-1])
    # every other check passes: edges ascend and the table does not decrease over the whole array, so
    # np.diff([0, 2**63, n]) in uint64 wraps to two positive counts and cell B would get an empty slice
    members["rule_start.npy"] = _npy(np.array([0, 2 ** 63, n], dtype=np.uint64))
    members["rule_edges.npy"] = _npy(np.arange(n, dtype=np.float64))
    members["rule_table.npy"] = _npy(np.linspace(0.0, 1.0, n))
    _refused(_write(tmp_path / "wrap.npz", members), "'rule_start'")
    # the same arrays with an honest start load: the refusal is the start's
    members["rule_start.npy"] = _npy(np.array([0, 1, n], dtype=np.uint64))
    assert ro.load(_write(tmp_path / "ok.npz", members)).rule_.start.tolist() == [0, 1, n]


@pytest.mark.parametrize("cells", ['[["A"], ["A"]]', '[["B"], ["B"]]'])
def test_duplicate_cells_are_refused(two_class_file, tmp_path, cells):
    _refused(_with_field(two_class_file, tmp_path / "dup.npz", "cells", cells), "'cells'")


@pytest.mark.parametrize("classes", ['["1", 1]', "[1, 0]", "[0, 1.0]", "[true, 1]", "[null, 1]", "[NaN, 1]",
                                     "[0, Infinity]", '["0", "1"]'])
def test_two_class_lists_that_collapse_change_type_or_invert_are_refused(two_class_file, tmp_path, classes):
    bad = _with_field(two_class_file, tmp_path / "classes.npz", "classes", classes)
    if classes == '["0", "1"]':  # one type, ascending: labels the user chose to write as strings load as such
        assert ro.load(bad).classes_.tolist() == ["0", "1"]
    else:
        _refused(bad, "'classes'")


@pytest.mark.parametrize("classes", ['["1", 1, 2]', "[1, 1.0, 2]", "[true, 1, 2]", '[null, "b", "c"]',
                                     '["a", 1, 2]', "[0, 2, 1]", "[2, 1, 0]", "[0, 1, NaN]", "[0, 1, -Infinity]"])
def test_k_class_lists_that_collapse_change_type_or_reorder_are_refused(k_class_file, tmp_path, classes):
    _refused(_with_field(k_class_file, tmp_path / "classes.npz", "classes", classes), "'classes'")


def test_inverted_classes_would_flip_every_decision(two_class_file, tmp_path):
    # why [1, 0] must be refused: read as labels, it maps position 1 (positive) to the label 0
    tc = ro.load(two_class_file)
    s = np.linspace(-3, 4, 50)
    g = {"g": np.where(np.arange(50) % 2 == 0, "A", "B")}
    pred = tc.predict(s, groups=g, row_key=np.arange(50))
    assert set(pred.tolist()) == {0, 1}
    msg = _refused(_with_field(two_class_file, tmp_path / "inv.npz", "classes", "[1, 0]"), "'classes'")
    assert "ascending" in msg


def test_chain_bins_is_the_last_bin_whose_edge_is_at_most_the_score():
    from rateopt._postprocess._rule import chain_bins

    rng = np.random.default_rng(0)
    start = np.array([0, 3, 4, 9])
    edges = np.concatenate([np.sort(rng.normal(size=3)), [0.5], np.sort(rng.normal(size=5))])
    scores = np.concatenate([rng.normal(size=200), edges])  # the edges themselves: a score on an edge is its bin's
    for k in range(3):
        a, b = start[k], start[k + 1]
        # brute force: the largest i with edges[a + i] <= score, or the first bin below every edge
        expected = [a + max([i for i in range(b - a) if edges[a + i] <= s], default=0) for s in scores]
        assert chain_bins(start, edges, k, scores).tolist() == expected
