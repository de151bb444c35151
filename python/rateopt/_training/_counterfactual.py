"""Counterfactual memberships: the atom tables a dataset would have with every label set to 1, or to 0.

The plug-in oracle (:class:`rateopt.oracles.PlugInOracle`, methods_spec §1.3
item 4) needs, for every row ``j``, the net coefficients ``u_j^(1)`` and
``u_j^(0)`` it would have if its label were ``y_j := 1`` or ``y_j := 0``: a row's
expected cost under a class-probability estimate ``eta_j`` is then
``(eta_j u_j^(1) + (1 - eta_j) u_j^(0)) d_j``. They come from the subsets
(contexts) the compiler merged into each atom (``GameSpec.atom_contexts``):

* every context's predicate is evaluated again on a copy of its dataset whose
  labels are all 1 (all 0); predicates are row-wise, so row ``j``'s membership
  in the copy is its membership had its own label been changed;
* an atom's weight stays ``w_j / W(S_a)`` with the normalizer ``W(S_a)`` of the
  *real* labels (the one in the atom table): the coefficients the multipliers
  see are fixed, only the row's membership changes.

Predicates that never read labels (groups, masks, baseline decisions) give the
real membership under both labels. A mask the user computed from the labels
(``ctx.subset(ds.y == 1)``) is such a fixed mask, so it gives wrong
counterfactuals silently: state label conditions with ``positive()`` and
``negative()``.
"""

from __future__ import annotations

import types

import numpy as np

from .._language._lowering import scaled_by_max
from ..exceptions import RateoptError

__all__ = ["BlockMemberships", "counterfactual_memberships"]


def _relabeled(ds, label):
    """A stand-in for ``ds`` whose every label is ``label`` (what predicates read: y, groups, baseline)."""
    return types.SimpleNamespace(name=ds.name, n_samples=ds.n_samples, y=np.full(ds.n_samples, label, dtype=np.int64),
                                 groups=ds.groups, baseline=ds.baseline)


def _membership(ctx, ds):
    return np.asarray(ctx._predicate.evaluate(ds), dtype=bool).reshape(-1)


class BlockMemberships:
    """One dataset's memberships with every label set to 1 and to 0, and its atoms' real normalizers.

    Attributes
    ----------
    M1, M0 : ndarray of shape (n_samples, n_local_atoms) of bool
        Row ``j`` belongs to atom ``a`` had its label been 1 (0).
    exponents : ndarray of shape (n_local_atoms,) of int64
        The power of two the atom table rescales each atom's weights by.
    totals : ndarray of shape (n_local_atoms,)
        The sum of each atom's real members' rescaled weights: the atom's
        weight of row ``j`` is ``ldexp(w_j, -exponents[a]) / totals[a]``.
    """

    def __init__(self, M1, M0, exponents, totals):
        self.M1, self.M0, self.exponents, self.totals = M1, M0, exponents, totals

    def inverse_normalizers(self):
        """``1 / W(S_a)`` per atom (``w_j`` times it is the atom's weight of row ``j``, up to rounding)."""
        return np.ldexp(1.0 / self.totals, -self.exponents)


def counterfactual_memberships(spec):
    """Per dataset of ``spec``, the memberships under all-1 and all-0 labels, with the real normalizers.

    Parameters
    ----------
    spec : GameSpec
        A compiled problem (``spec_from_problem``), which keeps the contexts of
        every atom.

    Returns
    -------
    list of BlockMemberships
        One per block of ``spec``. On rows whose real label is ``y``, the
        memberships under ``y`` are the real ones.

    Raises
    ------
    RateoptError
        If the spec keeps no contexts (built by hand), the problem has
        trainable thresholds, a dataset has no labels, or an atom merges
        subsets whose memberships differ under relabeling (their shared
        coefficient then has no single counterfactual).
    """
    contexts = getattr(spec, "atom_contexts", ())
    if len(contexts) != spec.n_atoms:
        raise RateoptError("counterfactual memberships need the problem's atom contexts: build the spec with "
                           "spec_from_problem(problem)")
    if getattr(spec, "n_offsets", 0):
        raise RateoptError("counterfactual memberships of thresholded (ROC-AUC) atoms are not defined")
    out = []
    for blk in spec.blocks:
        ids = np.asarray(blk.atom_ids, dtype=np.int64)
        n, k = blk.X.n_samples, ids.size
        if k == 0:
            z = np.zeros((n, 0), dtype=bool)
            out.append(BlockMemberships(z, z, np.zeros(0, dtype=np.int64), np.ones(0)))
            continue
        ds = contexts[ids[0]][0].dataset
        if ds.y is None:
            raise RateoptError(f"dataset {ds.name!r} has no labels: its counterfactual memberships are undefined")
        views = {1: _relabeled(ds, 1), 0: _relabeled(ds, 0)}
        w = np.asarray(ds.weights, dtype=np.float64)
        M = {1: np.zeros((n, k), dtype=bool), 0: np.zeros((n, k), dtype=bool)}
        exponents, totals = np.zeros(k, dtype=np.int64), np.zeros(k)
        for local, gid in enumerate(ids):
            ctxs = contexts[gid]
            scaled, exponents[local] = scaled_by_max(w[_membership(ctxs[0], ds)])  # the atom table's rescaling
            totals[local] = np.sum(scaled)
            for label, view in views.items():
                m = _membership(ctxs[0], view)
                for other in ctxs[1:]:
                    if not np.array_equal(_membership(other, view), m):
                        raise RateoptError(
                            f"atom {gid} merges the subsets {ctxs[0].label!r} and {other.label!r}, which have the "
                            f"same members but differ when labels are set to {label}: state label conditions with "
                            "positive()/negative() rather than masks computed from the labels")
                M[label][:, local] = m
        out.append(BlockMemberships(M[1], M[0], exponents, totals))
    return out

