"""Two-class per-group threshold rules of a linear model, folded back into linear models (issue 36).

A linear model's score followed by a per-cell threshold (positive iff
``x . w + b >= t[cell(x)]``) is again a linear model when the cells are an
affine function of the features (the groups are features of X,
:func:`rateopt._postprocess._cell_map.cell_indicator_map`): the offsets
``-t[c]`` fold into the weights (:func:`~rateopt._postprocess._cell_map.fold_cell_offsets`).
When the cells are not features, the rules are group-blind: one threshold,
which folds into the bias.

:func:`folded_threshold_rules` fits the best randomized per-cell threshold
rule of one model's scores with the two-class threshold LP
(:func:`rateopt._postprocess._rule.fit_threshold_rule`, exact: every distinct
score is a bin), and returns the **deterministic rules** the randomized rule
is a mixture of, each as a linear model. Drawing one uniform number ``u`` for
all cells and deciding positive where the rule's probability exceeds ``u``
gives, as ``u`` runs through [0, 1), finitely many deterministic per-cell
threshold rules whose mixture (weights: the lengths of the ``u`` intervals)
makes every row's expected decision the rule's probability. A mixture of the
returned models with those weights is therefore the LP's rule on the
training rows, and the shrinking LP of a training run can mix them with its
other candidates (``rateopt._solutions._candidates``).

Each threshold is placed halfway between the smallest score of its bin and
the largest training score below it, so the folded model decides every
training row as the rule does despite round-off in the folded product.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._language._predicates import And, GroupIs, Not, Or
from ..core import FeatureMatrix
from ..exceptions import RateoptError
from ._bins import row_atoms, sorted_by_chain
from ._cell_map import cell_indicator_map, fold_cell_offsets
from ._rule import cell_codes, fit_threshold_rule

__all__ = ["RuleCells", "deterministic_rules", "folded_threshold_rules", "rule_cells"]

#: Probability mass below which a deterministic rule of a threshold LP's table is round-off, not a rule.
_ROUND_OFF = 1e-9


@dataclass(frozen=True)
class RuleCells:
    """The cells of the per-cell threshold rules of a two-class problem.

    Attributes
    ----------
    columns : tuple of str
        The group columns whose value combinations are the cells (empty: group-blind).
    cells : list of tuple
        The cells, in code order.
    codes : dict of str to ndarray of int64
        Per dataset of the compiled problem, every row's cell.
    features : dict of str to ndarray or sparse matrix
        Per dataset, its features (what the models score).
    cell_map : tuple or None
        ``(A, b)`` of :func:`~rateopt._postprocess._cell_map.cell_indicator_map` (None when group-blind).
    atoms : tuple of (ndarray, ndarray) or None
        :func:`~rateopt._postprocess._bins.row_atoms` of the compiled problem's
        datasets (the same for every rule of a run, so computed once; None:
        each rule computes it).
    """

    columns: tuple
    cells: list
    codes: dict
    features: dict
    cell_map: object
    atoms: tuple = None


def _group_columns(predicate, out):
    """The group columns a predicate reads (``GroupIs``), in order of first appearance."""
    if isinstance(predicate, GroupIs):
        if predicate.column not in out:
            out.append(predicate.column)
    elif isinstance(predicate, (And, Or)):
        for p in predicate.parts:
            _group_columns(p, out)
    elif isinstance(predicate, Not):
        _group_columns(predicate.part, out)
    return out


def rule_cells(problem):
    """The cells of a two-class problem's threshold rules: its goals' group columns when they are features.

    The cells are the combinations of the group columns that the problem's
    subsets read. They are used when every row's cell is an affine function
    of its features on every dataset of the problem (so that per-cell rules
    fold into linear models); otherwise the rules are group-blind (one cell).

    Parameters
    ----------
    problem : Problem
        A two-class problem.

    Returns
    -------
    RuleCells
    """
    compiled = problem.compiled
    by_name = {ds.name: ds for ds in problem.datasets.values()}
    names = list(compiled.datasets)
    features = {n: FeatureMatrix(by_name[n].X).data for n in names}
    atoms = row_atoms(compiled.tables, names)
    columns = []
    for ctxs in compiled.atom_contexts:
        for ctx in ctxs:
            _group_columns(ctx._predicate, columns)
    blind = RuleCells((), [()], {n: np.zeros(by_name[n].n_samples, dtype=np.int64) for n in names}, features, None,
                      atoms)
    if not columns or any(c not in by_name[n].groups for n in names for c in columns):
        return blind
    try:
        codes, cells = {}, None
        for n in names:
            ds = by_name[n]
            codes[n], cells = cell_codes(ds.groups, columns, cells, factorized=getattr(ds, "group_factorization",
                                                                                       None))
    except RateoptError:  # a dataset has a cell the first one lacks: group-blind
        return blind
    if len(cells) < 2:
        return blind
    blocks = [features[n] for n in names]
    if len(blocks) == 1:  # one dataset: its features themselves (the map only reads them)
        X = blocks[0]
    else:
        X = sp.vstack(blocks, format="csr") if any(sp.issparse(b) for b in blocks) else np.vstack(blocks)
    cell_map = cell_indicator_map(X, np.concatenate([codes[n] for n in names]), len(cells))
    if cell_map is None:
        return blind
    return RuleCells(tuple(columns), list(cells), codes, features, cell_map, atoms)


def deterministic_rules(table, start):
    """The deterministic per-cell rules of a randomized threshold rule, with their mixture weights.

    Parameters
    ----------
    table : ndarray of shape (n_bins,)
        Probability of a positive decision per bin, non-decreasing within each cell.
    start : ndarray of shape (n_cells + 1,)
        The bins of cell ``c`` are ``start[c]:start[c + 1]``.

    Returns
    -------
    firsts : ndarray of shape (n_rules, n_cells) of int64
        Per rule and cell, the first positive bin (relative to the cell's first
        bin; the cell's bin count: no bin is positive).
    weights : ndarray of shape (n_rules,)
        The rules' probabilities (positive, summing to 1). Levels of the
        table closer than 1e-9 are one level (a rule of mass 2e-16 next to
        a table entry of ``1 - 2e-16`` is round-off of the LP's solution).
    """
    table = np.asarray(table, dtype=np.float64)
    levels = np.unique(np.concatenate([[0.0, 1.0], np.clip(table, 0.0, 1.0)]))
    lo, hi = levels[:-1], levels[1:]
    # a level within round-off of its neighbour (a table entry of 1 - 2e-16) is not a rule of its own
    keep = hi - lo > _ROUND_OFF
    u = 0.5 * (lo[keep] + hi[keep])
    n_cells = len(start) - 1
    firsts = np.empty((u.size, n_cells), dtype=np.int64)
    for c in range(n_cells):
        t = table[start[c]:start[c + 1]]
        # positive where t > u: t is non-decreasing, so the first such bin
        firsts[:, c] = np.searchsorted(t, u, side="right")
    weights = hi[keep] - lo[keep]
    return firsts, weights / weights.sum()


def _thresholds(first, edges, cell_scores):
    """A threshold per cell: halfway between the first positive bin's edge and the largest score below it."""
    out = np.empty(len(cell_scores))
    for c, (j, e, s) in enumerate(zip(first, edges, cell_scores)):
        if j >= e.size:  # never positive
            top = s[-1]
            out[c] = top + max(1.0, abs(top))
        elif j == 0:  # always positive
            bottom = s[0]
            out[c] = bottom - max(1.0, abs(bottom))
        else:
            below = s[np.searchsorted(s, e[j], side="left") - 1]
            out[c] = 0.5 * (below + e[j])
    return out


def folded_threshold_rules(compiled, cells, weights, bias):
    """The deterministic rules of the best per-cell threshold rule of one linear model, as linear models.

    Parameters
    ----------
    compiled : CompiledProblem
        The two-class problem the rule is fitted on (its training rows).
    cells : RuleCells
        Of :func:`rule_cells`.
    weights : ndarray of shape (n_features,)
    bias : float

    Returns
    -------
    list of (ndarray of shape (n_features,), float, float)
        ``(weights, bias, probability)`` per deterministic rule (see the module
        docstring); empty when the threshold LP cannot be built for the problem.
    """
    w = np.asarray(weights, dtype=np.float64)
    b = float(bias)
    names = list(compiled.datasets)
    scores = {n: np.asarray(cells.features[n] @ w, dtype=np.float64).reshape(-1) + b for n in names}
    pooled = np.concatenate([scores[n] for n in names])
    pooled_codes = np.concatenate([cells.codes[n] for n in names])
    n_cells = len(cells.cells)
    # one sort of the rows by (cell, score): the LP's bins and the thresholds' neighbouring scores both read it
    order = sorted_by_chain(pooled, pooled_codes, n_cells)
    try:
        rule, _ = fit_threshold_rule(compiled, scores, cells.codes, cells.cells, cells.columns, n_bins=None,
                                     order=order, atoms=cells.atoms)
    except RateoptError:  # an objective or constraint the threshold LP does not lower
        return []
    firsts, probs = deterministic_rules(rule.table, rule.start)
    # each cell's scores in ascending order, split by the cells' counts
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
