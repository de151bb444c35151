"""The threshold-rule candidates' shared sort, cached atoms and counting paths, against the paths they replace.

Each fast path must give the same bits as the computation it replaces:
``folded_threshold_rules`` with one sort of (cell, score) shared by the LP's
bins and the thresholds, and the rows' atoms computed once per run, against
the former code (its own sort, a lexsort for the thresholds) rebuilt here
from the public pieces; ``cell_codes``' counting of combined codes and
``cell_indicator_map``'s first rows against brute-force references; the
increment matrix' narrowed-key sort against a dense reverse cumulative sum.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import rateopt as ro
from rateopt.exceptions import RateoptError
from rateopt._postprocess._bins import sorted_by_chain
from rateopt._postprocess._cell_map import _cell_values, cell_indicator_map, fold_cell_offsets
from rateopt._postprocess._folded_rules import _thresholds, deterministic_rules, folded_threshold_rules, rule_cells
from rateopt._postprocess._lp import Chains, _increment_matrix
from rateopt._postprocess._rule import cell_codes, fit_threshold_rule


def _problem(seed, groups_as_features):
    rng = np.random.default_rng(seed)
    n = 400
    g = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    score = np.round(rng.normal(size=n), 1)  # ties within groups
    y = (score + np.array([0.6, -0.4, 0.0])[g] + 0.8 * rng.normal(size=n) > 0).astype(int)
    other = rng.normal(size=n)
    X = np.column_stack([score, other, np.eye(3)[g]]) if groups_as_features else np.column_stack([score, other])
    ds = ro.Dataset(X, y, groups={"g": np.array(["a", "b", "c"])[g]})
    return ro.Problem(objective=ro.error_rate(ds.context()),
                      constraints=[ro.goals.demographic_parity("g", slack=0.03)], datasets=ds)


def _former_folded_rules(compiled, cells, w, b):
    """``folded_threshold_rules`` as it was: the LP's own sort and atoms, a lexsort for the thresholds."""
    names = list(compiled.datasets)
    scores = {n: np.asarray(cells.features[n] @ w, dtype=np.float64).reshape(-1) + b for n in names}
    rule, _ = fit_threshold_rule(compiled, scores, cells.codes, cells.cells, cells.columns, n_bins=None)
    firsts, probs = deterministic_rules(rule.table, rule.start)
    pooled = np.concatenate([scores[n] for n in names])
    pooled_codes = np.concatenate([cells.codes[n] for n in names])
    n_cells = len(cells.cells)
    order = np.lexsort((pooled, pooled_codes))
    counts = np.bincount(pooled_codes, minlength=n_cells)
    cell_scores = np.split(pooled[order], np.cumsum(counts)[:-1])
    edges = [rule.edges[rule.start[c]:rule.start[c + 1]] for c in range(n_cells)]
    out = []
    for first, p in zip(firsts, probs):
        t = _thresholds(first, edges, cell_scores)
        if cells.cell_map is None:
            out.append((w.copy(), b - float(t[0]), float(p)))
            continue
        W, B = fold_cell_offsets(w[None], np.array([b]), -t[:, None], cells.cell_map)
        out.append((W[0], float(B[0]), float(p)))
    return out


@pytest.mark.parametrize("groups_as_features", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_folded_rules_are_bitwise_those_of_the_former_code(seed, groups_as_features):
    problem = _problem(seed, groups_as_features)
    cells = rule_cells(problem)
    assert cells.atoms is not None
    rng = np.random.default_rng(seed + 10)
    w = np.zeros(cells.features[problem.compiled.datasets[0]].shape[1])
    w[0], w[1] = 1.5, rng.normal(scale=0.05)
    b = float(rng.normal(scale=0.2))
    got = folded_threshold_rules(problem.compiled, cells, w, b)
    uncached = folded_threshold_rules(problem.compiled, dataclasses.replace(cells, atoms=None), w, b)
    want = _former_folded_rules(problem.compiled, cells, w, b)
    assert len(got) == len(want) == len(uncached) >= 1
    for (wg, bg, pg), (wu, bu, pu), (ww, bw, pw) in zip(got, uncached, want):
        assert wg.tobytes() == wu.tobytes() == ww.tobytes()
        assert bg == bu == bw and pg == pu == pw


def test_a_rule_fitted_on_any_order_of_tied_rows_is_bitwise_the_same():
    problem = _problem(3, True)
    cells = rule_cells(problem)
    compiled = problem.compiled
    name = compiled.datasets[0]
    s = np.round(cells.features[name][:, 0] * 2.0, 0)  # many ties
    codes = cells.codes[name]
    ref, ref_sol = fit_threshold_rule(compiled, {name: s}, cells.codes, cells.cells, cells.columns)
    rng = np.random.default_rng(0)
    for order in (sorted_by_chain(s, codes, len(cells.cells)),
                  np.lexsort((rng.random(s.size), s, codes))):  # ties in another order
        rule, sol = fit_threshold_rule(compiled, {name: s}, cells.codes, cells.cells, cells.columns,
                                       order=order, atoms=cells.atoms)
        for a, b in ((rule.start, ref.start), (rule.edges, ref.edges), (rule.table, ref.table),
                     (sol.atom_rates, ref_sol.atom_rates)):
            assert a.tobytes() == b.tobytes()


def _brute_cell_codes(groups, columns):
    keys = [tuple(groups[c][i].item() if hasattr(groups[c][i], "item") else groups[c][i] for c in columns)
            for i in range(len(groups[columns[0]]))]
    cells = sorted(set(keys), key=lambda k: tuple((type(v).__name__, v) for v in k))
    index = {k: i for i, k in enumerate(cells)}
    return np.array([index[k] for k in keys], dtype=np.int64), cells


@pytest.mark.parametrize("sizes", [(2, 5), (3, 4, 2), (300, 300)])  # the last: more combinations than rows
def test_cell_codes_of_several_columns_match_a_brute_force_count(sizes):
    rng = np.random.default_rng(len(sizes))
    n = 2000
    groups = {f"c{j}": rng.integers(0, k, size=n) * 3 + 1 for j, k in enumerate(sizes)}
    groups["c0"] = np.array([f"v{v}" for v in groups["c0"]], dtype=object)  # text and numbers
    columns = list(groups)
    codes, cells = cell_codes(groups, columns)
    want_codes, want_cells = _brute_cell_codes(groups, columns)
    np.testing.assert_array_equal(codes, want_codes)
    assert cells == want_cells
    # given cells: the same codes, and a row of a cell not given is refused with its row (the first one)
    again, _ = cell_codes(groups, columns, cells)
    np.testing.assert_array_equal(again, want_codes)
    first_of_last = int(np.flatnonzero(want_codes == len(cells) - 1)[0])
    with pytest.raises(RateoptError, match=f"row {first_of_last} "):
        cell_codes(groups, columns, cells[:-1])


def test_cell_values_are_each_cells_first_row():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 4))
    cells = rng.integers(0, 6, size=50)
    cells[:6] = [5, 3, 0, 1, 2, 4]
    want = np.array([X[np.flatnonzero(cells == c)[0]] for c in range(6)])
    np.testing.assert_array_equal(_cell_values(X, cells, 6), want)
    np.testing.assert_array_equal(_cell_values(sp.csr_matrix(X), cells, 6), want)
    assert _cell_values(X, cells, 7) is None  # a cell with no row
    # codes out of range (not what cell_codes gives): the first rows of the distinct codes, as np.unique finds them
    odd = np.where(cells == 4, 9, cells)
    np.testing.assert_array_equal(_cell_values(X, odd, 6), X[[np.flatnonzero(odd == c)[0] for c in (0, 1, 2, 3, 5, 9)]])
    # a map from one-hot columns is still found
    onehot = np.column_stack([X, np.eye(6)[cells]])
    A, b = cell_indicator_map(onehot, cells, 6)
    np.testing.assert_allclose(onehot @ A + b, np.eye(6)[cells], atol=1e-9)


@pytest.mark.parametrize("n_atoms, n_chain", [(5, 3), (40, 10), (300, 250)])  # keys of 8, 16 and 64 bits
def test_increment_matrix_is_a_reverse_cumulative_sum_within_chains(n_atoms, n_chain):
    rng = np.random.default_rng(n_atoms)
    lengths = rng.integers(1, 5, size=n_chain)
    start = np.concatenate([[0], np.cumsum(lengths)])
    n_vars = int(start[-1])
    M = sp.random(n_atoms, n_vars, density=min(1.0, 8.0 / n_atoms), random_state=rng, format="csc")
    M.data = np.round(M.data * 64) / 64 + 1 / 64  # dyadic: sums exact in any order
    chains = Chains(start=start, record=np.zeros(n_chain, dtype=np.int64), n_records=1, M=M)
    D = _increment_matrix(M, chains)
    dense = M.toarray()
    want = np.zeros_like(dense)
    for k in range(n_chain):
        a, b = start[k], start[k + 1]
        want[:, a:b] = np.cumsum(dense[:, a:b][:, ::-1], axis=1)[:, ::-1]
    np.testing.assert_array_equal(D.toarray(), want)
    assert D.has_sorted_indices and np.all(np.diff(D.indices[D.indptr[0]:D.indptr[1]]) > 0)
