"""A randomized per-group threshold rule: its cells, score bins and decision tables.

:class:`ThresholdRule` maps a score and the row's group cell to the
probability of a positive decision, a non-decreasing step function of the
score in every cell (a mixture of threshold rules ``score >= t``).
:func:`fit_threshold_rule` finds the best such rule for a compiled problem
with one LP (:mod:`rateopt._postprocess._lp`).

Exactness. With ``n_bins=None`` every distinct score of a cell is a bin of
its own: the LP's optimum is the best randomized per-cell threshold rule on the
given data (any rule whose decision probability does not decrease with the
score), exactly. With ``n_bins=K`` a cell with more than ``K`` distinct scores
gets ``K`` bins at quantiles of its scores (bin edges are scores of the data):
the optimum is exact over the rules whose thresholds lie on those edges; rows
inside one bin share one decision probability.
"""

from __future__ import annotations

import math

import numpy as np

from .._language._validation import factorize
from ..exceptions import RateoptError
from .._predictors._draws import two_columns
from ._bins import bin_chains, row_atoms
from ._lp import Chains, solve_threshold_lp

__all__ = ["ThresholdRule", "chain_bins", "cell_codes", "check_n_bins", "checked_cells", "checked_starts",
           "is_group_columns", "fit_threshold_rule"]


def cell_codes(groups, columns, cells=None, *, where="groups", factorized=None):
    """Each row's group cell: the combination of its values in ``columns``.

    Parameters
    ----------
    groups : mapping of str to ndarray
        Group columns by name (all of one length).
    columns : sequence of str
        The columns that define the cells (empty: one cell).
    cells : sequence of tuple, default=None
        Known cells (their index is the code); None: the cells found, sorted.
    where : str, default="groups"
        Names the argument in error messages.
    factorized : callable, default=None
        ``factorized(column) -> (values, codes)``, a column's factorization when
        the caller has it (a dataset's ``group_factorization``); None: each
        column is factorized here (:func:`rateopt._language._validation.factorize`).

    Returns
    -------
    codes : ndarray of shape (n_samples,) of int64
    cells : list of tuple
        The cells, in code order.

    Raises
    ------
    RateoptError
        If a column is missing, a value is missing, or a row's cell is not among ``cells``.
    """
    if not columns:
        n = next((len(np.asarray(v)) for v in groups.values()), None) if groups else None
        return (None if n is None else np.zeros(n, dtype=np.int64)), [()]
    per_column = []
    for c in columns:
        if c not in groups:
            raise RateoptError(f"{where} has no column {c!r}: the rule's cells are defined by {list(columns)!r}")
        values, inverse = factorized(c) if factorized is not None else factorize(np.asarray(groups[c]))
        if inverse.size and inverse.min() < 0:
            _plain(None)  # a missing value: refused with its message
        per_column.append((_plain_values(values), inverse.astype(np.int64)))
    n = per_column[0][1].shape[0]
    if len(per_column) == 1:  # one column: its codes are the combinations already
        values, combined = per_column[0]
        present = np.bincount(combined, minlength=len(values)) > 0
        if cells is None and present.all() and len({type(v) for v in values}) == 1:
            # the factorization's values are sorted and of one type: they are the cells, in order
            return combined, [(v,) for v in values]
        first = np.full(len(values), -1, dtype=np.int64)
        first[combined[::-1]] = np.arange(n - 1, -1, -1)
        keys = [(values[j],) for j in np.flatnonzero(present).tolist()]
        first = first[present]
        inverse = np.cumsum(present)[combined] - 1
    else:
        # one code per distinct combination of the columns' codes (mixed radix), then the combinations' cells
        combined = np.zeros(n, dtype=np.int64)
        size = 1
        for values, inv in per_column:
            combined = combined * len(values) + inv
            size *= len(values)
        if size <= max(n, 1 << 16):
            # few combinations: np.unique's (first row, inverse) by counting, with no sort of the rows
            present = np.bincount(combined, minlength=size) > 0
            first = np.empty(size, dtype=np.int64)
            first[combined[::-1]] = np.arange(n - 1, -1, -1)  # the last write of a value is its first row
            first = first[present]
            inverse = np.cumsum(present)[combined] - 1
        else:
            _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
        keys = [tuple(values[inv[i]] for values, inv in per_column) for i in first]
    if cells is None:
        cells = sorted(set(keys), key=lambda k: tuple((type(v).__name__, v) for v in k))
    index = {k: i for i, k in enumerate(cells)}
    lookup = np.empty(len(keys), dtype=np.int64)
    for j, k in enumerate(keys):  # one entry per distinct combination, not per row
        code = index.get(k)
        if code is None:
            row = int(first[j])
            raise RateoptError(
                f"{where} row {row} is in the group cell {dict(zip(columns, k))!r}, which the rule was not "
                "fitted on (every cell needs its own thresholds; fit with group_blind=True for a rule "
                "that ignores groups)")
        lookup[j] = code
    return lookup[inverse.reshape(-1)], list(cells)


def _plain_values(values):
    """:func:`_plain` of every value of a factorization (no call per value for text and numbers)."""
    if values.dtype.kind in "Uiub":
        return values.tolist()
    if values.dtype.kind == "f" and np.all(np.isfinite(values)):
        return values.tolist()
    out = values.tolist()
    if values.dtype.kind == "O" and all(type(v) is str for v in out):
        return out
    return [_plain(v) for v in out]


def _plain(v):
    """A JSON-able Python scalar for a group value."""
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or (isinstance(v, float) and math.isnan(v)):
        raise RateoptError("a group value is missing (None or NaN): every row needs a group value")
    if isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def check_n_bins(n_bins, *, auto=False):
    """Validate a number of score bins: a positive integer (not a bool), None, or ``"auto"`` where allowed.

    Parameters
    ----------
    n_bins : object
        The value given.
    auto : bool, default=False
        Whether ``"auto"`` is allowed.

    Returns
    -------
    int, None or str
        ``n_bins`` as a Python ``int`` (NumPy integers accepted), None, or ``"auto"``.

    Raises
    ------
    ValueError
        If ``n_bins`` is none of these (0, -3, 2.5, True, "many", ...).
    """
    if n_bins is None or (auto and isinstance(n_bins, str) and n_bins == "auto"):
        return n_bins
    if isinstance(n_bins, (bool, np.bool_)) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        allowed = "a positive integer, None or 'auto'" if auto else "a positive integer or None"
        raise ValueError(f"n_bins must be {allowed}, got {n_bins!r}")
    return int(n_bins)


def is_group_columns(value):
    """Whether a saved ``group_columns`` field is None or a non-empty list of column names or of positions."""
    return value is None or (isinstance(value, list) and bool(value) and (
        all(isinstance(c, str) for c in value) or all(isinstance(c, int) and not isinstance(c, bool) for c in value)))


def checked_cells(meta, bad, *, distinct=True):
    """A saved rule's ``columns`` and ``cells`` fields, checked.

    Parameters
    ----------
    meta : dict
        The file's metadata.
    bad : callable
        ``bad(what)`` gives the error for a problem ``what`` (naming the file).
    distinct : bool, default=True
        Refuse two equal cells (a row of the cell would silently take the
        first one's tables).

    Returns
    -------
    columns : list of str
    cells : list of tuple

    Raises
    ------
    RateoptError
        ``bad(...)``, naming the field.
    """
    columns, cells = meta.get("columns"), meta.get("cells")
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise bad("'columns' must be a list of column names")
    if not isinstance(cells, list) or not cells or not all(
            isinstance(c, list) and len(c) == len(columns)
            and all(isinstance(v, (bool, int, float, str)) and not (isinstance(v, float) and not math.isfinite(v))
                    for v in c) for c in cells):
        raise bad("'cells' must be a non-empty list of value lists, one finite value or string per column")
    cells = [tuple(c) for c in cells]
    if distinct and len(set(cells)) != len(cells):
        seen = set()
        dup = next(c for c in cells if c in seen or seen.add(c))
        raise bad(f"'cells' lists the cell {list(dup)!r} twice (1, 1.0 and true are one value)")
    return columns, cells


def checked_starts(start, n_chains, n_bins, bad):
    """A saved ``start`` array (chain ``k``'s bins are ``start[k]:start[k+1]``), checked, as int64.

    The bounds are checked on the stored integers before any arithmetic, so
    that a ``uint64`` start such as ``[0, 2**63, n]`` cannot wrap around.

    Parameters
    ----------
    start : ndarray
    n_chains : int
    n_bins : int
        The number of bins (``start[-1]``).
    bad : callable
        ``bad(what)`` gives the error for a problem ``what``.

    Returns
    -------
    ndarray of shape (n_chains + 1,) of int64

    Raises
    ------
    RateoptError
    """
    if start.dtype.kind not in "iu" or start.shape != (n_chains + 1,):
        raise bad(f"'rule_start' must be {n_chains + 1} integers (one start per cell, then the number of bins)")
    if not all(0 <= int(v) <= n_bins for v in start.tolist()):
        raise bad(f"'rule_start' holds a value outside [0, {n_bins}] (the number of bins)")
    start = start.astype(np.int64)
    if start[0] != 0 or np.any(np.diff(start) < 1) or start[-1] != n_bins:
        raise bad("'rule_start' must count at least one bin per cell")
    return start


class ThresholdRule:
    """Per-cell decision tables on score bins: a randomized threshold rule.

    Parameters
    ----------
    columns : tuple of str
        The group columns that define the cells (empty: a group-blind rule).
    cells : list of tuple
        The cells, one value per column.
    start : ndarray of shape (n_cells + 1,) of int64
        The bins of cell ``k`` are ``edges[start[k]:start[k+1]]``.
    edges : ndarray of shape (n_bins,)
        Lower score edges of the bins, ascending within each cell.
    table : ndarray of shape (n_bins,)
        Probability of a positive decision per bin, non-decreasing within a cell.

    Attributes
    ----------
    n_cells : int
    """

    def __init__(self, columns, cells, start, edges, table):
        self.columns = tuple(columns)
        self.cells = [tuple(c) for c in cells]
        self.start = np.asarray(start, dtype=np.int64)
        self.edges = np.asarray(edges, dtype=np.float64)
        self.table = np.asarray(table, dtype=np.float64)
        for a in (self.start, self.edges, self.table):
            a.setflags(write=False)

    @property
    def n_cells(self) -> int:
        """Number of group cells."""
        return len(self.cells)

    def bins(self, scores, codes):
        """The bin (index into ``edges``) of every row.

        Parameters
        ----------
        scores : ndarray of shape (n,)
        codes : ndarray of shape (n,) of int64
            Cell codes (:func:`cell_codes`).

        Returns
        -------
        ndarray of shape (n,) of int64
        """
        out = np.empty(scores.shape[0], dtype=np.int64)
        # rows grouped by cell once (one stable sort), not one scan of all rows per cell
        order = np.argsort(codes, kind="stable") if self.n_cells > 1 else None
        cuts = np.searchsorted(codes[order], np.arange(self.n_cells + 1)) if order is not None else None
        for k in range(self.n_cells):
            rows = order[cuts[k]:cuts[k + 1]] if order is not None else slice(None)
            out[rows] = chain_bins(self.start, self.edges, k, scores[rows])
        return out

    def probabilities(self, scores, codes):
        """Probability of a positive decision for every row.

        Parameters
        ----------
        scores : ndarray of shape (n,)
        codes : ndarray of shape (n,) of int64

        Returns
        -------
        ndarray of shape (n,)
        """
        return self.table[self.bins(scores, codes)]

    def distribution(self, scores, codes):
        """The decision distribution (n, 2): the probabilities of a negative and of a positive decision.

        Parameters
        ----------
        scores : ndarray of shape (n,)
        codes : ndarray of shape (n,) of int64

        Returns
        -------
        ndarray of shape (n, 2)
        """
        return two_columns(self.probabilities(scores, codes))

    def decisions(self, scores, codes, uniforms):
        """Class positions (0 or 1): a row is positive iff its uniform number is below its probability.

        Parameters
        ----------
        scores : ndarray of shape (n,)
        codes : ndarray of shape (n,) of int64
        uniforms : ndarray of shape (n,)
            One number in [0, 1) per row.

        Returns
        -------
        ndarray of shape (n,) of int64
        """
        return (uniforms < self.probabilities(scores, codes)).astype(np.int64)

    def thresholds(self):
        """Each cell's rule as a mixture of deterministic thresholds.

        Returns
        -------
        dict of tuple to list of (float, float)
            Per cell, ``(threshold, probability)`` pairs: the rule is positive
            iff ``score >= threshold`` with the threshold drawn with those
            probabilities (``inf``: never positive).
        """
        out = {}
        for k, cell in enumerate(self.cells):
            a, b = self.start[k], self.start[k + 1]
            t = self.table[a:b]
            steps = np.diff(np.concatenate([[0.0], t]))
            pairs = [(float(self.edges[a + i]), float(steps[i])) for i in np.flatnonzero(steps > 0)]
            if t[-1] < 1.0:
                pairs.append((float("inf"), float(1.0 - t[-1])))
            out[cell] = pairs
        return out

    def n_classes_of(self, cells, bad):
        """A saved rule's number of classes (two), its ``cells`` checked with it (``bad``: the file's error)."""
        return 2

    def to_arrays(self):
        """The rule as JSON metadata and arrays (for a saved file).

        Returns
        -------
        meta : dict
        arrays : dict of str to ndarray
        """
        return ({"columns": list(self.columns), "cells": [list(c) for c in self.cells]},
                {"rule_start": np.asarray(self.start), "rule_edges": np.asarray(self.edges),
                 "rule_table": np.asarray(self.table)})

    @classmethod
    def from_arrays(cls, meta, arrays, path):
        """The rule of a saved file, checked.

        Parameters
        ----------
        meta : dict
        arrays : dict of str to ndarray
        path : str
            Named in error messages.

        Returns
        -------
        ThresholdRule

        Raises
        ------
        RateoptError
            If a field is missing or impossible (tables outside [0, 1] or decreasing,
            edges not ascending, cells that do not match the columns).
        """
        def bad(what):
            return RateoptError(f"{path!r} is not a valid rateopt threshold rule file: {what}")

        # a mixture's chains are one per model, all of the empty cell: only a grouped rule's cells must differ
        columns, cells = checked_cells(meta, bad, distinct=bool(meta.get("columns")))
        try:
            start = np.asarray(arrays["rule_start"])
            edges = np.asarray(arrays["rule_edges"])
            table = np.asarray(arrays["rule_table"])
        except KeyError as exc:
            raise bad(f"missing array {exc.args[0]!r}") from None
        start = checked_starts(start, len(cells), edges.shape[0], bad)
        if edges.dtype.kind != "f" or table.dtype.kind != "f" or edges.shape != table.shape or edges.ndim != 1:
            raise bad("'rule_edges' and 'rule_table' must be float vectors of one length")
        if not (np.all(np.isfinite(edges)) and np.all((table >= 0) & (table <= 1))):
            raise bad("edges must be finite and table entries in [0, 1]")
        for k in range(len(cells)):
            a, b = start[k], start[k + 1]
            if np.any(np.diff(edges[a:b]) <= 0) or np.any(np.diff(table[a:b]) < 0):
                raise bad(f"cell {k}: edges must ascend and the table must not decrease")
        return cls(columns, [tuple(c) for c in cells], start, edges, table)

    def __repr__(self):
        return f"ThresholdRule(columns={self.columns!r}, n_cells={self.n_cells}, n_bins={self.edges.size})"


def chain_bins(start, edges, k, scores):
    """The bin (index into ``edges``) of each score on chain ``k``: the last bin whose lower edge is at most
    the score (the chain's first bin below its edges).

    Parameters
    ----------
    start : ndarray of shape (n_chains + 1,) of int64
        The bins of chain ``k`` are ``start[k]:start[k+1]``.
    edges : ndarray
        Every bin's lower score edge (ascending within a chain).
    k : int
    scores : ndarray of shape (n,)

    Returns
    -------
    ndarray of shape (n,) of int64
    """
    a, b = start[k], start[k + 1]
    return a + np.clip(np.searchsorted(edges[a:b], scores, side="right") - 1, 0, b - a - 1)


def fit_threshold_rule(compiled, scores, codes, cells, columns, *, n_bins=None, epsilon=0.0, merge=True, order=None,
                       atoms=None):
    """The best randomized per-cell threshold rule for a compiled problem.

    The rows of every dataset are pooled and sorted once by (cell, score)
    (:func:`rateopt._postprocess._bins.bin_chains`): the bins, their edges,
    the merged runs and the bins' atom rates come from passes over the sorted
    rows, and the LP is built from them once.

    Parameters
    ----------
    compiled : CompiledProblem
    scores : mapping of str to ndarray of shape (n_samples,)
        Per dataset of the problem, every row's score.
    codes : mapping of str to ndarray of shape (n_samples,) of int64
        Per dataset, every row's cell code.
    cells : list of tuple
        The cells (code order).
    columns : sequence of str
        The columns that define the cells.
    n_bins : int or None, default=None
        Bins per cell (None: every distinct score; see the module's exactness note).
    epsilon : float, default=0.0
        Allowed violation of each constraint.
    merge : bool, default=True
        Merge neighbouring bins whose rows all belong to the same atoms (the
        optimum is unchanged; False keeps every bin, for comparisons).
    order : ndarray of shape (n_rows,) of int, default=None
        The pooled rows sorted by (cell, score)
        (:func:`rateopt._postprocess._bins.sorted_by_chain`), when the caller
        has it (None: sorted here). The rule does not depend on the order of
        equal scores within a cell.
    atoms : tuple of (ndarray, ndarray), default=None
        ``row_atoms(compiled.tables, compiled.datasets)``
        (:func:`rateopt._postprocess._bins.row_atoms`), when the caller has
        it (None: computed here).

    Returns
    -------
    rule : ThresholdRule
    solution : ThresholdLPSolution

    Raises
    ------
    RateoptError
        If a cell has no rows.
    """
    n_cells = len(cells)
    names = compiled.datasets
    pooled = _pooled([np.asarray(scores[n], dtype=np.float64) for n in names])
    pooled_codes = _pooled([np.asarray(codes[n], dtype=np.int64) for n in names])
    empty = np.flatnonzero(np.bincount(pooled_codes, minlength=n_cells) == 0)
    if empty.size:
        raise RateoptError(f"the group cell {dict(zip(columns, cells[int(empty[0])]))!r} has no rows")
    atoms, weights = row_atoms(compiled.tables, names) if atoms is None else atoms
    binned = bin_chains(pooled, pooled_codes, n_cells, atoms, weights, compiled.n_atoms, n_bins=n_bins,
                        merge=merge, order=order)
    chains = Chains(start=binned.start, record=np.zeros(n_cells, dtype=np.int64), n_records=1, M=binned.M)
    solution = solve_threshold_lp(compiled, chains, epsilon=epsilon)
    return ThresholdRule(columns, cells, binned.start, binned.edges, solution.x), solution


def _pooled(parts):
    """The datasets' arrays one after another (a single dataset's array itself, not a copy)."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
