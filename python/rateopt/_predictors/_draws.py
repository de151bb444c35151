"""The per-row draw of every stochastic classifier, and a mixture's exact decision distribution.

A stochastic classifier (a mixture of models, a randomized threshold or
plug-in rule, a ramp rule) reports the exact probability of each decision
(``predict_proba``) and draws one decision per row (``predict``) from a uniform
number ``u(row)``:

* with ``row_key`` (one id per row, integers or strings), ``u`` is a hash of
  the seed and the row's id: a row's decision is the same in any batch and
  any order (give the same ids to the same rows);
* without it, ``u`` is a hash of the seed, the row's content (its features,
  or the scores or probabilities a rule reads) and the row's *occurrence*
  among the rows of the batch with the same content (0 for the first, 1 for
  the second, ...). Identical rows therefore get independent draws, so that
  within a batch the drawn rates are within binomial noise of
  ``predict_proba``'s, also on tied scores and repeated feature rows. The same
  input gives the same decisions; a row whose content is unique in its batch
  gets the same decision in any batch; reordering a batch permutes the
  decisions among identical rows only (each distinct row keeps the same
  multiset of decisions).

A mixture picks the model of a row by its uniform number against the
cumulative mixture probabilities (:func:`pick_models`). :class:`VoteMixture`
gives every mixture whose models each vote one class per row its
``predict_proba`` and ``predict`` from these functions.
"""

from __future__ import annotations

import numpy as np

from .._utils._hashing import content_hashes, id_hashes, occurrence_keys, seeded_uniforms
from .._utils._validation import check_seed

__all__ = ["is_distribution", "check_row_key", "row_uniforms", "pick_models", "pick_votes", "two_columns",
           "mixture_proba", "normalized_proba", "mixture_draws", "VoteMixture"]


def is_distribution(p):
    """Whether the ndarray ``p`` (a mixture's probabilities) is finite, non-negative and sums to 1 (within 1e-9)."""
    return bool(np.all(np.isfinite(p)) and not np.any(p < 0) and abs(float(p.sum()) - 1.0) <= 1e-9)


def check_row_key(row_key, n_samples):
    """``row_key`` as a 1-D array of ``n_samples`` integer or string ids (None stays None).

    Parameters
    ----------
    row_key : array-like of shape (n_samples,) or None
    n_samples : int

    Returns
    -------
    ndarray or None

    Raises
    ------
    ValueError
        Naming ``row_key``: not one integer or string id per row.
    """
    if row_key is None:
        return None
    ids = np.asarray(row_key.to_numpy() if hasattr(row_key, "to_numpy") else row_key)
    if ids.ndim != 1 or ids.shape[0] != n_samples:
        raise ValueError(f"row_key must hold one id per row, shape ({n_samples},), got shape {ids.shape}")
    if ids.dtype.kind not in "iuUSO":
        raise ValueError(f"row_key must hold integer or string ids, got dtype {ids.dtype}")
    return ids


def row_uniforms(content, random_state, row_key=None, stream=0):
    """Each row's uniform number in [0, 1) (the module's draw convention).

    Parameters
    ----------
    content : ndarray of shape (n_samples, n_columns) or scipy.sparse matrix
        What the draw of a row without ``row_key`` is keyed on (features,
        scores or probabilities; finite numbers). Not read when ``row_key`` is given.
    random_state : int or None
        The seed (None means 0).
    row_key : array-like of shape (n_samples,), default=None
        Row ids (integers or strings): the draw of a row is then keyed on its id only.
    stream : int, default=0
        Further independent numbers for the same rows (``stream=1``, ...).

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    seed = check_seed("random_state", random_state)
    seed = (0 if seed is None else seed) + stream
    ids = check_row_key(row_key, content.shape[0])
    keys = occurrence_keys(content_hashes(content)) if ids is None else id_hashes(ids)
    return seeded_uniforms(keys, seed)


def pick_models(probabilities, uniforms):
    """The model each row is classified by: ``u`` against the cumulative mixture probabilities.

    Parameters
    ----------
    probabilities : ndarray of shape (n_models,)
    uniforms : ndarray of shape (n_samples,)

    Returns
    -------
    ndarray of int of shape (n_samples,)
    """
    cdf = np.cumsum(probabilities)
    cdf[-1] = 1.0
    return np.minimum(np.searchsorted(cdf, uniforms, side="right"), probabilities.shape[0] - 1)


def pick_votes(votes, probabilities, uniforms):
    """Each row's vote by the model its uniform number picks (:func:`pick_models`).

    Parameters
    ----------
    votes : ndarray of shape (n_samples, n_models)
        Every model's class position per row.
    probabilities : ndarray of shape (n_models,)
    uniforms : ndarray of shape (n_samples,)

    Returns
    -------
    ndarray of shape (n_samples,)
        ``votes[i, pick[i]]`` (``votes``' dtype).
    """
    return votes[np.arange(votes.shape[0]), pick_models(probabilities, np.asarray(uniforms))]


def two_columns(p):
    """``[1 - p, p]``: the (n_samples, 2) decision distribution of a positive-decision probability ``p``."""
    return np.column_stack([1.0 - p, p])


def mixture_proba(votes, probabilities, n_classes):
    """The exact decision distribution of a mixture, from every model's class (position) per row.

    Parameters
    ----------
    votes : ndarray of int of shape (n_samples, n_models)
        The class position each model gives each row (0/1 for two classes).
    probabilities : ndarray of shape (n_models,)
    n_classes : int

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        Column ``k`` is ``sum_t p_t [votes_t == k]`` clipped to [0, 1], exactly
        1 (0) where every model of positive probability votes (does not vote)
        ``k`` (1000 models of probability 1/1000 sum to 1.0000000000000007);
        column 0 is ``1 - sum`` of the others (clipped), so two-class rows are
        ``[1 - p, p]`` exactly.
    """
    P = np.empty((votes.shape[0], n_classes))
    support = probabilities > 0
    for k in range(1, n_classes):  # a loop over the classes, not the rows
        hit = votes == k
        p = np.clip(hit @ probabilities, 0.0, 1.0)
        on_support = hit[:, support]
        p[on_support.all(axis=1)] = 1.0
        p[~on_support.any(axis=1)] = 0.0
        P[:, k] = p
    P[:, 0] = np.clip(1.0 - P[:, 1:].sum(axis=1), 0.0, 1.0)
    return P


def normalized_proba(votes, probabilities, n_classes):
    """A mixture's decision distribution as the post-processing rules compute it: each model's probability
    added to its vote's column, model by model, and every row divided by its sum.

    The same distribution as :func:`mixture_proba` up to round-off; kept so
    that the K-class plug-in and thresholded rules' probabilities stay as
    they were, bit for bit.

    Parameters
    ----------
    votes : ndarray of int of shape (n_samples, n_models)
    probabilities : ndarray of shape (n_models,)
    n_classes : int

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    P = np.zeros((votes.shape[0], n_classes))
    rows = np.arange(votes.shape[0])
    for r, p in enumerate(probabilities):
        P[rows, votes[:, r]] += p
    return P / P.sum(axis=1, keepdims=True)


def mixture_draws(votes, probabilities, content, random_state, row_key=None):
    """Each row's class position, by one model drawn per row (:func:`row_uniforms`, :func:`pick_models`).

    Parameters
    ----------
    votes : ndarray of int of shape (n_samples, n_models)
    probabilities : ndarray of shape (n_models,)
    content : ndarray or scipy.sparse matrix of shape (n_samples, n_columns)
        What a row's draw is keyed on without ``row_key``.
    random_state : int or None
    row_key : array-like of shape (n_samples,), default=None

    Returns
    -------
    ndarray of int64 of shape (n_samples,)
        One model's votes as they are (no draw; ``random_state`` and
        ``row_key`` are still checked) when the mixture has one model.
    """
    if probabilities.shape[0] == 1:
        check_seed("random_state", random_state)
        check_row_key(row_key, votes.shape[0])
        return votes[:, 0].astype(np.int64)
    return pick_votes(votes, probabilities, row_uniforms(content, random_state, row_key)).astype(np.int64)


class VoteMixture:
    """``predict_proba`` and ``predict`` of a mixture whose models each vote one class per row.

    A subclass has ``probabilities_`` (one per model), ``classes_`` (the
    labels of the class positions) and two methods: ``_features(X)``, the
    validated rows (a :class:`~rateopt.FeatureMatrix`), and ``_votes(Xm)``,
    every model's class position per row, int of shape (n_samples, n_models)
    (0/1 for two classes).
    """

    def predict_proba(self, X):
        """The exact probability of each class over the draw of the model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The rows to classify.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Column ``k`` is the probability of ``classes_[k]`` (two classes:
            ``[1 - p, p]``, ``p`` the probability of a positive decision): the
            sum of the probabilities of the models that vote ``k``, clipped to
            [0, 1] and exactly 1 (0) where every model of positive probability
            votes (does not vote) ``k``.
        """
        return mixture_proba(self._votes(self._features(X)), self.probabilities_, len(self.classes_))

    def predict_index(self, X, random_state=0, row_key=None):
        """Each row's class position, one model drawn per row (a single model's class, with no draw).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The rows to classify.
        random_state : int or None, default=0
            Seed of the draws (None means 0).
        row_key : array-like of shape (n_samples,), default=None
            Row ids (integers or strings): a row's draw is keyed on its id, so
            its class is the same in any batch and order. None: keyed on the
            row's content and its occurrence among identical rows of the batch.

        Returns
        -------
        ndarray of int64 of shape (n_samples,)
        """
        Xm = self._features(X)
        return mixture_draws(self._votes(Xm), self.probabilities_, Xm.data, random_state, row_key)

    def predict(self, X, random_state=0, row_key=None):
        """The drawn class labels (:meth:`predict_index`'s positions in ``classes_``; 0/1 for two classes).

        Parameters
        ----------
        X, random_state, row_key
            As :meth:`predict_index`.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        return self.classes_[self.predict_index(X, random_state, row_key)]
