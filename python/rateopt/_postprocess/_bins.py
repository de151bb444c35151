"""Score bins of every chain from one sort: edges, merged runs and the bins' atom rates.

The threshold LP (:mod:`rateopt._postprocess._lp`) has a variable per score bin
of every chain (a group cell's rows, or one recorded iterate's scores), and
needs every atom's rate as a sum over bins. :func:`bin_chains` computes all of
it from one sort of the rows by (chain, score), in passes over the sorted rows:

- a bin is a run of rows of one chain between two cuts; a cut is every distinct
  score (``n_bins=None``), or a quantile of the chain's scores (``n_bins=K``);
- the bins' lower edges lie halfway between neighbouring distinct scores
  (:func:`separating_edges`);
- neighbouring bins whose rows all belong to one set of atoms are merged: no
  goal can separate them (a row adds ``w / W_a`` to each of its atoms, so a
  run of one membership pattern adds one direction times its weight), and the
  LP's optimum is unchanged;
- the merged bins' atom rates are summed per run of one pattern, so the matrix
  ``M`` (atoms x bins) comes out sorted, with no (nnz,)-sized sort.

Every row's atoms are read as a padded (rows, r) array of atom ids (r the
most atoms of one row, -1 for none), compared exactly between neighbours.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._utils._quantiles import quantile_positions

__all__ = ["BinnedChains", "bin_chains", "bin_codes", "narrow_codes", "row_atoms", "segment_accumulate",
           "separating_edges", "sorted_by_chain"]


@dataclass(frozen=True)
class BinnedChains:
    """The merged bins of every chain, the bin of every row, and every atom's rate per bin.

    Parameters
    ----------
    start : ndarray of shape (n_chains + 1,) of int64
        The bins of chain ``k`` are ``start[k]:start[k+1]``, by ascending score.
    edges : ndarray of shape (n_bins,)
        Each bin's lower score edge.
    order : ndarray of shape (n_rows,) of int64
        The rows sorted by (chain, score).
    bin_of_sorted : ndarray of shape (n_rows,) of int64
        The bin of the row ``order[i]``.
    M : scipy.sparse.csc_matrix of shape (n_atoms, n_bins)
        Every atom's rate as a sum over bins (``p = M x`` for tables ``x``).
    """

    start: np.ndarray
    edges: np.ndarray
    order: np.ndarray
    bin_of_sorted: np.ndarray
    M: sp.csc_matrix

    def bins(self):
        """The bin of every row, in row order.

        Returns
        -------
        ndarray of shape (n_rows,) of int64
        """
        out = np.empty_like(self.bin_of_sorted)
        out[self.order] = self.bin_of_sorted
        return out


def sorted_by_chain(scores, chain, n_chains):
    """The rows sorted by (chain, score).

    Parameters
    ----------
    scores : ndarray of shape (n,)
    chain : ndarray of shape (n,) of int64
        Every row's chain, in ``0..n_chains-1``.
    n_chains : int

    Returns
    -------
    ndarray of shape (n,) of int64
        Up to 256 chains, a stable sort of the codes as uint8 (a radix sort:
        one counting pass) groups the rows by chain, and each chain's scores
        are sorted on their own: shorter sorts than one of all the scores
        (census, 209,500 rows: about 5% less time at 2 chains, 25% at 64).
        More chains: one sort of the scores, then a stable sort of the codes
        (uint16, a radix sort, up to 65,536 chains; else a merge sort). The
        order of equal scores within a chain is unspecified: :func:`bin_chains`'
        bins and edges do not depend on it, nor do its sums of a compiled
        problem's weights (multiples of ``2**-53`` whose sums are exact in any
        order, :mod:`rateopt._utils._weights`).
    """
    if n_chains <= 1:
        return np.argsort(scores)
    codes = narrow_codes(chain, n_chains)
    if n_chains > 1 << 8:
        order = np.argsort(scores)
        return order[np.argsort(codes[order], kind="stable")]
    order = np.argsort(codes, kind="stable")
    bounds = np.zeros(n_chains + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=n_chains), out=bounds[1:])
    grouped = scores[order]
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if b - a > 1:
            order[a:b] = order[a:b][np.argsort(grouped[a:b])]
    return order


def narrow_codes(chain, n_chains):
    """The chain codes as uint8 (up to 256 chains) or uint16 (up to 65,536), else as given: equal where they are."""
    if n_chains <= 1 << 8:
        return chain.astype(np.uint8)
    if n_chains <= 1 << 16:
        return chain.astype(np.uint16)
    return chain


def row_atoms(tables, names, narrow=False):
    """Every row's atoms (global ids, ascending, -1 padded) and entry weights, the datasets' rows pooled.

    Parameters
    ----------
    tables : mapping of str to MembershipTable
    names : sequence of str
        The datasets, in pooling order.
    narrow : bool, default=False
        One dataset whose rows all have ``r`` atoms and whose ids start at 0
        (no padding, no offset): its table's ids themselves (a view, in the
        table's integer dtype, often one byte) instead of an int64 copy.

    Returns
    -------
    atoms : ndarray of shape (n_rows, r) of int64 (or the table's dtype, ``narrow``)
    weights : ndarray of shape (n_rows, r) of float64
        0 where ``atoms`` is -1.
    """
    r = 0
    for name in names:
        t = tables[name]
        if t.n_samples:
            r = max(r, int(np.max(np.diff(t.indptr))))
    parts_a, parts_w = [], []
    for name in names:
        t = tables[name]
        n = t.n_samples
        counts = np.diff(t.indptr)
        if narrow and len(names) == 1 and t.offset == 0 and n and np.all(counts == r) \
                and t.indices.dtype.kind in "iu":
            return t.indices.reshape(n, r), np.asarray(t.weights, dtype=np.float64).reshape(n, r)
        ids = t.indices.astype(np.int64)
        ids += t.offset
        if n and np.all(counts == r):
            parts_a.append(ids.reshape(n, r))
            parts_w.append(np.asarray(t.weights, dtype=np.float64).reshape(n, r))
            continue
        a = np.full((n, r), -1, dtype=np.int64)
        w = np.zeros((n, r), dtype=np.float64)
        row = np.repeat(np.arange(n), counts)
        slot = np.arange(ids.size) - np.repeat(t.indptr[:-1], counts)
        a[row, slot] = ids
        w[row, slot] = t.weights
        parts_a.append(a)
        parts_w.append(w)
    if len(parts_a) == 1:  # one dataset: its arrays themselves (the weights a view of its table's), no copy
        return parts_a[0], parts_w[0]
    return np.concatenate(parts_a, axis=0), np.concatenate(parts_w, axis=0)


def segment_accumulate(ufunc, x, start):
    """``ufunc.accumulate`` within every segment ``x[start[k]:start[k+1]]``, as one call per segment computes it.

    Segments of one length are stacked and accumulated along their rows, so the
    loop is over the distinct lengths, not the segments, and every value is the
    one a call per segment gives (the same sequential sums).

    Parameters
    ----------
    ufunc : numpy.ufunc
        E.g. ``np.add`` (a cumulative sum per segment) or ``np.maximum``.
    x : ndarray of shape (n,)
    start : ndarray of shape (n_segments + 1,) of int64
        Ascending, ``start[0] == 0`` and ``start[-1] == n``; every segment non-empty.

    Returns
    -------
    ndarray of shape (n,)
    """
    out = np.empty_like(x)
    lengths = np.diff(start)
    for length in np.unique(lengths):
        first = start[:-1][lengths == length]
        if length == 1:
            out[first] = x[first]
            continue
        if first.size == 1:  # one segment of this length (a few long chains): slices, no gather
            a = int(first[0])
            ufunc.accumulate(x[a:a + length], out=out[a:a + length])
            continue
        idx = first[:, None] + np.arange(length)
        out[idx] = ufunc.accumulate(x[idx], axis=1)
    return out


def separating_edges(below, above):
    """Edges ``e`` with ``below < e <= above``: the midpoint where it separates, else ``above``.

    Parameters
    ----------
    below, above : ndarray of float64
        Finite scores, ``below < above`` entry by entry.

    Returns
    -------
    ndarray of float64
        A score ``s`` lies at or above its edge iff ``s >= above`` (for
        ``s`` in ``{below, above}``). The midpoint ``below + (above - below) / 2``
        rounds onto ``below`` for neighbouring doubles (1.0 and the next double;
        0 and 5e-324), so the upper score is the edge there; where
        ``above - below`` overflows (+-1.5e308) the midpoint is ``below / 2 + above / 2``.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        mid = below + (above - below) / 2
    wide = ~np.isfinite(mid)
    mid[wide] = below[wide] / 2 + above[wide] / 2
    return np.where((mid > below) & (mid <= above), mid, above)


def _quantile_cuts(s, distinct, chain_first, n_bins):
    """Cuts at ``n_bins`` quantiles of every chain with more distinct scores than that.

    The quantiles are NumPy's ``inverted_cdf`` ones (scores of the data), found
    by their positions in the sorted chain as :func:`numpy.quantile` finds them
    (index ``floor(m q - 1)``, plus one where that is not whole), for all
    chains at once; the cut is the first row of the quantile's score.
    """
    cut = distinct.copy()
    firsts = np.flatnonzero(chain_first)
    ends = np.append(firsts[1:], s.size)
    n_distinct = np.add.reduceat(distinct.astype(np.int64), firsts)
    wide = np.flatnonzero(n_distinct > n_bins)
    if wide.size == 0:
        return cut
    pos = quantile_positions(ends[wide] - firsts[wide], n_bins)
    pos += firsts[wide][:, None]
    distinct_pos = np.flatnonzero(distinct)
    is_wide = np.zeros(firsts.size, dtype=bool)
    is_wide[wide] = True
    cut[np.repeat(is_wide, ends - firsts)] = False
    cut[distinct_pos[np.searchsorted(distinct_pos, pos.ravel(), side="right") - 1]] = True
    cut[firsts] = True
    return cut


def bin_chains(scores, chain, n_chains, atoms, weights, n_atoms, *, n_bins=None, merge=True, order=None,
               row_bins=True, blocked_sums=False):
    """Bin every chain's rows by score, merge runs no goal separates, and sum the atom rates per bin.

    Parameters
    ----------
    scores : ndarray of shape (n_rows,) of float64
    chain : ndarray of shape (n_rows,) of int
        Every row's chain in ``0..n_chains-1``; every chain has rows (any
        integer dtype that holds ``n_chains - 1``).
    n_chains : int
    atoms, weights : ndarray of shape (n_rows, r) or (n_rows / R, r)
        Every row's atoms and entry weights (:func:`row_atoms`); row ``i`` reads
        row ``i % len(atoms)`` (the rows of ``R`` records scored by ``R`` models).
    n_atoms : int
    n_bins : int or None, default=None
        None: a bin per distinct score of a chain; ``K``: a chain with more than
        ``K`` distinct scores is cut at ``K`` quantiles of its scores.
    merge : bool, default=True
        Merge neighbouring bins whose rows all belong to the same atoms.
    order : ndarray of shape (n_rows,), default=None
        The rows sorted by (chain, score), when the caller has it
        (None: :func:`sorted_by_chain`).
    row_bins : bool, default=True
        Return ``order`` and ``bin_of_sorted``. False: both are None, and the
        per-row arrays are freed as soon as they are used (a lower peak of
        memory for a caller that needs only ``start``, ``edges`` and ``M``,
        which are the same either way).
    blocked_sums : bool, default=False
        Where the (bin, atom) sums are dense, no row is padded and every
        entry weighs more than 0: add them a block of rows at a time
        (``np.add.at``, the same sums bit for bit) instead of in (rows x
        atoms per row) or (bins x atoms) temporaries: a lower peak of memory
        (a boosted exact re-fit's).

    Returns
    -------
    BinnedChains
    """
    n = scores.shape[0]
    if order is None:
        order = sorted_by_chain(scores, chain, n_chains)
    s = scores[order]
    # the sorted rows' chains change at the chains' cumulative counts (every chain has rows): no gather
    chain_first = np.zeros(n, dtype=bool)
    chain_first[:1] = True
    codes = narrow_codes(chain, n_chains)
    ends = np.cumsum(np.bincount(codes if codes.dtype.itemsize <= 2 else codes.astype(np.intp, copy=False),
                                 minlength=n_chains))
    chain_first[ends[ends < n]] = True
    del codes, ends
    distinct = chain_first.copy()
    distinct[1:] |= s[1:] != s[:-1]
    cut = distinct if n_bins is None else _quantile_cuts(s, distinct, chain_first, n_bins)
    m, r = atoms.shape
    rows = order if m == n else order % m

    def same_atoms():
        """Whether each sorted row has the atoms of the row before it."""
        keys = _pattern_keys(atoms, n_atoms)
        if keys is not None:
            pk = keys[rows]
            return pk[1:] == pk[:-1]
        A = atoms[rows]
        return np.all(A[1:] == A[:-1], axis=1)

    same = same_atoms() if merge else None
    cut_pos = np.flatnonzero(cut)
    bin_of = np.cumsum(cut)
    bin_of -= 1
    if merge:
        impure = np.zeros(cut_pos.size, dtype=bool)
        impure[bin_of[1:][~same & ~cut[1:]]] = True  # the pattern changes inside the bin
        pure = ~impure
        # a bin joins the one before it when both are pure, of one pattern, and it is not its chain's first
        keep = np.ones(cut_pos.size, dtype=bool)
        np.logical_and(pure[1:], pure[:-1], out=keep[1:])
        keep[1:] &= same[cut_pos[1:] - 1]
        keep &= ~chain_first[cut_pos]
        np.logical_not(keep, out=keep)
        var_of_bin = np.cumsum(keep) - 1
        var = var_of_bin[bin_of]
        del bin_of, var_of_bin, impure, pure
        first_pos = cut_pos[keep]
        del keep
    else:
        var = bin_of
        first_pos = cut_pos
    n_vars = first_pos.size
    edges = s[first_pos].astype(np.float64, copy=True)
    lower = ~chain_first[first_pos]
    if np.any(lower):
        edges[lower] = separating_edges(s[first_pos[lower] - 1].astype(np.float64), edges[lower])
    start = np.append(var[chain_first], n_vars).astype(np.int64)
    del s, cut, distinct, cut_pos, chain_first, first_pos, lower  # only the bins' counts follow: per-row arrays go
    if r == 0 or n == 0:
        a = v = np.zeros(0, dtype=np.int64)
        val = np.zeros(0)
    elif n_vars * n_atoms <= max(4 * n * r, 1 << 22):
        # few (bin, atom) pairs: count every entry into a dense (bin, atom) table, rows in their own order
        var_of_row = np.empty(n, dtype=np.int64)
        var_of_row[order] = var
        same = None  # the runs of one pattern are not read on this path
        if not row_bins:
            var = rows = None  # (``order`` is the caller's: it holds it)
        padded = bool(atoms.min() < 0)
        size = n_vars * n_atoms
        # positive entries: a pair is present iff its sum is positive (no padding: every weight is an entry's)
        positive = bool(np.all(weights[atoms >= 0] > 0) if padded else weights.min() > 0)
        blocked = positive and blocked_sums and not padded
        blocks = _record_blocks(var_of_row, m) if positive and not blocked else None
        if blocked:  # one record at a time, each a block of rows at a time
            sums = np.zeros(size)
            for j in range(n // m):
                _add_rows(sums, var_of_row[j * m:(j + 1) * m], atoms, weights, n_atoms)
            del var_of_row
            key = np.flatnonzero(sums > 0)
        elif blocks is not None:
            sums = _sums_by_record(var_of_row, blocks, atoms, weights, n_atoms, size, padded)
            key = np.flatnonzero(sums > 0)
        elif positive and not padded and m == n and _columns_disjoint(*_column_ranges(atoms)):
            sums = _sums_by_column(var_of_row, atoms, weights, n_atoms, size)  # (var_of_row is scaled in place)
            key = np.flatnonzero(sums > 0)
        else:
            key = np.empty((n // m, m, r), dtype=np.int64)  # bin * n_atoms + atom, built in place
            np.multiply(var_of_row.reshape(-1, m)[:, :, None], n_atoms, out=key)
            key += atoms[None]
            key = key.reshape(-1)
            del var_of_row
            # one record: the weights themselves (np.bincount copies a broadcast view's)
            wv = weights.reshape(-1) if m == n else np.broadcast_to(weights, (n // m, m, r)).ravel()
            if padded:
                valid = np.broadcast_to(atoms >= 0, (n // m, m, r)).ravel()
                key, wv = key[valid], wv[valid]
            sums = np.bincount(key, weights=wv, minlength=size)
            if positive:
                del key, wv  # the (n_rows * r) keys go before the (bin, atom) pairs' are found
                key = np.flatnonzero(sums > 0)
            else:  # zero weights: keep their (bin, atom) pairs as the entries they are
                key = np.flatnonzero(np.bincount(key, minlength=size))
        val = sums[key]
        del sums
        v, a = np.divmod(key, n_atoms)
        del key
    else:
        # many: one sum per run of rows of one bin and one pattern (a pure bin is one run)
        run = np.empty(n, dtype=bool)
        run[:1] = True
        run[1:] = (var[1:] != var[:-1]) | ~(same if same is not None else same_atoms())
        run_pos = np.flatnonzero(run)
        sums = np.add.reduceat(weights[rows], run_pos, axis=0)
        ids = atoms[rows[run_pos]]
        col = np.repeat(var[run_pos], r).reshape(-1, r)
        valid = ids >= 0
        a, v, val = ids[valid], col[valid], sums[valid]
    M = _csc(a, v, val, n_atoms, n_vars)
    if not row_bins:
        order = var = None
    return BinnedChains(start=start, edges=edges, order=order, bin_of_sorted=var, M=M)


def bin_codes(codes, n_codes, atoms, weights, n_atoms):
    """:func:`bin_chains` of chains already binned: every bin's atom rates, with no sort of the rows.

    Chain ``k`` (one scoring of the ``m`` rows, a boosted run's kept
    quantile bins) gives row ``i`` the bin ``codes[k][i]`` in
    ``0..n_codes[k]-1``, every bin holding a row. :func:`bin_chains` of these
    codes as scores (``n_bins`` at least every chain's bins, ``merge=False``)
    makes each code a bin of its own, in code order, and sums each bin's
    entries in row order: so does this, one chain at a time, bit for bit the
    same ``start`` and ``M``, without sorting the rows by code or forming
    the (chains x rows) arrays of scores and order.

    Parameters
    ----------
    codes : sequence of ndarray of shape (m,) of unsigned int
        Each chain's bin of every row.
    n_codes : sequence of int
        Each chain's number of bins (its largest code + 1).
    atoms, weights : ndarray of shape (m, r)
        Every row's atoms and entry weights (:func:`row_atoms`).
    n_atoms : int

    Returns
    -------
    BinnedChains or None
        Its ``start`` and ``M`` (``edges``, ``order`` and ``bin_of_sorted``
        are None: the caller knows the bins' edges). None where
        :func:`bin_chains` would not take its dense per-chain sums (a zero
        weight, no atoms, or too many (bin, atom) pairs): then call it.
    """
    m, r = atoms.shape
    R = len(codes)
    n_codes = np.asarray(n_codes, dtype=np.int64)
    n_vars = int(n_codes.sum())
    n = R * m
    if r == 0 or n == 0 or R < 2 or not n_vars * n_atoms <= max(4 * n * r, 1 << 22):
        return None
    padded = bool(np.any(atoms < 0))
    if not (bool(np.all(weights[atoms >= 0] > 0)) if padded else weights.min() > 0):
        return None
    start = np.zeros(R + 1, dtype=np.int64)
    np.cumsum(n_codes, out=start[1:])
    sums = np.zeros(n_vars * n_atoms)
    if not padded:  # a block of rows at a time: no per-row temporaries
        for k in range(R):
            _add_rows(sums[start[k] * n_atoms: start[k + 1] * n_atoms], codes[k], atoms, weights, n_atoms)
        return _binned_codes(sums, start, n_atoms, n_vars)
    # padded rows (a goal on some rows only): one bincount a chain over its valid entries (faster than
    # masking each block; such tables are smaller)
    valid = (atoms >= 0).ravel()
    w = weights.ravel()[valid]
    for k in range(R):
        key = (np.asarray(codes[k], dtype=np.int64)[:, None] * n_atoms + atoms).ravel()[valid]
        sums[start[k] * n_atoms: start[k + 1] * n_atoms] = np.bincount(key, weights=w,
                                                                       minlength=int(n_codes[k]) * n_atoms)
    return _binned_codes(sums, start, n_atoms, n_vars)


#: Rows a block of :func:`_add_rows` (its temporaries: a few times this many entries).
_ADD_BLOCK_ROWS = 8192


def _add_rows(out, var_of_row, atoms, weights, n_atoms):
    """``out[v * n_atoms + a] += w`` for every entry ``(a, w)`` of every row, the row's bin ``v`` from ``var_of_row``
    (rows without padding).

    The entries are added one at a time in row order, then slot order (``np.add.at``), a block of rows at a
    time: the sums :func:`numpy.bincount` forms over all the entries at once (it adds them in that order onto
    zeros), bit for bit, with temporaries of one block's entries instead of every row's (issue 33: 3 to 4
    arrays of 8 bytes a row, and the bincount's copies of a strided column of weights).
    """
    m = atoms.shape[0]
    for a in range(0, m, _ADD_BLOCK_ROWS):
        b = min(a + _ADD_BLOCK_ROWS, m)
        key = np.asarray(var_of_row[a:b], dtype=np.int64)[:, None] * n_atoms
        key = key + atoms[a:b]  # int64 whatever the atoms' integer dtype
        np.add.at(out, key.reshape(-1), weights[a:b].reshape(-1))


def _binned_codes(sums, start, n_atoms, n_vars):
    """:func:`bin_codes`'s result from the dense (bin, atom) sums (positive where a pair is present)."""
    key = np.flatnonzero(sums > 0)
    v, a = np.divmod(key, n_atoms)
    M = _csc(a, v, sums[key], n_atoms, n_vars)
    return BinnedChains(start=start, edges=None, order=None, bin_of_sorted=None, M=M)


def _record_blocks(var_of_row, m):
    """Each record's bin range ``[lo, hi)`` when the records' rows fall in disjoint ascending bin ranges, else None.

    Rows ``j*m .. j*m + m - 1`` are record ``j``'s (one scoring of the ``m``
    rows); with one chain per record (a mixture's first pass) its bins are
    its own. None for a single record (nothing to split).
    """
    V = var_of_row.reshape(-1, m)
    if V.shape[0] < 2 or m == 0:
        return None
    lo, hi = V.min(axis=1), V.max(axis=1) + 1
    return (lo, hi) if np.all(lo[1:] >= hi[:-1]) else None


def _sums_by_record(var_of_row, blocks, atoms, weights, n_atoms, size, padded):
    """The dense (bin, atom) sums, one record at a time (its bins are its own).

    Every sum is the one :func:`numpy.bincount` over all rows gives (a bin's
    entries come from one record, in the same order), with temporaries of one
    record's entries instead of all records'.
    """
    lo, hi = blocks
    m = atoms.shape[0]
    V = var_of_row.reshape(-1, m)
    valid = (atoms >= 0).ravel() if padded else None
    w = weights.ravel() if valid is None else weights.ravel()[valid]
    out = np.zeros(size)
    for j in range(V.shape[0]):
        a, b = int(lo[j]), int(hi[j])
        key = ((V[j] - a)[:, None] * n_atoms + atoms).ravel()
        if valid is not None:
            key = key[valid]
        out[a * n_atoms: b * n_atoms] = np.bincount(key, weights=w, minlength=(b - a) * n_atoms)
    return out


def _column_ranges(atoms):
    """Every column's least and greatest atom id (lists of int), a column at a time (NumPy reduces a narrow
    (n, r) array along axis 0 some 30x slower than r columns)."""
    cols = [atoms[:, j] for j in range(atoms.shape[1])]
    return [int(c.min()) for c in cols], [int(c.max()) for c in cols]


def _columns_disjoint(lo, hi):
    """Whether every column holds atoms above all of the column before's (its ids ``lo``, ``hi`` of
    :func:`_column_ranges`), so that every atom appears in one column only, as a label's atoms and then a
    group's do."""
    return all(lo[j + 1] > hi[j] for j in range(len(lo) - 1))


def _sums_by_column(var_of_row, atoms, weights, n_atoms, size):
    """The dense (bin, atom) sums of one record, one column of ``atoms`` at a time.

    Where every atom appears in one column only (:func:`_columns_disjoint`),
    each (bin, atom) sum adds the same entries in the same (row) order as
    :func:`numpy.bincount` over all the entries at once, and the other
    columns add exact zeros to it: the same sums, with (n_rows,) temporaries
    instead of (n_rows, r) ones. ``var_of_row`` is overwritten (scaled by ``n_atoms``).
    """
    base = np.multiply(var_of_row, n_atoms, out=var_of_row)  # in place: the caller is done with it
    out = None
    key = np.empty_like(base)
    for j in range(atoms.shape[1]):
        np.add(base, atoms[:, j], out=key)
        col = np.bincount(key, weights=weights[:, j], minlength=size)
        if out is None:
            out = col
        else:
            out += col
    return out


def _pattern_keys(atoms, n_atoms):
    """One int64 per row that is equal for two rows iff their atoms are (None when it would overflow)."""
    m, r = atoms.shape
    if r == 0:
        return np.zeros(m, dtype=np.int64)
    if r * np.log2(n_atoms + 1.0) >= 62:
        return None
    keys = np.zeros(m, dtype=np.int64)
    for j in range(r):  # mixed radix, digits atom + 1 (0 for the padding -1)
        keys *= n_atoms + 1
        keys += atoms[:, j]  # in int64 (ids of a narrow dtype are not widened by ``+ 1`` alone)
        keys += 1
    return keys


def _csc(a, v, val, n_atoms, n_vars):
    """The (n_atoms, n_vars) CSC matrix of entries sorted by bin, duplicates summed."""
    key = v.astype(np.int64) * n_atoms + a
    if key.size > 1 and not np.all(key[1:] > key[:-1]):  # repeated (bin, atom): bins with several patterns
        if n_vars * n_atoms <= max(4 * key.size, 1 << 22):  # a dense count is cheaper than a sort
            sums = np.bincount(key, weights=val, minlength=n_vars * n_atoms)
            key = np.flatnonzero(np.bincount(key, minlength=n_vars * n_atoms))
            val = sums[key]
        else:
            key, inverse = np.unique(key, return_inverse=True)
            val = np.bincount(inverse.reshape(-1), weights=val, minlength=key.size)
        v, a = np.divmod(key, n_atoms)
    indptr = np.zeros(n_vars + 1, dtype=np.int64)
    np.cumsum(np.bincount(v, minlength=n_vars), out=indptr[1:])
    M = sp.csc_matrix((val, a.astype(np.int32), indptr), shape=(n_atoms, n_vars))
    M.has_sorted_indices = True
    return M
