"""``rateopt.assess``: metrics of predictions on every group, with intervals (a better ``MetricFrame``)."""

from __future__ import annotations

import numpy as np

from ..exceptions import RateoptError
from ._cells import group_columns, make_cells
from ._inputs import read_inputs
from .._postprocess._certify import clopper_pearson
from ._intervals import effective_count, percentile_interval
from ._metrics import RateMetric, resolve_metrics
from ._table import Assessment

__all__ = ["assess", "compute"]


def _check(ci, n_boot, min_count, random_state):
    if ci is not None and not (isinstance(ci, (float, int)) and not isinstance(ci, bool) and 0 < ci < 1):
        raise RateoptError(f"assess: ci must be a confidence level in (0, 1) or None, got {ci!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise RateoptError(f"assess: n_boot must be a positive integer, got {n_boot!r}")
    if isinstance(min_count, bool) or not isinstance(min_count, (int, float, np.integer)) or not min_count >= 0:
        raise RateoptError(f"assess: min_count must be a non-negative number, got {min_count!r}")
    if random_state is not None and (isinstance(random_state, bool)
                                     or not isinstance(random_state, (int, np.integer)) or random_state < 0):
        raise RateoptError(f"assess: random_state must be a non-negative integer or None, got {random_state!r}")


def assess(y, predictions, groups=None, *, metrics=None, sample_weight=None, classes=None, intersections=True,
           ci=0.95, simultaneous=False, n_boot=1000, random_state=0, min_count=30):
    """Metrics of predictions on every group, with confidence intervals (a ``MetricFrame`` with intervals).

    Parameters
    ----------
    y : array-like of shape (n_samples,) or None
        Labels: 0/1 for two classes (without ``classes``), else among
        ``classes``. None: only label-free metrics (selection rate,
        proportions).
    predictions : array-like of shape (n_samples,) or (n_samples, K)
        Without ``classes``, 1-D: 0/1 decisions, or probabilities of a positive
        decision (rates are then expected rates, e.g. of a stochastic
        classifier). With ``classes``, 1-D: predicted labels. 2-D: decision
        probabilities over the classes (a stochastic classifier's
        ``predict_proba``; one-hot for hard decisions), each row summing to 1.
    groups : DataFrame, Series, dict of array-like, or array-like, default=None
        The group columns. A missing value (None, NaN) puts the row in no
        group of that column. None: one cell, ``"all"``.
    metrics : str, callable, sequence or dict of them, default=None
        Each metric is

        * a name: ``"selection_rate"`` (``"positive_rate"``, ``"ppr"``),
          ``"negative_rate"``, ``"tpr"`` (``"recall"``), ``"fnr"``,
          ``"fpr"``, ``"tnr"``, ``"precision"``, ``"prevalence"``,
          ``"accuracy"``, ``"error"``; on K classes ``"proportion[c]"``,
          ``"recall[c]"``, ``"precision[c]"``, ``"prevalence[c]"`` of a class
          ``c`` (without ``[c]``: one column per class);
        * a rate of the rate language: a function of a context such as
          :func:`rateopt.true_positive_rate`, or any function ``S -> rate
          expression`` (``lambda S: ro.true_positive_rate(S) -
          ro.false_positive_rate(S)``; two classes);
        * a metric callable ``f(y_true, y_pred)`` (e.g. from
          :mod:`sklearn.metrics`): called with the cell's rows of ``y`` and
          ``predictions`` as given, and ``sample_weight=`` when weights are
          given.

        A dict names the columns. Default: selection rate, TPR, FPR and
        accuracy on two classes (selection rate only without labels);
        accuracy, per-class proportions and recalls on K classes.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights (default 1); every rate is weighted.
    classes : sequence, default=None
        The classes: of the columns of 2-D predictions (default ``0, ...,
        K-1``), or the labels 1-D predictions hold. The second class is the
        positive one for two-class rates.
    intersections : bool, default=True
        True: one cell per combination of the group columns' values (as
        ``MetricFrame``). False: one cell per value of each column, indexed
        ``(group, value)``.
    ci : float or None, default=0.95
        The confidence level of the intervals; None computes none (and no
        bootstrap).
    simultaneous : bool, default=False
        Make the cells' intervals hold simultaneously at level ``ci``: each is
        computed at level ``1 - (1 - ci) / m`` for ``m`` cells (Bonferroni).
        The overall interval stays at level ``ci``.
    n_boot : int, default=1000
        Bootstrap resamples for metrics that are not rates.
    random_state : int or None, default=0
        Seed of the bootstrap (cell ``i`` draws from
        ``numpy.random.default_rng([random_state, i])``, so a cell's interval
        does not depend on the other cells or metrics). None: fresh entropy.
    min_count : float, default=30
        Cells whose effective count is below it are flagged ``insufficient``.

    Returns
    -------
    Assessment
        With ``by_group``, ``overall``, ``lower``/``upper``,
        ``insufficient``, ``difference()``, ``ratio()``, ``group_min()``,
        ``group_max()``, ``to_frame()`` and ``plot()``.

    Raises
    ------
    RateoptError
        On inputs that disagree in length, predictions that are not decisions,
        probabilities or labels among ``classes``, unknown metric names, a
        two-class rate on K classes, a label metric without labels, or bad
        ``ci``, ``n_boot``, ``min_count`` or ``random_state``.

    Notes
    -----
    Intervals. A rate is a weighted ratio ``sum a_i b_i / sum a_i`` over a
    cell's rows (e.g. for a TPR, ``a_i`` is the weight of a positive row and
    ``b_i`` its decision). Its interval is Clopper–Pearson's for ``rate *
    n_eff`` successes in ``n_eff`` trials, with the effective count ``n_eff =
    (sum a_i)^2 / sum a_i^2`` (Kish; the rule of Korn and Graubard, 1998):
    exact for unit weights and 0/1 decisions, conservative for expected
    decisions. Other metrics get a seeded expanded percentile bootstrap over
    the cell's rows (Hesterberg, 2015): the percentile interval at the level
    ``alpha'`` with ``alpha'/2 = Phi(-sqrt(n / (n - 1)) * t_{1 - alpha/2, n -
    1})``, which widens the plain percentile interval, too narrow in small
    samples, to a ``t`` interval's width (``alpha' = 0.046`` for 100 rows at
    95%). Here ``n`` is the effective count of the cell's weights (its row
    count for unit weights), and ``alpha`` the cell's level (after Bonferroni
    with ``simultaneous=True``).

    Insufficient evidence. A cell is flagged when its value is undefined
    (e.g. a TPR without positive rows) or its effective count is below
    ``min_count``: at 30 rows a 95% Clopper–Pearson interval of a rate near
    0.5 is about 0.37 wide.

    Examples
    --------
    >>> import rateopt
    >>> a = rateopt.assess([0, 1, 1, 0, 1, 1], [0, 1, 0, 0, 1, 1], {"g": ["a", "a", "b", "b", "b", "b"]},
    ...                    metrics=["selection_rate", "tpr"])
    >>> a.by_group["tpr"].tolist(), a.difference()["tpr"].item()
    ([1.0, 0.6666666666666666], 0.33333333333333337)
    """
    _check(ci, n_boot, min_count, random_state)
    if not isinstance(simultaneous, (bool, np.bool_)):
        raise RateoptError(f"assess: simultaneous must be True or False, got {simultaneous!r}")
    inp = read_inputs(y, predictions, sample_weight, classes)
    cells = make_cells(group_columns(groups, inp.n), inp.n, intersections=bool(intersections))
    return compute(inp, resolve_metrics(metrics, inp), cells, ci=ci, simultaneous=simultaneous, n_boot=n_boot,
                   random_state=random_state, min_count=min_count, weighted=sample_weight is not None)


def compute(inp, resolved, cells, *, ci, simultaneous=False, n_boot=1000, random_state=0, min_count=30,
            weighted=False):
    """The :class:`Assessment` of resolved metrics on cells (the work of :func:`assess`, its inputs read).

    Parameters
    ----------
    inp : Inputs
        From ``read_inputs``.
    resolved : list
        From ``resolve_metrics``.
    cells : Cells
        From ``make_cells``.
    ci, simultaneous, n_boot, random_state, min_count
        As :func:`assess`.
    weighted : bool, default=False
        Pass ``sample_weight=`` to metric callables.

    Returns
    -------
    Assessment
    """
    n_cells, n_metrics = len(cells), len(resolved)
    alpha = None if ci is None else 1.0 - float(ci)
    cell_alpha = None if alpha is None else (alpha / max(n_cells, 1) if simultaneous else alpha)
    seed = np.random.SeedSequence().entropy if random_state is None else int(random_state)
    all_rows = np.arange(inp.n)
    row_sets = [all_rows] + [cells.rows(i) for i in range(n_cells)]  # 0: overall
    shape = (n_cells + 1, n_metrics)
    values, lower, upper, n_eff = (np.full(shape, np.nan) for _ in range(4))
    parts = {j: m.parts(inp) for j, m in enumerate(resolved) if isinstance(m, RateMetric)}
    boot = [j for j, m in enumerate(resolved) if not isinstance(m, RateMetric)]
    for i, rows in enumerate(row_sets):
        a_level = alpha if i == 0 else cell_alpha
        for j, (a, b) in parts.items():
            A = a[rows]
            den = float(A.sum())
            n_eff[i, j] = effective_count(A)
            if den > 0:
                values[i, j] = float(A @ b[rows]) / den
            if a_level is not None:
                lower[i, j], upper[i, j] = clopper_pearson(values[i, j] * n_eff[i, j], n_eff[i, j], a_level)
        if not boot:
            continue
        for j in boot:
            values[i, j] = resolved[j].value(inp, rows, weighted=weighted) if len(rows) else np.nan
            n_eff[i, j] = effective_count(inp.w[rows])
        if a_level is None or len(rows) == 0:
            continue
        rng = np.random.default_rng([seed, i])
        draws = np.full((len(boot), n_boot), np.nan)
        m = len(rows)
        chunk = max(1, min(n_boot, 2_000_000 // m))
        for start in range(0, n_boot, chunk):
            # resample r: m row positions drawn with replacement, in order (what bincount-then-repeat would give)
            picks = np.sort(rng.integers(0, m, (min(chunk, n_boot - start), m)), axis=1)
            for r, pick in enumerate(picks, start=start):
                counts = None
                for t, j in enumerate(boot):
                    if resolved[j].takes_counts:
                        counts = np.bincount(pick, minlength=m) if counts is None else counts
                        draws[t, r] = resolved[j].value(inp, rows, counts)
                    else:
                        draws[t, r] = resolved[j].value(inp, rows[pick], weighted=weighted)
        for t, j in enumerate(boot):
            lower[i, j], upper[i, j] = percentile_interval(draws[t], a_level, n_eff[i, j])
    insufficient = ~np.isfinite(values) | (n_eff < min_count)
    return Assessment(
        metrics=[m.name for m in resolved], methods=[m.method for m in resolved], keys=cells.keys,
        names=cells.names, values=values[1:], lower=lower[1:], upper=upper[1:], n_eff=n_eff[1:],
        counts=np.array([len(r) for r in row_sets[1:]], dtype=np.int64),
        weights=np.array([inp.w[r].sum() for r in row_sets[1:]]), overall=values[0], overall_lower=lower[0],
        overall_upper=upper[0], overall_n_eff=n_eff[0], overall_count=inp.n,
        overall_weight=float(inp.w.sum()), insufficient=insufficient[1:],
        confidence=None if ci is None else float(ci), simultaneous=bool(simultaneous), min_count=min_count)
