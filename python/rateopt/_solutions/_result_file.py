"""A :class:`~rateopt.TrainResult`'s file: the writer and, beside it, the reader.

:func:`result_payload` gives the JSON metadata and the arrays a result saves
(:func:`write_result` writes them under :data:`RESULT_FORMAT`);
:func:`result_fields_from_file` reads them back, every field validated, as
the result's constructor arguments (``rateopt.load`` builds the result with
:func:`rateopt._solutions._result.result_from_file`; a subclass's reader,
e.g. Goh et al. (2016)'s ramp results, adds its own fields). Two-class results hold
(n_recorded, n_features) weights; K-class results (n_recorded, K, n_features)
weights, (n_recorded, K) biases and the class labels in ``metadata.classes``
(files without ``classes`` are two-class results, as every file written
before K-class results could be saved).
"""

from __future__ import annotations

import math

import numpy as np

from .._compiler._compiled import MetricConstraintRows, MetricRows
from .._predictors._boosted_mixture import booster_from_file, booster_of, booster_payload, prefix_lengths_from_file
from .._predictors._boosting import BoosterPrefix
from .._predictors._linear import feature_map_from_file, map_arrays, map_meta
from .._training._arity import arity_from_file
from .._training._class_spec import ClassObjective
from .._predictors._archive import feature_names_from_meta, feature_names_meta
from .._utils._archive import RATE_TOL, check_range, damaged, meta_number, real_array, write_archive
from ..exceptions import RateoptError
from ..metrics import metric_from_params
from ._rate_map import RateMap

__all__ = ["RESULT_FORMAT", "checked_rates", "result_fields_from_file", "result_payload", "write_result"]

RESULT_FORMAT = "rateopt-train-result"


def write_result(path, meta, arrays):
    """Write a result's :func:`result_payload` to ``path`` (one archive, atomically)."""
    write_archive(path, meta, arrays, RESULT_FORMAT)


def result_payload(result):
    """The JSON metadata and the arrays a :class:`~rateopt.TrainResult` saves."""
    booster = None if result.models is None else booster_of(result.models)
    if result.models is not None and booster is None:
        raise RateoptError("this result's iterates are scikit-learn estimators (an estimator oracle), which "
                           "rateopt's pickle-free files cannot store; save the estimators with their own format")
    meta = {"kind": "train-result", "method": result.method, "n_iter": int(result.n_iter),
            "constraint_names": list(result.constraint_names), "settings": result.settings,
            "const0": result.rate_map.const0, "feature_map": map_meta(result.feature_map),
            "validation": None if result.val_rate_map is None else
            {"const0": result.val_rate_map.const0, "constraint_names": list(result.val_rate_map.constraint_names),
             **_metric_meta(result.val_rate_map)},
            **_metric_meta(result.rate_map)}
    meta.update(result.arity.file_meta())
    meta.update(feature_names_meta(result.feature_names))
    arrays = {"weights": result.weights, "biases": result.biases, "iterations": result.iterations,
              "multipliers": result.multipliers, "atom_rates": result.atom_rates, "c0": result.rate_map.c0,
              "C": np.asarray(result.rate_map.C), "kappa": result.rate_map.kappa, **map_arrays(result.feature_map),
              **_metric_arrays(result.rate_map, "")}
    if result.offsets is not None:
        arrays["offsets"] = result.offsets
    if booster is not None:  # a boosted run: its iterates are prefixes of one booster, stored once
        lengths = np.array([m.n_trees for m in result.models], dtype=np.int64)
        meta["boosting"], trees = booster_payload(booster, int(lengths.max()), result.models[0].n_features_in_)
        arrays.update(trees, prefix_lengths=lengths)
    if result.val_rate_map is not None:
        arrays.update(val_atom_rates=result.val_atom_rates, val_c0=result.val_rate_map.c0,
                      val_C=np.asarray(result.val_rate_map.C), val_kappa=result.val_rate_map.kappa,
                      **_metric_arrays(result.val_rate_map, "val_"))
    return meta, arrays


def _metric_meta(rmap):
    """The JSON part of a rate map's metrics (objective and constraints).

    A two-class metric objective is saved as its rows (``MetricRows``: the
    metric's parameters, ``Z`` and ``z0``); a K-class one (macro-F1, a
    :class:`~rateopt._training._class_spec.ClassObjective`) as its own
    parameters and arrays.
    """
    m = rmap.metric
    return {"metric": None if m is None else m.metric.params() if hasattr(m, "Z") else m.params(),
            "metric_constraints": [{"metric": c.metric.params(), "bound": c.bound}
                                   for c in rmap.metric_constraints]}


def _metric_arrays(rmap, prefix):
    """The compiled rows of a rate map's metrics, under ``prefix``."""
    out = {}
    if rmap.metric is not None and hasattr(rmap.metric, "Z"):
        out.update({prefix + "Z": rmap.metric.Z, prefix + "z0": rmap.metric.z0})
    elif rmap.metric is not None:
        out.update({f"{prefix}objective_{k}": v for k, v in rmap.metric.arrays().items()})
    for j, c in enumerate(rmap.metric_constraints):
        out.update({f"{prefix}mc{j}_Z": c.Z, f"{prefix}mc{j}_z0": c.z0})
    return out


def result_fields_from_file(meta, arrays, path):
    """The validated constructor arguments of a saved :class:`TrainResult` (a subclass's reader adds its own)."""
    arity = arity_from_file(meta, path)
    W = real_array(arrays, "weights", arity.weights_ndim, path)
    T, d = W.shape[0], W.shape[-1]
    if T < 1:
        raise damaged(path, "weights", "holds no iterate")
    arity.check_file_weights(W, path)

    def vec(name, n=None, ndim=1):
        a = real_array(arrays, name, ndim, path)
        if n is not None and a.shape[0] != n:
            raise damaged(path, name, f"has {a.shape[0]} rows, expected {n}")
        return a

    names = meta.get("constraint_names")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise damaged(path, "metadata.constraint_names", f"is {names!r}, expected a list of names")
    listed = meta.get("metric_constraints") or []
    if not isinstance(listed, list):
        raise damaged(path, "metadata.metric_constraints", f"is {listed!r}, expected a list")
    n_bounded = len(listed)
    if n_bounded > len(names):
        raise damaged(path, "metadata.metric_constraints", f"lists {n_bounded} metric constraints for "
                                                              f"{len(names)} constraint names")
    m = len(names) - n_bounded  # rows of C

    def rate_map(prefix, names, where, mmeta):
        c0 = vec(prefix + "c0")
        C = vec(prefix + "C", m, ndim=2) if m else np.zeros((0, c0.shape[0]))
        kappa = vec(prefix + "kappa", m)
        if C.shape[1] != c0.shape[0]:
            raise damaged(path, prefix + "C", f"has {C.shape[1]} columns for {c0.shape[0]} atoms")
        const0 = meta_number(mmeta, "const0", path, where=where[:-1])
        n_atoms = c0.shape[0]
        metric = None
        saved = mmeta.get("metric")
        if isinstance(saved, dict) and saved.get("kind") == ClassObjective.kind:
            metric = _class_objective(saved, arrays, path, prefix, where + "metric", n_atoms, arity)
        elif saved is not None:
            metric = _metric_rows(MetricRows, saved, arrays, path, n_atoms, prefix + "Z", prefix + "z0",
                                  where + "metric")
        bounded = mmeta.get("metric_constraints") or []
        if not isinstance(bounded, list) or len(bounded) != n_bounded:
            raise damaged(path, where + "metric_constraints", f"is {bounded!r}, expected a list of "
                                                                 f"{n_bounded} metric constraints")
        constraints = []
        for j, item in enumerate(bounded):
            field = f"{where}metric_constraints[{j}]"
            bound = item.get("bound") if isinstance(item, dict) else None
            if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not math.isfinite(bound):
                raise damaged(path, field, f"is {item!r}, expected a metric and a finite bound")
            constraints.append(_metric_rows(MetricConstraintRows, item.get("metric"), arrays, path, n_atoms,
                                            f"{prefix}mc{j}_Z", f"{prefix}mc{j}_z0", field, bound=float(bound)))
        return RateMap(c0, const0, C, kappa, tuple(names), metric, tuple(constraints))

    rmap = rate_map("", names, "metadata.", meta)
    R = checked_rates(vec("atom_rates", T, ndim=2), "atom_rates", path)
    if R.shape[1] != rmap.c0.shape[0]:
        raise damaged(path, "atom_rates", f"has {R.shape[1]} columns for {rmap.c0.shape[0]} atoms")
    val = meta.get("validation")
    vmap = vR = None
    if val is not None:
        if not isinstance(val, dict):
            raise damaged(path, "metadata.validation", f"is {val!r}, expected a dict")
        # The validation constraints are the training ones evaluated on the validation data: the same number,
        # named after the validation dataset (e.g. "ppr[validation:group=A] ..."), so only the count must agree.
        val_names = val.get("constraint_names")
        if not isinstance(val_names, list) or not all(isinstance(n, str) for n in val_names) \
                or len(val_names) != len(names):
            raise damaged(path, "metadata.validation.constraint_names",
                          f"is {val_names!r}, expected a list of {len(names)} names (one per constraint)")
        vmap = rate_map("val_", val_names, "metadata.validation.", val)
        vR = checked_rates(vec("val_atom_rates", T, ndim=2), "val_atom_rates", path)
        if vR.shape[1] != vmap.c0.shape[0]:
            raise damaged(path, "val_atom_rates", f"has {vR.shape[1]} columns for {vmap.c0.shape[0]} atoms")
    n_iter = meta.get("n_iter")
    if isinstance(n_iter, bool) or not isinstance(n_iter, int) or n_iter < 1:
        raise damaged(path, "metadata.n_iter", f"is {n_iter!r}, expected an integer >= 1")
    settings = meta.get("settings")
    if not isinstance(settings, dict):
        raise damaged(path, "metadata.settings", f"is {settings!r}, expected a dict")
    fmap = feature_map_from_file(meta.get("feature_map"), arrays, path)
    if fmap is not None and d != fmap.n_components_:
        raise damaged(path, "weights", f"has {d} columns for {fmap.n_components_} kernel features")
    its = vec("iterations", T)
    # leading trivial rules (-1), window averages (-2) and their threshold rules (-3)
    k = int(np.argmax(its >= 0)) if np.any(its >= 0) else T
    if np.any((its[:k] != -1) & (its[:k] != -2) & (its[:k] != -3)):
        raise damaged(path, "iterations", "holds a negative value other than -1 (a trivial rule), -2 (a window "
                                          "average) or -3 (a window average's threshold rule)")
    if np.any(its != np.round(its)) or np.any(its[k:] < 0):
        raise damaged(path, "iterations", "holds a value that is not a whole number >= 0")
    if np.any(np.diff(its[k:]) <= 0):  # the recorded iterates in the order they were run (a resume numbers on)
        at = k + int(np.flatnonzero(np.diff(its[k:]) <= 0)[0])
        raise damaged(path, "iterations", f"does not increase: {its[at]:.0f} at index {at} is followed by "
                                          f"{its[at + 1]:.0f}")
    # A resumed fit starts from the last multipliers: Lagrange multipliers and the swap player's
    # distribution are never negative.
    lam = check_range(vec("multipliers", T, ndim=2), "multipliers", path, "multipliers >= 0", low=0.0)
    biases = vec("biases", T, ndim=arity.weights_ndim - 1)
    if biases.shape != W.shape[:-1]:
        raise damaged(path, "biases", f"has shape {biases.shape}, expected {W.shape[:-1]}")
    fields = dict(method=str(meta.get("method")), weights=W, biases=biases,
                  iterations=its.astype(np.int64), multipliers=lam,
                  atom_rates=R, rate_map=rmap, n_iter=n_iter, val_atom_rates=vR, val_rate_map=vmap,
                  feature_map=fmap, settings=settings,
                  offsets=vec("offsets", T, ndim=2) if "offsets" in arrays else None,
                  classes=arity.classes)
    n_columns = d if fmap is None else fmap.n_features_in_
    boosting = meta.get("boosting")
    if boosting is not None:  # the iterates are prefixes of the stored booster
        if not isinstance(boosting, dict):
            raise damaged(path, "metadata.boosting", f"is {boosting!r}, expected a dict")
        booster, n_columns = booster_from_file(boosting, arrays, path, where="metadata.boosting.")
        lengths = prefix_lengths_from_file(arrays, path, booster, n=T)
        fields["models"] = [BoosterPrefix(booster, t, n_columns) for t in lengths]
    fields["feature_names"] = feature_names_from_meta(meta, n_columns, path)
    return fields


def checked_rates(R, name, path):
    """Saved atom rates: weighted means of 0/1 decisions with normalized weights, so in [0, 1]."""
    return check_range(R, name, path, "rates in [0, 1]", low=-RATE_TOL, high=1.0 + RATE_TOL)


def _class_objective(meta, arrays, path, prefix, field, n_atoms, arity):
    """A saved non-linear K-class objective (macro-F1): its subset's cells and the cells' class weights."""
    arity.check_file_class_objective(path, field)
    scale = meta_number(meta, "scale", path, where=field, minimum=0.0, strict=True)
    K = arity.n_outputs
    cells_name, weights_name = prefix + "objective_cells", prefix + "objective_label_weights"
    W = check_range(real_array(arrays, weights_name, 2, path), weights_name, path, "weights >= 0", low=0.0)
    cells = check_range(real_array(arrays, cells_name, 1, path), cells_name, path, "0 or 1", low=0.0, high=1.0)
    if W.shape[1] != K or W.shape[0] * K * K != n_atoms or cells.shape[0] != W.shape[0]:
        raise damaged(path, weights_name, f"has shape {W.shape} with {cells.shape[0]} cells, expected "
                                          f"(n_cells, {K}) with n_cells * {K}**2 = {n_atoms} statistics")
    if np.any(cells != np.round(cells)):
        raise damaged(path, cells_name, "holds a value other than 0 or 1")
    if not W[cells == 1].sum() > 0:
        raise damaged(path, cells_name, "selects no row weight (an empty subset)")
    return ClassObjective(cells == 1, W, float(scale))


def _metric_rows(cls, meta, arrays, path, n_atoms, z_name, z0_name, field, **extra):
    """A saved metric (its psi and compiled rows; the rate expressions are not saved)."""
    try:
        metric = metric_from_params(meta)
    except (KeyError, TypeError, ValueError) as exc:
        raise damaged(path, field, f"is not a valid metric ({exc})") from None
    Z, z0 = real_array(arrays, z_name, 2, path), real_array(arrays, z0_name, 1, path)
    if Z.shape[0] != metric.n_rates or z0.shape[0] != metric.n_rates or Z.shape[1] != n_atoms:
        raise damaged(path, z_name, f"has shape {Z.shape} for a metric of {metric.n_rates} rates of "
                                     f"{n_atoms} atoms")
    return cls(metric, Z, z0, **extra)
