"""The result of :func:`rateopt.ramp_mm`: the MM iterates with their ramp records, saved and loaded.

:class:`RampMMResult` is a :class:`~rateopt.TrainResult` whose save payload
adds the ramp records under the metadata kind :data:`RAMP_RESULT_KIND`;
:func:`ramp_result_from_file` is the reader that :func:`rateopt.load` picks
for that kind.
"""

from __future__ import annotations

import numpy as np

from .._predictors._linear import LinearClassifier, RampClassifier
from .._solutions._result import TrainResult
from .._solutions._result_file import checked_rates
from .._utils._archive import damaged, real_array
from .._utils._json import json_ready

__all__ = ["RampMMResult", "RAMP_RESULT_KIND", "ramp_result_from_file"]


class RampMMResult(TrainResult):
    """The outcome of :func:`ramp_mm`: a :class:`~rateopt.TrainResult` of the MM iterates plus their ramp values.

    Every recorded iterate is an MM iterate (the start first). The inherited
    records (``atom_rates``, ``objectives``, ``constraints``) are the 0-1
    values of the deterministic rule ``1[s >= 0]``; the ``ramp_*`` records are
    Problem 2's values, i.e. the exact expected values of the randomized rule
    ``P(+|x) = clip(1/2 + s, 0, 1)``.

    Parameters
    ----------
    ramp_atom_rates : ndarray of shape (n_recorded, n_atoms)
        The per-atom ramp rates of every iterate.
    regularizers : ndarray of shape (n_recorded,)
        ``R(theta, b)`` of every iterate.
    info : list of dict
        Per MM step: cutting-plane calls, bounds, the largest inner gap, time.
    **kwargs
        The :class:`~rateopt.TrainResult` fields.

    Attributes
    ----------
    ramp_atom_rates : ndarray of shape (n_recorded, n_atoms)
        Per-atom ramp rates ``r_p``.
    ramp_objectives : ndarray of shape (n_recorded,)
        Problem-2 objective ``c0 . r + const0`` (without the regularizer).
    ramp_constraints : ndarray of shape (n_recorded, n_constraints)
        Problem-2 constraint values ``C r - kappa`` (<= 0 holds).
    regularizers : ndarray of shape (n_recorded,)
        The regularizer; ``ramp_objectives + regularizers`` is what MM descends.
    info : list of dict
        Per MM step diagnostics.
    """

    def __init__(self, *, ramp_atom_rates, regularizers, info, **kwargs):
        super().__init__(**kwargs)
        self.ramp_atom_rates = ramp_atom_rates
        self.ramp_objectives = self.rate_map.objectives(ramp_atom_rates)
        self.ramp_constraints = self.rate_map.constraints(ramp_atom_rates)
        self.regularizers = np.asarray(regularizers, dtype=np.float64)
        self.info = info

    def classifier(self, kind="deterministic", iterate=-1):
        """The deterministic or the randomized classifier of an MM iterate.

        Parameters
        ----------
        kind : {"deterministic", "randomized"}, default="deterministic"
            ``1[s >= 0]`` (a :class:`~rateopt.LinearClassifier`), or
            ``P(+|x) = clip(1/2 + s, 0, 1)`` (a :class:`~rateopt.RampClassifier`,
            whose expected training rates are the ``ramp_*`` records).
        iterate : int, default=-1
            Which recorded iterate (default the last MM iterate).

        Returns
        -------
        LinearClassifier or RampClassifier
            The classifier.
        """
        w, b = self.weights[iterate], float(self.biases[iterate])
        if kind == "deterministic":
            return LinearClassifier(w, b, feature_map=self.feature_map, feature_names=self.feature_names)
        if kind == "randomized":
            return RampClassifier(w, b, feature_map=self.feature_map, feature_names=self.feature_names)
        raise ValueError(f"kind must be 'deterministic' or 'randomized', got {kind!r}")

    def save(self, path):
        """Save to ``path`` with the ramp records; :func:`rateopt.load` gives back a :class:`RampMMResult`.

        The file is :meth:`TrainResult.save`'s ``.npz`` (arrays plus JSON
        metadata, no pickle) with the metadata kind ``"ramp-mm-result"``, the
        arrays ``ramp_atom_rates`` and ``regularizers``, and ``info`` in the
        metadata.

        Parameters
        ----------
        path : str or os.PathLike
            Where to write.
        """
        super().save(path)

    def _payload(self):
        meta, arrays = super()._payload()
        meta = dict(meta, kind=RAMP_RESULT_KIND, info=json_ready(self.info, nonfinite="keep"))
        arrays = dict(arrays, ramp_atom_rates=self.ramp_atom_rates, regularizers=self.regularizers)
        return meta, arrays

    def __repr__(self):
        return (f"RampMMResult(n_iter={self.n_iter}, n_recorded={self.weights.shape[0]}, "
                f"n_constraints={self.constraints.shape[1]})")


RAMP_RESULT_KIND = "ramp-mm-result"


def ramp_result_from_file(fields, meta, arrays, path):
    """A :class:`RampMMResult` from a loaded archive: the :class:`TrainResult` fields plus the ramp records."""
    T, n_atoms = fields["atom_rates"].shape
    R = checked_rates(real_array(arrays, "ramp_atom_rates", 2, path), "ramp_atom_rates", path)
    if R.shape != (T, n_atoms):
        raise damaged(path, "ramp_atom_rates", f"has shape {R.shape}, expected {(T, n_atoms)}")
    reg = real_array(arrays, "regularizers", 1, path)
    if reg.shape != (T,):
        raise damaged(path, "regularizers", f"has shape {reg.shape}, expected ({T},)")
    info = meta.get("info")
    if not isinstance(info, list) or not all(isinstance(i, dict) for i in info):
        raise damaged(path, "metadata.info", f"is {info!r}, expected a list of dicts (one per MM step)")
    return RampMMResult(ramp_atom_rates=R, regularizers=reg, info=info, **fields)
