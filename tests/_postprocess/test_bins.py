"""Bins from one sort (``_bins.bin_chains``) against the per-cell reference it replaced.

The reference below is the binning the threshold LP used before (a copy kept
here as the independent reference): per cell, ``np.unique`` of the cell's
scores (or ``np.quantile(..., method="inverted_cdf")`` cuts), edges halfway
between neighbouring distinct scores, every row's bin by ``searchsorted``,
runs of bins whose rows share one atom set (found by hashing each row's atom
set) merged, and the atom-by-bin matrix summed by ``scipy.sparse`` from one
entry per (row, atom). ``bin_chains`` must give the same bins, edges and rows'
bins exactly, and the same matrix up to the order of the sums.
"""

import numpy as np
import pytest
import rateopt as ro
import scipy.sparse as sp
from rateopt._language._validation import factorize
from rateopt._postprocess._bins import bin_chains, row_atoms, segment_accumulate, separating_edges
from rateopt._postprocess._lp import Chains, _increment_matrix
from rateopt._postprocess._rule import cell_codes, fit_threshold_rule

# ----------------------------------------------------------------------------- the reference (per cell)


def _ref_edges(scores, n_bins):
    distinct = np.unique(scores)
    if n_bins is None or distinct.size <= n_bins:
        cuts = distinct
    else:
        q = np.quantile(scores, np.arange(n_bins) / n_bins, method="inverted_cdf")
        cuts = np.unique(np.concatenate([[distinct[0]], q]))
    edges = cuts.astype(np.float64, copy=True)
    if edges.size > 1:
        below = distinct[np.searchsorted(distinct, cuts[1:]) - 1]
        edges[1:] = separating_edges(below.astype(np.float64), edges[1:])
    return edges


def _ref_bins(compiled, scores, codes, n_cells, n_bins, merge):
    edges, start = [], [0]
    for k in range(n_cells):
        e = _ref_edges(scores[codes == k], n_bins)
        edges.append(e)
        start.append(start[-1] + e.size)
    edges = np.concatenate(edges)
    start = np.asarray(start)
    bins = np.empty(scores.size, dtype=np.int64)
    for k in range(n_cells):
        rows = np.flatnonzero(codes == k)
        a, b = start[k], start[k + 1]
        bins[rows] = a + np.clip(np.searchsorted(edges[a:b], scores[rows], side="right") - 1, 0, b - a - 1)
    table = compiled.tables["train"]
    atom = table.offset + table.indices.astype(np.int64)
    row = np.repeat(np.arange(table.n_samples), np.diff(table.indptr))
    if merge:
        sets = [frozenset(atom[table.indptr[i]:table.indptr[i + 1]].tolist()) for i in range(scores.size)]
        per_bin = [set() for _ in range(edges.size)]
        for i, b in enumerate(bins):
            per_bin[b].add(sets[i])
        same = np.zeros(edges.size, dtype=bool)
        for b in range(1, edges.size):
            same[b] = len(per_bin[b]) == 1 and per_bin[b] == per_bin[b - 1]
        same[start[:-1]] = False
        new_id = np.cumsum(~same) - 1
        start = np.concatenate((new_id[start[:-1]], [int((~same).sum())]))
        edges, bins = edges[~same], new_id[bins]
    M = sp.coo_matrix((table.weights, (atom, bins[row])), shape=(compiled.n_atoms, edges.size)).toarray()
    return start, edges, bins, M


def _problem(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 400))
    k = int(rng.integers(2, 6))
    g = rng.choice([f"g{i}" for i in range(k)], n)
    g[:k] = [f"g{i}" for i in range(k)]  # every cell has rows
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(size=n) + y, int(rng.integers(0, 3)))  # many ties at 0 decimals
    w = rng.uniform(0.2, 3.0, n) if seed % 2 else None
    goal = [ro.goals.demographic_parity("g", slack=0.02), ro.goals.equalized_odds("g", slack=0.05),
            ro.goals.equal_opportunity("g", slack=0.01)][seed % 3]
    ds = ro.Dataset(s[:, None], y, weights=w, groups={"g": g})
    problem = ro.Problem(constraints=[goal], datasets={"train": ds})
    codes, cells = cell_codes({"g": g}, ["g"])
    return problem.compiled, s, codes, len(cells), cells


@pytest.mark.parametrize("seed", range(24))
@pytest.mark.parametrize("n_bins", [None, 4])
@pytest.mark.parametrize("merge", [True, False])
def test_one_sort_gives_the_per_cell_bins_edges_and_rates(seed, n_bins, merge):
    compiled, s, codes, n_cells, _ = _problem(seed)
    start, edges, bins, M = _ref_bins(compiled, s, codes, n_cells, n_bins, merge)
    atoms, weights = row_atoms(compiled.tables, ["train"])
    got = bin_chains(s, codes, n_cells, atoms, weights, compiled.n_atoms, n_bins=n_bins, merge=merge)
    np.testing.assert_array_equal(got.start, start)
    np.testing.assert_array_equal(got.edges, edges)
    np.testing.assert_array_equal(got.bins(), bins)
    np.testing.assert_allclose(got.M.toarray(), M, rtol=1e-13, atol=1e-16)


def test_merging_only_joins_runs_of_one_atom_set():
    # 3 rows per score value; a bin whose rows differ in label is never merged, a pure run is one bin
    compiled, s, codes, n_cells, _ = _problem(5)
    atoms, weights = row_atoms(compiled.tables, ["train"])
    merged = bin_chains(s, codes, n_cells, atoms, weights, compiled.n_atoms)
    full = bin_chains(s, codes, n_cells, atoms, weights, compiled.n_atoms, merge=False)
    assert merged.edges.size < full.edges.size
    # merging sums columns: the rates of every merged bin are the sums of its members
    fine_to_merged = np.zeros(full.edges.size, dtype=np.int64)
    fine_to_merged[full.bins()] = merged.bins()
    summed = np.zeros((compiled.n_atoms, merged.edges.size))
    np.add.at(summed.T, fine_to_merged, full.M.toarray().T)
    np.testing.assert_allclose(merged.M.toarray(), summed, rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("ufunc", [np.add, np.maximum])
def test_segment_accumulate_is_one_accumulate_per_segment(ufunc):
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 9, 40)
    start = np.concatenate([[0], np.cumsum(lengths)])
    x = rng.normal(size=start[-1])
    ref = np.concatenate([ufunc.accumulate(x[a:b]) for a, b in zip(start[:-1], start[1:])])
    np.testing.assert_array_equal(segment_accumulate(ufunc, x, start), ref)  # bit for bit


@pytest.mark.parametrize("seed", range(6))
def test_increment_matrix_is_the_reverse_cumulative_sum_per_chain(seed):
    compiled, s, codes, n_cells, _ = _problem(seed)
    atoms, weights = row_atoms(compiled.tables, ["train"])
    b = bin_chains(s, codes, n_cells, atoms, weights, compiled.n_atoms)
    D = _increment_matrix(b.M, Chains(start=b.start, record=np.zeros(n_cells, dtype=np.int64), n_records=1))
    M = b.M.toarray()
    ref = np.zeros_like(M)
    for k in range(n_cells):
        a, e = b.start[k], b.start[k + 1]
        ref[:, a:e] = np.cumsum(M[:, a:e][:, ::-1], axis=1)[:, ::-1]
    np.testing.assert_array_equal(D.toarray(), ref)
    assert D.has_sorted_indices and np.all(D.data != 0)


@pytest.mark.parametrize("col", [
    np.array(["b", "a", "b", None, "c", "a"], dtype=object),
    np.array([2.5, np.nan, 1.0, 2.5, -3.0]),
    np.array(["x", "y", "x", "z"]),
    np.array([3, 1, 3, 2, 1]),
    np.array([1, "a", 1, "a", None], dtype=object),  # unorderable: first appearance
    np.array([], dtype=object),
])
def test_factorize_against_unique_and_equality(col):
    values, codes = factorize(col)
    missing = np.array([v is None or (isinstance(v, float) and np.isnan(v)) for v in col.tolist()], dtype=bool)
    assert codes.shape == col.shape and np.all(codes[missing] == -1)
    kept = col[~missing]
    for i, v in enumerate(kept.tolist()):
        assert values[codes[~missing][i]] == v
    assert len(values) == len(set(kept.tolist()))
    try:
        ref = np.unique(kept)
    except TypeError:
        return
    np.testing.assert_array_equal(values, ref)


def test_many_one_row_groups_reach_zero_error():
    # one row per cell and no goal: every row can be decided by its label, so the best error is exactly 0;
    # 3,000 cells take the LP's presolve path (a cap row per cell)
    rng = np.random.default_rng(0)
    n = 3000
    y = rng.integers(0, 2, n)
    s = rng.random(n)
    g = np.array([f"g{i}" for i in range(n)])
    w = rng.uniform(0.5, 2.0, n)
    clf = ro.ThresholdClassifier().fit(s, y, groups={"g": g}, sample_weight=w)
    assert clf.training_.objective == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(clf.predict_proba(s, groups={"g": g})[:, 1], y, atol=1e-12)


def test_fit_threshold_rule_refuses_an_empty_cell():
    compiled, s, codes, n_cells, cells = _problem(2)
    with pytest.raises(ro.exceptions.RateoptError, match="has no rows"):
        fit_threshold_rule(compiled, {"train": s}, {"train": codes}, cells + [("zz",)], ["g"])


@pytest.mark.parametrize("n_chains", [1, 2, 3, 8, 9, 40, 256, 257, 70_000])
def test_sorted_by_chain_is_a_stable_sort_of_the_chains_of_the_score_order(n_chains):
    import rateopt._postprocess._bins as bins

    rng = np.random.default_rng(n_chains)
    n = 5000
    scores = np.round(rng.random(n), 2)  # many ties
    chain = rng.integers(0, n_chains, n)
    order = bins.sorted_by_chain(scores, chain, n_chains)
    assert np.array_equal(np.sort(order), np.arange(n))  # a permutation
    key = chain[order] * 1000 + np.rint(scores[order] * 100)  # (chain, score) ascending
    assert np.all(np.diff(key) >= 0)
    if n_chains > 256:
        # a stable sort of the chain codes of the score order, written out (uint16 and int64 codes)
        by_score = np.argsort(scores)
        rows = {}
        for i in by_score:
            rows.setdefault(int(chain[i]), []).append(i)
        want = np.array([i for c in sorted(rows) for i in rows[c]], dtype=np.int64)
        assert np.array_equal(order, want)


@pytest.mark.parametrize("many", [False, True])
def test_bins_of_a_compiled_problem_do_not_depend_on_the_order_of_equal_scores(many):
    """``bin_chains`` of a compiled problem's rows, given the rows in (chain, score) order with equal scores
    in two different orders (reversed ties): the same bins, edges and sums, bit for bit, both when it counts
    a dense (bin, atom) table in row order and when it sums runs of sorted rows (``many``: more (bin, atom)
    pairs than that table holds)."""
    import rateopt._postprocess._bins as B
    from rateopt._postprocess._rule import cell_codes

    rng = np.random.default_rng(4)
    G, n = (200, 60_000) if many else (3, 2_000)
    g = rng.integers(0, G, n)
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 3)  # many ties
    w = rng.uniform(0.1, 5.0, n)  # sums whose order would matter, were they not on the exact grid
    problem = ro.Problem(constraints=[ro.goals.demographic_parity("g", slack=0.01)],
                         datasets=ro.Dataset(s[:, None], y, weights=w, groups={"g": g}))
    compiled = problem.compiled
    atoms, weights = B.row_atoms(compiled.tables, compiled.datasets)
    codes, cells = cell_codes({"g": g}, ["g"])
    first = np.lexsort((np.arange(n), s, codes))  # (chain, score), ties by row
    second = np.lexsort((-np.arange(n), s, codes))  # ties reversed
    assert not np.array_equal(first, second)
    a = B.bin_chains(s, codes, len(cells), atoms, weights, compiled.n_atoms, order=first)
    b = B.bin_chains(s, codes, len(cells), atoms, weights, compiled.n_atoms, order=second)
    assert (a.start[-1] * compiled.n_atoms > max(4 * n * atoms.shape[1], 1 << 22)) == many
    np.testing.assert_array_equal(a.start, b.start)
    assert np.array_equal(a.edges.view(np.int64), b.edges.view(np.int64))
    assert np.array_equal(a.M.toarray().view(np.int64), b.M.toarray().view(np.int64))
    np.testing.assert_array_equal(a.bins(), b.bins())
    c = B.bin_chains(s, codes, len(cells), atoms, weights, compiled.n_atoms)  # sorted_by_chain's order
    assert np.array_equal(c.M.toarray().view(np.int64), a.M.toarray().view(np.int64))


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("padded", [False, True])
def test_records_sums_are_the_row_order_sums_bit_for_bit(seed, padded, monkeypatch):
    """R records scoring the same m rows (a mixture's first pass): the per-record sums of the dense (bin, atom)
    table are a brute-force loop's, in row order, bit for bit, and those of one bincount over all records."""
    import rateopt._postprocess._bins as B
    rng = np.random.default_rng(seed)
    m, R, n_atoms = int(rng.integers(20, 120)), int(rng.integers(2, 7)), 5
    r = 3
    atoms = np.sort(rng.choice(n_atoms, size=(m, r)), axis=1)
    atoms = np.array([np.unique(a).tolist() + [-1] * (r - np.unique(a).size) for a in atoms])
    if not padded:
        atoms = np.tile(np.arange(r), (m, 1)) + rng.integers(0, n_atoms - r + 1, (m, 1))
    weights = np.where(atoms >= 0, rng.uniform(0.1, 1.0, (m, r)) / m, 0.0)
    scores = np.round(rng.random(R * m), 2)
    chain = np.repeat(np.arange(R, dtype=np.int64), m)
    order = (np.argsort(scores.reshape(R, m), axis=1) + (np.arange(R) * m)[:, None]).ravel()
    for n_bins in (None, 4):
        got = bin_chains(scores, chain, R, atoms, weights, n_atoms, n_bins=n_bins, merge=False, order=order)
        bins = got.bins()
        ref = np.zeros((n_atoms, got.start[-1]))
        for i in range(R * m):  # row order, slot order: the order np.bincount sums in
            for j in range(r):
                if atoms[i % m, j] >= 0:
                    ref[atoms[i % m, j], bins[i]] += weights[i % m, j]
        dense = got.M.toarray()
        assert np.array_equal(dense.view(np.int64), ref.view(np.int64))
        monkeypatch.setattr(B, "_record_blocks", lambda *a: None)  # the one bincount over every record
        whole = bin_chains(scores, chain, R, atoms, weights, n_atoms, n_bins=n_bins, merge=False, order=order)
        monkeypatch.undo()
        assert np.array_equal(whole.M.toarray().view(np.int64), dense.view(np.int64))
        np.testing.assert_array_equal(whole.M.indices, got.M.indices)
        np.testing.assert_array_equal(whole.M.indptr, got.M.indptr)


@pytest.mark.parametrize("seed", range(6))
def test_sums_one_column_at_a_time_are_the_row_order_sums_bit_for_bit(seed, monkeypatch):
    """One record whose atoms each sit in one column (a label's atom, then a group's): the dense (bin, atom)
    table summed a column at a time is a brute-force loop's, in row order, bit for bit, and that of one
    bincount over every entry."""
    import rateopt._postprocess._bins as B
    rng = np.random.default_rng(seed)
    n, n_groups = int(rng.integers(50, 400)), int(rng.integers(2, 5))
    atoms = np.stack([rng.integers(0, 2, n), 2 + rng.integers(0, n_groups, n)], axis=1)
    weights = np.exp(rng.uniform(-20, 0, (n, 2)))  # sums whose order matters
    scores = np.round(rng.random(n), 2)
    chain = atoms[:, 1] - 2 if seed % 2 else np.zeros(n, dtype=np.int64)
    n_chains = n_groups if seed % 2 else 1
    n_atoms = 2 + n_groups
    assert B._columns_disjoint(*B._column_ranges(atoms))
    assert not B._columns_disjoint(*B._column_ranges(np.array([[0, 2], [1, 2], [0, 1]])))  # atom 1 in both
    got = bin_chains(scores, chain, n_chains, atoms, weights, n_atoms, merge=False)
    bins = got.bins()
    ref = np.zeros((n_atoms, got.start[-1]))
    for i in range(n):
        for j in range(2):
            ref[atoms[i, j], bins[i]] += weights[i, j]
    dense = got.M.toarray()
    assert np.array_equal(dense.view(np.int64), ref.view(np.int64))
    monkeypatch.setattr(B, "_columns_disjoint", lambda *a: False)  # one bincount over every entry
    whole = bin_chains(scores, chain, n_chains, atoms, weights, n_atoms, merge=False)
    assert np.array_equal(whole.M.toarray().view(np.int64), dense.view(np.int64))
    np.testing.assert_array_equal(whole.M.indices, got.M.indices)


@pytest.mark.parametrize("case", ["unit", "weighted", "padded", "zero_weight", "one_chain"])
def test_bin_codes_is_bin_chains_of_the_codes(case):
    """Chains already binned (a boosted run's kept codes): ``bin_codes`` gives :func:`bin_chains`'s ``start``
    and ``M`` bit for bit, and says None where ``bin_chains`` sums another way (zero weights, one chain)."""
    from rateopt._postprocess._bins import bin_codes

    rng = np.random.default_rng(5)
    m, n_atoms, R = 3000, 7, 1 if case == "one_chain" else 6
    r = 3
    atoms = np.sort(rng.choice(n_atoms, size=(m, r)), axis=1)
    atoms[:, 1] = np.where(atoms[:, 1] == atoms[:, 0], -1, atoms[:, 1]) if case == "padded" else atoms[:, 1]
    if case != "padded":  # distinct atoms per row: one column per atom group
        atoms = np.stack([rng.integers(0, 2, m), 2 + rng.integers(0, 2, m), 4 + rng.integers(0, 3, m)], axis=1)
    weights = np.ones((m, r)) / m if case == "unit" else rng.uniform(0.1, 2.0, (m, r)) / m
    weights[atoms < 0] = 0.0
    if case == "zero_weight":
        weights[5, 0] = 0.0
    n_codes = rng.integers(1, 257, R)
    codes = []
    for k in range(R):  # every code used at least once, the rest at random
        c = rng.integers(0, n_codes[k], m)
        c[rng.permutation(m)[:n_codes[k]]] = np.arange(n_codes[k])
        codes.append(c.astype(np.uint8))
    got = bin_codes(codes, n_codes, atoms, weights, n_atoms)
    if case in ("zero_weight", "one_chain"):
        assert got is None
        return
    scores = np.concatenate(codes).astype(np.float64)
    chain = np.repeat(np.arange(R, dtype=np.int64), m)
    want = bin_chains(scores, chain, R, atoms, weights, n_atoms, n_bins=256, merge=False)
    assert np.array_equal(got.start, want.start)
    assert got.M.shape == want.M.shape
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(got.M, name), getattr(want.M, name)), name


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("atoms_kind", ["int64", "narrow", "padded"])
def test_bin_codes_blocks_are_the_row_order_sums_bit_for_bit(seed, atoms_kind, monkeypatch):
    """Kept codes: ``bin_codes`` adds the entries a block of rows at a time (``np.add.at``; padded rows: one
    bincount a chain over its valid entries), and its ``M`` is a
    brute-force loop's over the rows in row order, then slot order, bit for bit, and that of one
    ``np.bincount`` over every entry of a chain (the sums it replaced); with the atoms as int64, in the one-byte
    dtype of a problem's table (``row_atoms(narrow=True)``), or padded; blocks of 7 rows or 8192."""
    import rateopt._postprocess._bins as B
    from rateopt._postprocess._bins import bin_codes

    rng = np.random.default_rng(seed)
    m, R, n_groups = int(rng.integers(50, 500)), int(rng.integers(2, 6)), int(rng.integers(2, 6))
    atoms = np.stack([rng.integers(0, 2, m), 2 + rng.integers(0, n_groups, m)], axis=1)
    n_atoms = 2 + n_groups
    if atoms_kind == "padded":
        atoms[rng.random(m) < 0.3, 1] = -1
    weights = np.where(atoms >= 0, np.exp(rng.uniform(-30, 0, (m, 2))), 0.0)  # sums whose order matters
    if atoms_kind == "narrow":
        atoms = atoms.astype(np.uint8)
    n_codes = rng.integers(1, 257, R)
    codes = []
    for k in range(R):
        c = rng.integers(0, n_codes[k], m)
        c[rng.permutation(m)[:min(m, n_codes[k])]] = np.arange(min(m, n_codes[k]))
        n_codes[k] = c.max() + 1
        codes.append(c.astype(np.uint8))
    if seed % 2:
        monkeypatch.setattr(B, "_ADD_BLOCK_ROWS", 7)
    got = bin_codes(codes, n_codes, atoms, weights, n_atoms)
    start = np.concatenate(([0], np.cumsum(n_codes)))
    ref = np.zeros((n_atoms, start[-1]))
    for k in range(R):
        for i in range(m):
            for j in range(2):
                if atoms[i, j] >= 0:
                    ref[int(atoms[i, j]), start[k] + codes[k][i]] += weights[i, j]
    assert np.array_equal(got.start, start)
    assert np.array_equal(got.M.toarray().view(np.int64), ref.view(np.int64))
    wide = atoms.astype(np.int64)
    valid = (wide >= 0).ravel()
    for k in range(R):  # one bincount over every entry of chain k, in row then slot order
        key = (codes[k].astype(np.int64)[:, None] * n_atoms + wide).ravel()[valid]
        sums = np.bincount(key, weights=weights.ravel()[valid], minlength=int(n_codes[k]) * n_atoms)
        dense = sums.reshape(-1, n_atoms).T
        assert np.array_equal(got.M.toarray()[:, start[k]:start[k + 1]].view(np.int64), dense.view(np.int64))


@pytest.mark.parametrize("seed", range(10))
def test_blocked_sums_are_the_default_paths_bit_for_bit(seed, monkeypatch):
    """``bin_chains(..., blocked_sums=True)`` (a boosted exact re-fit's: the dense (bin, atom) sums added a
    block of rows at a time): the same ``start``, ``edges`` and ``M`` as the default path, bit for bit, and
    its dense table is a brute-force loop's over the rows in row order, bit for bit; one or several records,
    padded rows (the default path's sums), atoms in one column each or not, weights whose summing order
    matters, merged bins or not, blocks of 5 rows or 8192."""
    import rateopt._postprocess._bins as B

    rng = np.random.default_rng(100 + seed)
    m, n_atoms = int(rng.integers(30, 300)), 6
    R = int(rng.integers(2, 4)) if seed % 3 == 2 else 1
    n = R * m
    if seed % 2:
        atoms = np.stack([rng.integers(0, 2, m), 2 + rng.integers(0, 4, m)], axis=1)  # a column per atom set
    else:
        atoms = rng.integers(0, n_atoms, (m, 3))
        atoms[rng.random((m, 3)) < 0.3] = -1  # padding
    weights = np.where(atoms >= 0, np.exp(rng.uniform(-30, 0, atoms.shape)), 0.0)
    scores = np.round(rng.random(n), 1 + seed % 3)
    n_chains = R if R > 1 else int(rng.integers(1, 4))
    chain = np.repeat(np.arange(R), m) if R > 1 else rng.integers(0, n_chains, n)
    if seed % 4 == 1:
        monkeypatch.setattr(B, "_ADD_BLOCK_ROWS", 5)
    for merge in (False, True):
        want = bin_chains(scores, chain, n_chains, atoms, weights, n_atoms, merge=merge, row_bins=True)
        got = bin_chains(scores, chain, n_chains, atoms, weights, n_atoms, merge=merge, row_bins=False,
                         blocked_sums=True)
        assert np.array_equal(got.start, want.start) and np.array_equal(got.edges, want.edges)
        for name in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(got.M, name), getattr(want.M, name)), (merge, name)
        bins = want.bins()
        ref = np.zeros((n_atoms, want.start[-1]))
        for i in range(n):
            for j in range(atoms.shape[1]):
                if atoms[i % m, j] >= 0:
                    ref[atoms[i % m, j], bins[i]] += weights[i % m, j]
        assert np.array_equal(got.M.toarray().view(np.int64), ref.view(np.int64))


def test_row_atoms_narrow_is_the_tables_ids_and_the_same_bins():
    """``row_atoms(narrow=True)``: one dataset of regular rows gives its table's ids themselves (a view, the
    table's dtype), equal to the int64 copy. ``bin_chains`` and the
    pattern keys give the same bins, edges and sums from either (an atom id of 255 in one byte included)."""
    from rateopt._postprocess._bins import _pattern_keys

    rng = np.random.default_rng(3)
    n = 400
    X = rng.normal(size=(n, 2))
    y = rng.integers(0, 2, n)
    g = rng.choice(["a", "b", "c"], n)
    problem = ro.Problem(constraints=[ro.goals.demographic_parity("g", slack=0.05)],
                         datasets=ro.Dataset(X, y, groups={"g": g}))
    compiled = problem.compiled
    wide, w_wide = row_atoms(compiled.tables, compiled.datasets)
    narrow, w_narrow = row_atoms(compiled.tables, compiled.datasets, narrow=True)
    table = compiled.tables[compiled.datasets[0]]
    assert wide.dtype == np.int64 and narrow.dtype == table.indices.dtype
    assert np.shares_memory(narrow, table.indices)
    assert np.array_equal(narrow.astype(np.int64), wide) and np.array_equal(w_narrow, w_wide)
    scores = np.round(rng.random(n), 2)
    for merge in (False, True):
        a = bin_chains(scores, np.zeros(n, dtype=np.int64), 1, wide, w_wide, compiled.n_atoms, merge=merge)
        b = bin_chains(scores, np.zeros(n, dtype=np.int64), 1, narrow, w_narrow, compiled.n_atoms, merge=merge)
        assert np.array_equal(a.start, b.start) and np.array_equal(a.edges, b.edges)
        for name in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(a.M, name), getattr(b.M, name)), name
    ids = rng.integers(0, 256, (50, 2))
    ids[0, 1] = 255
    assert np.array_equal(_pattern_keys(ids.astype(np.uint8), 256), _pattern_keys(ids, 256))


@pytest.mark.parametrize("seed", range(12))
def test_without_row_bins_the_bins_edges_and_rates_are_the_full_paths_bit_for_bit(seed):
    """``row_bins=False`` (a boosted exact re-fit's call, which frees its per-row arrays early): the same
    ``start``, ``edges`` and ``M`` as the full path, bit for bit, on random scores with ties, several chains,
    padded rows, weights whose summing order matters, zero weights, and R records of the same rows; and the
    full path's dense (bin, atom) table is a brute-force loop's over the rows in row order, bit for bit."""
    rng = np.random.default_rng(seed)
    m, r, n_atoms = int(rng.integers(30, 300)), int(rng.integers(1, 4)), 6
    R = int(rng.integers(2, 4)) if seed % 3 == 2 else 1
    n = R * m
    atoms = rng.integers(0, n_atoms, (m, r))  # atoms of several columns: one bincount over every entry
    if seed % 2:
        atoms[rng.random((m, r)) < 0.3] = -1  # padding
    weights = np.where(atoms >= 0, np.exp(rng.uniform(-30, 0, (m, r))), 0.0)
    if seed % 4 == 3:
        weights[rng.random((m, r)) < 0.1] = 0.0  # zero-weight entries are kept as entries
    scores = np.round(rng.random(n), 1 + seed % 3)  # ties
    n_chains = R if R > 1 else int(rng.integers(1, 5))
    chain = np.repeat(np.arange(R), m) if R > 1 else rng.integers(0, n_chains, n)
    chain[:n_chains] = np.arange(n_chains)  # every chain has rows
    order = np.lexsort((scores, chain))
    for n_bins in (None, 5):
        for merge in (True, False):
            full = bin_chains(scores, chain, n_chains, atoms, weights, n_atoms, n_bins=n_bins, merge=merge,
                              order=order)
            slim = bin_chains(scores, chain, n_chains, atoms, weights, n_atoms, n_bins=n_bins, merge=merge,
                              order=order, row_bins=False)
            assert slim.order is None and slim.bin_of_sorted is None
            np.testing.assert_array_equal(slim.start, full.start)
            assert np.array_equal(slim.edges.view(np.int64), full.edges.view(np.int64))
            np.testing.assert_array_equal(slim.M.indptr, full.M.indptr)
            np.testing.assert_array_equal(slim.M.indices, full.M.indices)
            assert np.array_equal(slim.M.data.view(np.int64), full.M.data.view(np.int64))
            bins = full.bins()
            ref = np.zeros((n_atoms, full.start[-1]))
            seen = np.zeros(ref.shape, dtype=bool)
            for i in range(n):  # row order, slot order: the order np.bincount sums in
                for j in range(r):
                    if atoms[i % m, j] >= 0:
                        ref[atoms[i % m, j], bins[i]] += weights[i % m, j]
                        seen[atoms[i % m, j], bins[i]] = True
            assert np.array_equal(full.M.toarray().view(np.int64), ref.view(np.int64))
            assert full.M.nnz == np.count_nonzero(seen)
