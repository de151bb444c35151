"""The value of one rate expression for a predictor's output, without compiling a problem.

:func:`expression_value` computes what ``Problem(objective=expression).evaluate(predictions).objective``
computes, by the same steps on the one expression: lower it to an affine form of
subsets (:mod:`rateopt._language._lowering`); merge the subsets of a dataset with
equal memberships into atoms, numbered dataset by dataset; read the predictions
as decision values (:mod:`rateopt._language._predictions`); take every atom's
weighted positive rate ``p+(S_a)``; and return ``coef @ p + const``. Each step
does its arithmetic in the order the compiled problem does (weights rescaled by
a power of two, each atom's rate summed member by member, one dot product), so
the value is the same float. :meth:`rateopt.metrics.Metric.evaluate` uses it for
a metric's coordinates.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .._utils._weights import exact_normalized
from ..exceptions import RateoptError
from . import _rates as R
from ._data import Dataset
from ._expressions import lift
from ._lowering import CANCEL_RTOL, Env, lower, scaled_by_max
from ._predictions import decision_values

__all__ = ["KINDS", "datasets_by_name", "expression_value", "prediction_values"]

#: How an array of predictions may be read (``kind=`` of :func:`expression_value`).
KINDS = ("auto", "decisions", "scores", "probabilities", "labels")


def expression_value(expression, predictions, *, kind="auto"):
    """The value of an affine rate expression for a predictor's output.

    Parameters
    ----------
    expression : Expression or float
        An affine rate expression (a number is a constant).
    predictions : array-like or mapping
        As :meth:`rateopt.Problem.evaluate`: per dataset of the expression
        (a mapping from dataset name, or from the dataset, to an array of
        shape ``(n_samples,)``), or a single array when it uses one dataset.
    kind : {"auto", "decisions", "scores", "probabilities", "labels"}, default="auto"
        How to read the arrays, as :meth:`rateopt.Problem.evaluate`.

    Returns
    -------
    float
        The expression's value: for probabilities (expected decisions), its
        expected value.

    Raises
    ------
    TypeError
        If ``expression`` is not a rate expression or a number.
    RateoptError
        As :meth:`rateopt.Problem.evaluate` (missing, unknown or malformed
        predictions, or trainable thresholds, whose rates depend on more than
        the decisions); where a subset is empty or lacks labels; or for a
        dataset partitioned on a Dask cluster.
    """
    expr = lift(expression)
    if expr is NotImplemented or isinstance(expression, R.Constraint):
        raise TypeError(f"objective must be a rate expression or a number, got {type(expression).__name__}")
    datasets = datasets_by_name((expr,))
    for name, ds in datasets.items():
        if getattr(ds, "compile_backend", None) is not None:  # rateopt.dask.Dataset: its rows live on workers
            raise RateoptError(
                f"dataset {name!r} is partitioned on a Dask cluster: evaluate a classifier there with "
                "rateopt.dask.evaluate(problem, classifier)"
            )
    env = Env()
    form = lower(expr, env)
    atoms, gid_of = _atoms(env, datasets, form.terms)
    values = prediction_values(datasets, predictions, kind)
    _refuse_thresholds(atoms)
    p = np.concatenate([[_atom_rate(ds, mask, values[name]) for mask, _ in atoms[name]]
                        for name, ds in datasets.items()] + [np.zeros(0)])
    coef = np.zeros(p.size)
    mass = np.zeros(p.size)
    for ctx, v in form.terms.items():
        coef[gid_of[ctx]] += v
        mass[gid_of[ctx]] += form.mass[ctx]
    coef[np.abs(coef) <= CANCEL_RTOL * mass] = 0.0  # sums that cancel to round-off are exact zeros
    return float(coef @ p + float(form.const))


def datasets_by_name(expressions) -> dict:
    """The datasets used by ``expressions``, by name, in order of appearance (distinct datasets need distinct
    names)."""
    datasets: dict = {}
    for ds in (ds for expr in expressions for ds in expr.datasets):
        other = datasets.setdefault(ds.name, ds)
        if other is not ds:
            raise RateoptError(
                f"two different datasets are both named {ds.name!r}; give them "
                "distinct names with Dataset(..., name=...)"
            )
    return datasets


def _atoms(env, datasets, contexts):
    """The atoms ``{dataset name: [(mask, [contexts])]}`` and each context's global atom number.

    Subsets of a dataset with equal memberships (and the same trainable threshold,
    if any) are one atom; atoms are numbered in order of first appearance,
    dataset by dataset.
    """
    atoms: dict = {name: [] for name in datasets}
    local_of: dict = {name: {} for name in datasets}
    where: dict = {}
    for ctx in contexts:
        name = ctx.dataset.name
        mask = env.mask(ctx)
        key = (np.packbits(mask).tobytes(), id(getattr(ctx, "threshold", None)))
        local = local_of[name].setdefault(key, len(atoms[name]))
        if local == len(atoms[name]):
            atoms[name].append((mask, []))
        atoms[name][local][1].append(ctx)
        where[ctx] = (name, local)
    offsets, start = {}, 0
    for name in datasets:
        offsets[name] = start
        start += len(atoms[name])
    return atoms, {ctx: offsets[name] + local for ctx, (name, local) in where.items()}


def prediction_values(datasets, predictions, kind, names=None) -> dict:
    """Per dataset name, the predictions read as decision values in [0, 1].

    ``datasets`` maps names to the :class:`Dataset` objects predictions may be
    given for; ``names`` (default: all of them, in order) are those that need
    predictions. ``predictions`` is one array (one dataset) or a dict keyed by
    name or :class:`Dataset`.
    """
    if kind not in KINDS:
        raise RateoptError(
            "kind must be 'auto', 'decisions', 'scores', 'probabilities' or 'labels', "
            f"got {kind!r}"
        )
    names = tuple(datasets) if names is None else tuple(names)
    if isinstance(predictions, Mapping):
        given = {}
        for k, v in predictions.items():
            key = k.name if isinstance(k, Dataset) else k
            if key not in datasets or (isinstance(k, Dataset) and datasets[key] is not k):
                raise RateoptError(
                    f"predictions given for dataset {key!r}, which the problem does not "
                    f"use; its datasets: {list(names)!r}"
                )
            given[key] = v
    else:
        if len(names) != 1:
            raise RateoptError(
                f"the problem uses {len(names)} datasets {list(names)!r}: pass predictions "
                "as a dict {dataset name: array}"
            )
        given = {names[0]: predictions}
    out = {}
    for name in names:
        if name not in given:
            raise RateoptError(f"no predictions given for dataset {name!r}")
        out[name] = decision_values(given[name], kind, datasets[name])
    return out


def _refuse_thresholds(atoms):
    """Raise if an atom has a trainable threshold: its rate depends on the threshold, not only on decisions."""
    thresholds = {}
    for entries in atoms.values():
        for _, ctxs in entries:
            thr = getattr(ctxs[0], "threshold", None)
            if thr is not None:
                thresholds.setdefault(id(thr), thr.name)
    thresholds = list(thresholds.values())
    if thresholds:
        raise RateoptError(
            f"the problem has trainable thresholds ({', '.join(thresholds[:3])}"
            f"{', ...' if len(thresholds) > 3 else ''}): their rates depend on the thresholds, not only "
            "on decisions; evaluate ROC-AUC exactly with rateopt.metrics.roc_auc_lj, or pass atom rates "
            "to evaluate_atom_rates")


def _atom_rate(ds, mask, values) -> float:
    """``p+(S)``: the members' weights, rescaled by a power of two and normalized as a membership
    table's (:func:`~rateopt._utils._weights.exact_normalized`), times their decision values, summed
    member by member (as a membership table's ``bincount``)."""
    w, _ = scaled_by_max(ds.weights[mask])
    exact_normalized(w, out=w)
    return float(np.bincount(np.zeros(w.size, dtype=np.intp), weights=w * values[mask], minlength=1)[0])
