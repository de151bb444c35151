"""Threshold re-fit over recorded iterates: the best mixture of (iterate, threshold rule) pairs.

Each recorded linear (or kernel) iterate ``theta_r`` scores every row; a rule
on its scores is a non-decreasing table over score bins (a mixture of
thresholds, :mod:`rateopt._postprocess._lp`). A mixture puts mass ``mu_r`` on
iterate ``r`` and follows its rule, so a row's expected decision is
``sum_r mu_r x_r(bin_r(row))``, linear in ``y_r = mu_r x_r``: the best such
mixture under the training goals is one LP over every record's bins.
The recorded iterates themselves (threshold 0) are among its candidates, so
the re-fit is never worse on the training data than the best mixture of the
iterates as trained, and never worse than any single iterate with a tuned
threshold (up to the bins).
"""

from __future__ import annotations

import numpy as np

from .._predictors._boosted_mixture import THRESHOLDED_KIND, boosted_mixture_from_file
from .._predictors._boosting import return_free_memory
from .._predictors._archive import write_model
from .._predictors._linear import BINARY_CLASSES, StochasticClassifier, classifier_from_file
from .._predictors._draws import pick_models, row_uniforms, two_columns
from ..exceptions import RateoptError
from ._lp import Chains, solve_threshold_lp, solve_threshold_lp_generated
from ._bins import bin_chains, bin_codes, row_atoms, separating_edges
from ._rule import ThresholdRule, chain_bins, check_n_bins

__all__ = ["AUTO_BINS", "AUTO_EXACT_MAX", "MIXTURE_FORMAT", "ThresholdedMixture",
           "boosted_thresholded_mixture_from_file", "fit_thresholded_mixture", "thresholded_mixture_from_file"]

#: The format name of a saved :class:`ThresholdedMixture`.
MIXTURE_FORMAT = "rateopt-thresholded-mixture"


class ThresholdedMixture:
    """A mixture of scoring models, each followed by its own threshold rule.

    ``predict_proba`` returns the probability of each decision, shape
    ``(n_samples, 2)``, as rateopt's other classifiers.

    Parameters
    ----------
    scorer : StochasticClassifier
        Gives the support models' scores (``scorer.scores(X)``, one column per model).
    mu : ndarray of shape (n_models,)
        Mixture weights (sum 1).
    start : ndarray of shape (n_models + 1,)
        Model ``r``'s bins are ``edges[start[r]:start[r+1]]``.
    edges : ndarray
        Lower score edges of the bins.
    table : ndarray
        Probability of a positive decision per bin (non-decreasing per model).
    support : ndarray of shape (n_models,) of int64, default=None
        Which candidate (recorded iterate) each model is (None: ``0..n_models-1``).
    """

    kind = "thresholded"

    classes_ = BINARY_CLASSES

    def __init__(self, scorer, mu, start, edges, table, support=None):
        self.scorer = scorer
        self.mu = np.asarray(mu, dtype=np.float64)
        self.start = np.asarray(start, dtype=np.int64)
        self.edges = np.asarray(edges, dtype=np.float64)
        self.table = np.asarray(table, dtype=np.float64)
        self.support = (np.arange(self.mu.shape[0], dtype=np.int64) if support is None
                        else np.asarray(support, dtype=np.int64))
        self.n_features_in_ = scorer.n_features_in_
        self.feature_names_in_ = scorer.feature_names_in_  # the scorer checks a DataFrame's columns

    @property
    def n_models(self) -> int:
        """Number of support models."""
        return self.mu.shape[0]

    def _model_probabilities(self, X):
        S = np.asarray(self.scorer.scores(X), dtype=np.float64)
        out = np.empty_like(S)
        for r in range(self.n_models):
            out[:, r] = self.table[chain_bins(self.start, self.edges, r, S[:, r])]
        return out

    def predict_proba(self, X):
        """Probability of a positive decision (over the draw of the model and of its threshold).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
            ``[1 - p, p]`` with ``p`` the probability of a positive decision.
        """
        p = self._model_probabilities(X) @ self.mu
        return two_columns(p)

    def predict(self, X, random_state=0, row_key=None):
        """0/1 decisions: a row draws a model by ``mu``, then its threshold, both from hashes of the row.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        random_state : int, default=0
            Seed of the per-row draws.
        row_key : array-like of shape (n_samples,), default=None
            Row ids (integers or strings): a row's draws are keyed on its id, so
            its decision is the same in any batch and order. None: keyed on the
            row's content and its occurrence among identical rows of the batch
            (:mod:`rateopt._predictors._draws`).

        Returns
        -------
        ndarray of shape (n_samples,) of int64
        """
        P = self._model_probabilities(X)
        Xr = X if hasattr(X, "tocsr") else np.asarray(X)
        r = pick_models(self.mu, row_uniforms(Xr, random_state, row_key))
        return (row_uniforms(Xr, random_state, row_key, stream=1) < P[np.arange(P.shape[0]), r]).astype(np.int64)

    def save(self, path):
        """Save to ``path`` (``.npz``; no pickle); :func:`rateopt.load` reads it back.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        """
        sc = self.scorer
        rule = {"rule_start": self.start, "rule_edges": self.edges, "rule_table": self.table, "support": self.support}
        if not isinstance(sc, StochasticClassifier):  # prefixes of one booster: its trees and the rules
            sc.save_as(path, THRESHOLDED_KIND, rule, {"columns": [], "cells": [[] for _ in range(self.n_models)]})
            return
        write_model(path, {"kind": "stochastic", "columns": [], "cells": [[] for _ in range(self.n_models)]},
                    sc.weights_, sc.biases_, self.mu, sc.feature_map, MIXTURE_FORMAT, sc.feature_names_in_,
                    extra_arrays=rule)

    def __repr__(self):
        return f"ThresholdedMixture(n_models={self.n_models}, n_bins={self.edges.size})"


def thresholded_mixture_from_file(meta, arrays, path):
    """The :class:`ThresholdedMixture` of a saved file (a reader of ``rateopt._io.READERS``): the models' arrays
    checked as a saved mixture's, the tables as a threshold rule's, one chain per model."""
    scorer = classifier_from_file(meta, arrays, path)
    if not isinstance(scorer, StochasticClassifier):  # pragma: no cover - kind "stochastic" gives one
        raise RateoptError(f"{path!r} is not a valid thresholded mixture file")
    return _with_rule(scorer, meta, arrays, path)


def boosted_thresholded_mixture_from_file(meta, arrays, path):
    """The :class:`ThresholdedMixture` of boosted prefixes of a saved file (:data:`THRESHOLDED_KIND` under the
    boosted model format; a reader of ``rateopt._io.READERS``)."""
    return _with_rule(boosted_mixture_from_file(meta, arrays, path, kind=THRESHOLDED_KIND), meta, arrays, path)


def _with_rule(scorer, meta, arrays, path):
    """A saved mixture's scorer with its saved threshold rules (one table per support model)."""
    rule = ThresholdRule.from_arrays(meta, arrays, path)
    if rule.n_cells != scorer.n_models:
        raise RateoptError(f"{path!r} is not a valid thresholded mixture file: {rule.n_cells} tables for "
                           f"{scorer.n_models} models")
    support = np.asarray(arrays.get("support", np.arange(scorer.n_models)))
    if support.dtype.kind not in "iu" or support.shape != (scorer.n_models,) or np.any(support < 0):
        raise RateoptError(f"{path!r} is not a valid thresholded mixture file: 'support' must be one "
                           "non-negative iterate index per model")
    return ThresholdedMixture(scorer, scorer.probabilities_, rule.start, rule.edges, rule.table, support)


#: ``n_bins="auto"``: every distinct score while models x rows is at most this, else :data:`AUTO_BINS` bins.
AUTO_EXACT_MAX = 1_000_000
AUTO_BINS = 256


def fit_thresholded_mixture(compiled, scorer, features, *, n_bins="auto", epsilon=0.0, scores=None):
    """The best mixture of thresholded models under a compiled problem.

    Parameters
    ----------
    compiled : CompiledProblem
    scorer : StochasticClassifier
        Every candidate model (one column of ``scorer.scores``).
    features : mapping of str to array-like
        Per dataset of the problem, its features.
    n_bins : int, None or "auto", default="auto"
        Bins per model in the first LP over every model (None: every distinct
        score, exact over all thresholds of all models; ``"auto"``: exact
        while models x rows is at most 1,000,000, else 256 quantile bins);
        the models it keeps are then re-fitted with every distinct score as a
        bin (exact over all their thresholds).
    epsilon : float, default=0.0
    scores : tuple of two ndarrays of shape (n_models, n_rows), or KeptBins, default=None
        Every model's scores of the problem's rows (its datasets' rows in
        order) and each model's row order by score, when known already:
        ``scorer`` does not score the rows again. Or a boosted run's kept
        quantile bins (``_predictors._boosted_mixture.KeptBins``): the first
        LP reads them (when ``n_bins`` is theirs), and the exact re-fit scores
        only the support models whose exact scores were not kept.

    Returns
    -------
    mixture : ThresholdedMixture
        Restricted to the models of positive weight.
    solution : ThresholdLPSolution
    """
    n_bins = check_n_bins(n_bins, auto=True)
    if n_bins == "auto":
        rows = sum(np.asarray(features[n]).shape[0] if not hasattr(features[n], "nnz") else features[n].shape[0]
                   for n in compiled.datasets)
        n_bins = None if scorer.n_models * rows <= AUTO_EXACT_MAX else AUTO_BINS
    kept = scores if hasattr(scores, "binned_scores") else None  # a boosted run's kept quantile bins
    if kept is not None:
        if n_bins != kept.n_bins:  # other bins than the kept ones: every candidate is scored again
            kept = scores = None
        else:
            mixture, sol = _fit_kept(compiled, scorer, kept, epsilon)
    if kept is None:
        sorted_scores = _sorted_scores(compiled, scorer, features, scores)
        mixture, sol = _fit(compiled, scorer, sorted_scores, n_bins, epsilon)
    if n_bins is not None:
        # Exact re-fit on the support: every distinct score of the chosen models is a bin. A binned rule
        # is one of these rules, so the objective can only improve (the support has at most m + 2 models).
        # The support's scores and sort are the first LP's rows of those models (no re-scoring, no re-sort),
        # or, from kept bins, the kept exact scores and a fresh scoring of the other support models.
        keep = mixture.support
        if kept is None:
            support = (sorted_scores[0][keep], sorted_scores[1][keep])
            del sorted_scores  # the candidates' scores: not needed by the re-fit's LP
        else:
            support = _support_scores(compiled, mixture.scorer, features, kept.exact(keep))
        # only the support's bins reach the LP: its scores, sort and per-row bins are freed before it
        start, edges, M = _chain_bins(compiled, support, None, own=True, narrow=kept is not None)
        del support
        # a boosted run's support: its LP over every distinct score by column generation (its dense increment
        # form alone would be the solution's memory peak)
        exact, exact_sol = _fit_binned(compiled, mixture.scorer, start, edges, M, epsilon, generate=kept is not None)
        if exact_sol.slack <= sol.slack and exact_sol.objective <= sol.objective:
            exact.support = mixture.support[exact.support]
            return exact, exact_sol
    return mixture, sol


def _fit_kept(compiled, scorer, kept, epsilon):
    """The first LP over every candidate from a boosted run's kept quantile bins (``KeptBins``): the kept
    one-byte codes are the bins (no sort of the rows) where :func:`bin_codes` counts them, else the codes are
    sorted as scores. Only the bins' counts reach the LP (the rows' atoms are freed before it)."""
    codes, bounds = kept.codes()
    edges = np.concatenate([np.concatenate((lows[:1], separating_edges(below[1:], lows[1:])))
                            for lows, below in bounds])
    atoms, weights = row_atoms(compiled.tables, compiled.datasets, narrow=True)
    binned = bin_codes(codes, [lows.shape[0] for lows, _ in bounds], atoms, weights, compiled.n_atoms)
    del atoms, weights, codes
    if binned is not None:  # the kept codes are the bins: no sort of the rows by code
        start, M = binned.start, binned.M
        del binned
    else:
        *sorted_scores, _ = kept.binned_scores()
        start, edges, M = _chain_bins(compiled, sorted_scores, kept.n_bins, edges=edges, own=True, narrow=True)
        del sorted_scores
    out = _fit_binned(compiled, scorer, start, edges, M, epsilon)
    del start, M
    if kept.trims_heap:
        return_free_memory()  # the LP's and the binning's freed blocks, before the exact re-fit's
    return out


def _sorted_scores(compiled, scorer, features, scores=None, sort=True):
    """Every model's scores of the problem's rows, shape (n_models, n_rows), and each model's row order by score.

    The rows are the problem's datasets' rows in order; the scorer scores each dataset once, all its models
    together (unless ``scores``, the same arrays, are given).
    """
    names = compiled.datasets
    if scores is not None:
        by_model, by_score = (np.ascontiguousarray(a, dtype=d) for a, d in zip(scores, (np.float64, np.int64)))
        n = sum(compiled.tables[name].n_samples for name in names)
        if by_model.shape != (scorer.n_models, n) or by_score.shape != by_model.shape:
            raise ValueError(f"scores must be two arrays of shape (n_models, n_rows) = {(scorer.n_models, n)}, "
                             f"got {by_model.shape} and {by_score.shape}")
        return by_model, by_score
    pooled = np.concatenate([np.asarray(scorer.scores(features[n]), dtype=np.float64) for n in names], axis=0)
    by_model = np.ascontiguousarray(pooled.T)
    return by_model, np.argsort(by_model, axis=1) if sort else None


def _support_scores(compiled, scorer, features, known):
    """The exact scores of ``scorer``'s models (shape (n_models, n_rows)) and each one's rows sorted by score
    (stable): ``known[j]`` where given, the others scored (one pass of ``scorer.subset`` over the rows)."""
    missing = [j for j, s in enumerate(known) if s is None]
    if missing:
        fresh = _sorted_scores(compiled, scorer.subset(missing, np.full(len(missing), 1.0 / len(missing))),
                               features, sort=False)[0]
        for i, j in enumerate(missing):
            known[j] = fresh[i]
    # one model (the usual boosted support): its scores themselves, no stacked copy (only read from here on)
    by_model = known[0][None, :] if len(known) == 1 else np.stack(known)
    return by_model, np.argsort(by_model, axis=1, kind="stable")


def _fit(compiled, scorer, sorted_scores, n_bins, epsilon, edges=None):
    """One LP over every model's bins: the rows sorted once per model, bins merged where no goal separates them.

    ``sorted_scores``: :func:`_sorted_scores` of ``scorer``'s models. ``edges``: the bins' edges, where the
    scores are bin numbers (a boosted run's kept bins) and the edges their real scores.
    """
    return _fit_binned(compiled, scorer, *_chain_bins(compiled, sorted_scores, n_bins, edges=edges), epsilon)


def _chain_bins(compiled, sorted_scores, n_bins, edges=None, own=False, narrow=False):
    """Every model's bins of :func:`_fit`: ``start`` (model ``r``'s bins are ``start[r]:start[r+1]``), their
    lower edges and every atom's rate per bin ``M``; the per-row arrays of the binning are freed on return.

    ``own``: the caller hands ``sorted_scores``' row order over (it is offset in place into the flat order).
    ``narrow``: the rows' atoms as the problem's table holds them where it can (``row_atoms(narrow=True)``:
    no int64 copy), and the bins' sums added a block of rows at a time (``blocked_sums``): the same bins
    and sums, a lower peak of memory (a boosted run's).
    """
    names = compiled.datasets
    by_model, by_score = sorted_scores
    R, n = by_model.shape  # model r's scores of every row are rows r*n .. r*n + n - 1 of the flat array
    offsets = (np.arange(R, dtype=np.int64) * n)[:, None]
    if own and by_score.dtype == np.int64 and by_score.flags.c_contiguous and by_score.flags.writeable:
        by_score += offsets
        order = by_score.reshape(-1)
    else:
        order = (by_score + offsets).ravel()
    del by_score, sorted_scores
    atoms, weights = row_atoms(compiled.tables, names, narrow=narrow)
    # quantile bins hold rows of every membership pattern: merging runs would find next to nothing to merge
    # every row's model, in the narrowest dtype bin_chains reads it as (one byte for up to 256 models)
    chain = np.repeat(np.arange(R, dtype=np.uint8 if R <= 1 << 8 else np.int64), n)
    binned = bin_chains(by_model.reshape(-1), chain, R, atoms, weights, compiled.n_atoms, n_bins=n_bins,
                        order=order, merge=n_bins is None, row_bins=False, blocked_sums=narrow)
    start, edges_all = binned.start, binned.edges
    if edges is not None:
        if edges.shape != edges_all.shape:
            raise ValueError(f"edges: {edges.shape[0]} given for {edges_all.shape[0]} bins")
        edges_all = edges
    return start, edges_all, binned.M


def _fit_binned(compiled, scorer, start, edges_all, M, epsilon, generate=False):
    """:func:`_fit`'s LP and mixture, given every model's bins: ``start`` (model ``r``'s bins are
    ``start[r]:start[r+1]``), their lower edges and every atom's rate per bin ``M``. ``generate``: the LP is
    solved by column generation (``solve_threshold_lp_generated``: the same optimum, on a few of the bins)."""
    R = start.shape[0] - 1
    chains = Chains(start=start, record=np.arange(R, dtype=np.int64), n_records=R, M=M)
    sol = (solve_threshold_lp_generated if generate else solve_threshold_lp)(compiled, chains, epsilon=epsilon)
    keep = np.flatnonzero(sol.mu > 1e-12)
    mu = sol.mu[keep] / sol.mu[keep].sum()
    new_start, new_edges, new_table = [0], [], []
    for r in keep:
        a, b = start[r], start[r + 1]
        new_edges.append(edges_all[a:b])
        new_table.append(sol.x[a:b])
        new_start.append(new_start[-1] + (b - a))
    if isinstance(scorer, StochasticClassifier):
        models = type(scorer)(scorer.weights_[keep], scorer.biases_[keep], mu, feature_map=scorer.feature_map,
                             feature_names=scorer.feature_names_in_)
    else:  # a scorer of other models (a BoostedMixture of prefixes) keeps its own support
        models = scorer.subset(keep, mu)
    return ThresholdedMixture(models, mu, new_start, np.concatenate(new_edges), np.concatenate(new_table),
                              keep), sol
