"""Checkpoints and resumed fits: go on training from a result's last recorded iterate.

A long fit (many iterations, or data on a cluster whose client may go away)
can write its records so far to a file after every recorded iterate
(``train(..., checkpoint=path)``, atomically: the file is always a complete,
loadable :class:`~rateopt.TrainResult`), and a fit can go on from any result
(``train(..., resume=result)``, e.g. ``rateopt.load(path)``):

* the model player starts at the last recorded model ``(theta, bias)``;
* the multipliers start at the last recorded multipliers: the Lagrange
  multipliers as they were (``"proxy-external"``, ``"lagrangian-hinge"``),
  or, for the swap-regret player of ``"proxy-swap"``, the matrix whose every
  column is the recorded stationary distribution ``lambda`` (its stationary
  distribution is ``lambda`` again);
* the new records follow the old ones (iterations numbered on), so every
  solution is chosen among all of them.

What the records do not hold starts afresh: the optimizer's moments (Adam,
Adagrad) and the swap-regret matrix beyond its stationary distribution, and
the minibatch generator is seeded again from ``random_state``. A resumed fit
is therefore a faithful continuation, not a bit-identical replay of an
uninterrupted one.
"""

from __future__ import annotations

import os

import numpy as np

from .._compiler._linear_map import LinearMap
from .._training._players import LagrangePlayer, SwapRegretPlayer
from .._utils._atomic import fsync_rename
from ..games import GAMES
from ._result import TrainResult

__all__ = ["Checkpoint", "check_resumable", "resume_state", "write_checkpoint", "joined"]


class Checkpoint:
    """A training callback that writes the records so far to a file after every recorded iterate.

    Parameters
    ----------
    path : str or os.PathLike
        The checkpoint file, replaced atomically each time (:func:`write_checkpoint`).
    snapshot : callable
        ``snapshot()`` returns the :class:`~rateopt.TrainResult` of the records so far.
    previous : TrainResult, default=None
        The result a resumed fit continues: the file holds its records, then the new ones.
    callback : callable, default=None
        The caller's callback, called after the file is written; its answer
        (stop or not) is this callback's.
    """

    def __init__(self, path, snapshot, previous=None, callback=None):
        self.path, self.snapshot, self.previous, self.callback = path, snapshot, previous, callback

    def __call__(self, iteration, info):
        partial = self.snapshot()
        write_checkpoint(self.path, partial if self.previous is None else joined(self.previous, partial))
        return self.callback is not None and bool(self.callback(iteration, info))


def check_resumable(previous, game, spec):
    """Refuse, with a clear message, a ``resume=`` result that cannot continue this training.

    ``game`` is the game class of the training (its ``resumable`` says whether
    its whole multiplier state is in the records)."""
    method = game.name
    if not isinstance(previous, TrainResult):
        raise TypeError(f"resume must be a TrainResult (e.g. rateopt.load(checkpoint)), got {type(previous).__name__}")
    if type(previous) is not TrainResult:
        raise ValueError(f"resume: a {type(previous).__name__} cannot be continued by train()")
    if not game.resumable:
        raise ValueError(f"resume: method={method!r} cannot be resumed (its state is not in the records); "
                         f"resumable methods: {resumable_methods()}")
    if previous.method != method:
        raise ValueError(f"resume: the result was trained with method={previous.method!r}, not {method!r}")
    if previous.weights.shape[0] == 0:
        raise ValueError("resume: the result holds no recorded iterate")
    expected = spec.arity.weight_shape(spec.n_features)
    if previous.weights.shape[1:] != expected:
        raise ValueError(f"resume: the result's model has weights of shape {previous.weights.shape[1:]}, this "
                         f"problem's model {expected}")
    rm = previous.rate_map
    same = (rm.c0.shape == spec.c0.shape and rm.C.shape == spec.C.shape
            and np.array_equal(rm.c0, spec.c0) and LinearMap.from_dense(rm.C).equals(spec.C)
            and np.array_equal(rm.kappa, spec.kappa))
    if not same or previous.offsets is not None or getattr(spec, "n_offsets", 0):
        raise ValueError("resume: the result was trained on another problem (its objective, constraints or atoms "
                         "differ) or with trainable offsets")


def resumable_methods():
    """The names of the registered games whose fits can be resumed."""
    return tuple(name for name, cls in GAMES.items() if cls.resumable)


def resume_state(game, previous):
    """Start ``game``'s players at ``previous``'s last recorded iterate (see the module docstring)."""
    game.model_player.set_model(previous.weights[-1], previous.biases[-1])
    lam = np.asarray(previous.multipliers[-1], dtype=np.float64)
    multipliers = getattr(game, "player", None)
    if isinstance(multipliers, SwapRegretPlayer):
        if lam.shape != multipliers.lam.shape:
            raise ValueError(f"resume: the result has {lam.size} multipliers, this game {multipliers.lam.size}")
        lam = np.maximum(lam, np.finfo(np.float64).tiny)
        lam = lam / lam.sum()
        column = np.log(lam) if multipliers.update_kind == "multiplicative" else lam
        matrix = np.repeat(column[:, None], lam.size, axis=1)
        if multipliers.update_kind == "multiplicative":
            multipliers.log_M = matrix
        else:
            multipliers.M = matrix
        multipliers.lam = lam.copy()
        multipliers._refresh()
    elif isinstance(multipliers, LagrangePlayer):
        if lam.shape != (multipliers.lam.size + 1,):
            raise ValueError(f"resume: the result has {lam.size} multipliers, this game {multipliers.lam.size + 1}")
        multipliers.lam = lam[1:].copy()


def joined(previous, result):
    """One result: ``previous``'s records, then ``result``'s with their iterations numbered on."""
    shift = int(previous.n_iter)
    k = result.n_trivial  # the continuation's trivial rules: ``previous`` holds them already

    def cat(a, b):
        return None if a is None or b is None else np.concatenate([a, b[k:]])

    return TrainResult(
        method=result.method, weights=cat(previous.weights, result.weights),
        biases=cat(previous.biases, result.biases), iterations=cat(previous.iterations, result.iterations + shift),
        multipliers=cat(previous.multipliers, result.multipliers), atom_rates=cat(previous.atom_rates,
                                                                                  result.atom_rates),
        rate_map=result.rate_map, n_iter=shift + int(result.n_iter),
        val_atom_rates=cat(previous.val_atom_rates, result.val_atom_rates),
        val_rate_map=result.val_rate_map if previous.val_atom_rates is not None else None,
        feature_map=result.feature_map, settings=result.settings, offsets=None, models=None, classes=result.classes)


def write_checkpoint(path, result):
    """Save ``result`` to ``path`` atomically (a temporary file beside it, flushed to disk, then a rename)."""
    path = os.fspath(path)
    tmp = f"{path}.partial-{os.getpid()}"
    try:
        result.save(tmp)
        fsync_rename(tmp, path)  # on disk before the rename, and the rename on disk after it
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
