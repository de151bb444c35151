"""The kind of model a training run trains, as one object: :data:`WEIGHTS`, :data:`ESTIMATORS` or :data:`BOOSTED`.

Beside the run's arity (:mod:`rateopt._training._arity`), what the driver and
the recorder need of the model kind is asked of this object instead of tested
on the model's or the iterates' classes. :func:`model_kind_of` finds it once,
from the model spec (and whether the game's iterates are fitted estimators). It
gives

* the K-class capability (a kind that trains two classes only is refused on a
  K-class problem, by the arity, with one message);
* whether the kind grows its own iterates (boosted trees: one tree per
  iteration, in the driver's boosting loop, with its own player);
* the trivial (constant) rules the recorder puts before the iterates: zero
  weights with a constant bias for weight iterates, the always-negative prefix
  for boosted trees, none for fitted estimators.

What a new model kind needs: a spec class (the ``model=`` argument) and an entry
of :data:`KINDS`; a kind object with its capabilities, its ``player`` (with
``run_pass(combinations)`` and ``prefix()``, as in :mod:`rateopt._training._boosting`)
and its ``trivial_rules``; and, for iterates that are model objects, their
mixture in ``rateopt._predictors._boosted_mixture.models_mixture``.
"""

from __future__ import annotations

import numpy as np

from .._predictors._boosting import NEGATIVE_PREFIX, BoosterPrefix, BoostingModel
from .._predictors._specs import KernelModel, LinearModel
from ._boosting import BoostingPlayer, ClassBoostingPlayer

__all__ = ["BOOSTED", "ESTIMATORS", "KINDS", "ModelKind", "TRIVIAL_ITERATION", "WEIGHTS", "model_kind_of"]

#: The iteration number of a trivial rule's record.
TRIVIAL_ITERATION = -1


class ModelKind:
    """What the driver and the recorder need of a model kind (see the module docstring).

    Attributes
    ----------
    name : str
        The model spec's name (in messages).
    trains_k_classes : bool
        Whether the kind trains K-class problems.
    grows_iterates : bool
        Whether the kind runs the driver's boosting loop with its own player
        (:meth:`player`), one tree per iteration.
    takes_l2 : bool
        Whether the problem's ``regularization`` (an L2 strength) applies.
    """

    name = "LinearModel"
    trains_k_classes = True
    grows_iterates = False
    takes_l2 = True

    def player(self, spec, model, settings):
        """The kind's own model player (None: the game's :class:`~rateopt._training._players.ModelPlayer`)."""
        return None

    def trivial_rules(self, recorder, fit_intercept=True):
        """The trivial rules, as records to put before the iterates (None when they do not apply)."""
        return None

    def __repr__(self):
        return f"<model kind {self.name}>"


class _Weights(ModelKind):
    """Linear and kernel models: each iterate is a weight row (or K rows) and a bias."""

    def trivial_rules(self, recorder, fit_intercept=True):
        """Zero weights with each constant bias of the arity: two classes always negative (bias -1), then
        always positive (+1); K classes each constant class ``k`` (the ``k``-th unit vector). Their statistics
        come from the same pass as the iterates'. Not for problems with trainable offsets (offset atoms), nor
        models without an intercept (``fit_intercept=False``: a constant rule is not one of them)."""
        r, spec = recorder.rows, recorder.spec
        if spec.n_offsets or not r["w"] or not fit_intercept:
            return None
        w0 = np.zeros_like(np.asarray(r["w"][0], dtype=np.float64))
        biases = spec.arity.constant_biases()
        out = {"w": [w0.copy() for _ in biases], "b": biases, "it": [TRIVIAL_ITERATION] * len(biases),
               "lam": [np.zeros_like(np.asarray(r["lam"][0], dtype=np.float64)) for _ in biases],
               "rates": [recorder.rates_of(spec, w0.T, b) for b in biases]}
        if recorder.val_spec is not None:
            out["val_rates"] = [recorder.rates_of(recorder.val_spec, w0.T, b) for b in biases]
        return out


class _Estimators(ModelKind):
    """Fitted estimators of an estimator oracle (``EstimatorOracle``): no trivial rules."""

    name = "estimator oracle"


class _Boosted(ModelKind):
    """Boosted trees (:class:`~rateopt.BoostingModel`): iterate ``t`` is the first ``t`` trees of one booster."""

    name = "BoostingModel"
    trains_k_classes = True
    grows_iterates = True
    takes_l2 = False

    def player(self, spec, model, settings):
        if spec.arity.multiclass:
            return ClassBoostingPlayer(spec, model, settings)  # one round of K trees per step
        return BoostingPlayer(spec, model, settings)  # one tree per step

    def trivial_rules(self, recorder, fit_intercept=True):
        """The always-negative rule (prefix length -1): no atom has a positive row, so its rates are 0.

        The always-positive rule is the run's first iterate, the empty ensemble (every score 0). K classes:
        none (the empty ensemble, every score 0, is the constant rule of the first class).
        """
        r = recorder.rows
        if not r["models"] or recorder.spec.arity.multiclass:
            return None
        first = r["models"][0]
        model = BoosterPrefix(first.booster, NEGATIVE_PREFIX, first.n_features_in_)
        out = {"w": [np.zeros_like(np.asarray(r["w"][0], dtype=np.float64))], "b": [0.0],
               "it": [TRIVIAL_ITERATION], "lam": [np.zeros_like(np.asarray(r["lam"][0], dtype=np.float64))],
               "rates": [np.zeros(recorder.spec.n_atoms)], "models": [model]}
        if recorder.val_spec is not None:
            out["val_rates"] = [np.zeros(recorder.val_spec.n_atoms)]
        return out


WEIGHTS = _Weights()
ESTIMATORS = _Estimators()
BOOSTED = _Boosted()

#: The kind of each model spec class.
KINDS = {LinearModel: WEIGHTS, KernelModel: WEIGHTS, BoostingModel: BOOSTED}


def model_kind_of(model, estimator_iterates=False):
    """The kind of a model spec (``estimator_iterates``: the game's iterates are fitted estimators).

    Raises
    ------
    TypeError
        If ``model`` is not a model spec of :data:`KINDS`.
    """
    kind = next((KINDS[c] for c in type(model).__mro__ if c in KINDS), None)
    if kind is None:
        raise TypeError(f"model must be a LinearModel, a KernelModel or a BoostingModel, got {type(model).__name__}")
    return ESTIMATORS if estimator_iterates else kind
