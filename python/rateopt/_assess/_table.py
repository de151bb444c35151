"""The result of :func:`rateopt.assess`: per-group values, intervals and flags, with MetricFrame's summaries."""

from __future__ import annotations

import numpy as np

from ..exceptions import RateoptError

__all__ = ["Assessment"]

_METHODS = ("between_groups", "to_overall")


class Assessment:
    """Per-group values of metrics, with confidence intervals and an insufficient-evidence flag.

    Built by :func:`rateopt.assess`; the attributes below are pandas objects,
    made on first access (pandas is imported then).

    Attributes
    ----------
    by_group : pandas.DataFrame
        One row per cell (group or intersection of groups), one column per
        metric.
    overall : pandas.Series
        Each metric on all rows.
    lower, upper : pandas.DataFrame
        The bounds of each cell's confidence interval (NaN without
        intervals).
    overall_interval : pandas.DataFrame
        One row per metric: ``lower`` and ``upper`` of the overall value.
    insufficient : pandas.DataFrame of bool
        True where a cell is too small to say anything: its value is undefined
        or the effective count of the rows it depends on is below
        ``min_count``.
    effective_count : pandas.DataFrame
        That effective count per cell and metric (see :func:`rateopt.assess`).
    count : pandas.Series
        The number of rows of each cell.
    methods : dict of str to str
        The interval method of each metric: ``"clopper-pearson"`` or
        ``"bootstrap"``.
    confidence : float or None
        The confidence level of the intervals (None: no intervals).
    simultaneous : bool
        Whether the cells' intervals hold simultaneously (Bonferroni over the
        cells of ``by_group``).
    """

    def __init__(self, *, metrics, methods, keys, names, values, lower, upper, n_eff, counts, weights,
                 overall, overall_lower, overall_upper, overall_n_eff, overall_count, overall_weight, insufficient,
                 confidence, simultaneous, min_count):
        self._metrics, self._keys, self._names = list(metrics), list(keys), list(names)
        self.methods = dict(zip(self._metrics, methods))
        self._values, self._lower, self._upper, self._n_eff = values, lower, upper, n_eff
        self._counts, self._weights = counts, weights
        self._overall = (overall, overall_lower, overall_upper, overall_n_eff, overall_count, overall_weight)
        self._insufficient = insufficient
        self.confidence, self.simultaneous, self.min_count = confidence, simultaneous, min_count

    # ---- pandas views -------------------------------------------------------------------------------------------
    def _index(self):
        import pandas as pd

        if len(self._names) == 1:
            return pd.Index([k[0] for k in self._keys], name=self._names[0])
        return pd.MultiIndex.from_tuples(self._keys, names=self._names)

    def _frame(self, array, dtype=None):
        import pandas as pd

        return pd.DataFrame(array if dtype is None else array.astype(dtype), index=self._index(),
                            columns=pd.Index(self._metrics, name="metric"))

    @property
    def metrics(self):
        """The metric names, in column order (list of str)."""
        return list(self._metrics)

    @property
    def by_group(self):
        """Each metric on each cell (pandas.DataFrame)."""
        return self._frame(self._values)

    @property
    def overall(self):
        """Each metric on all rows (pandas.Series)."""
        import pandas as pd

        return pd.Series(self._overall[0], index=pd.Index(self._metrics, name="metric"), name="overall")

    @property
    def lower(self):
        """The lower bounds of the cells' intervals (pandas.DataFrame)."""
        return self._frame(self._lower)

    @property
    def upper(self):
        """The upper bounds of the cells' intervals (pandas.DataFrame)."""
        return self._frame(self._upper)

    @property
    def overall_interval(self):
        """The ``lower`` and ``upper`` bounds of each metric's overall value (pandas.DataFrame; not simultaneous)."""
        import pandas as pd

        return pd.DataFrame({"lower": self._overall[1], "upper": self._overall[2]},
                            index=pd.Index(self._metrics, name="metric"))

    @property
    def insufficient(self):
        """Cells too small to say anything (pandas.DataFrame of bool)."""
        return self._frame(self._insufficient, bool)

    @property
    def effective_count(self):
        """The effective count of the rows each cell's value depends on (pandas.DataFrame)."""
        return self._frame(self._n_eff)

    @property
    def count(self):
        """The number of rows of each cell (pandas.Series)."""
        import pandas as pd

        return pd.Series(self._counts, index=self._index(), name="count")

    def to_dict(self):
        """The values as NumPy arrays (no pandas needed).

        Returns
        -------
        dict
            ``keys`` (list of label tuples), ``names`` (the index level
            names), ``count`` and ``weight`` (per cell), ``values``,
            ``lower``, ``upper``, ``effective_count`` and ``insufficient``
            (dicts metric -> ndarray over the cells), and ``overall`` (a dict
            with ``count``, ``weight`` and, per metric, its value).
        """
        def per_metric(array):
            return {m: array[:, j].copy() for j, m in enumerate(self._metrics)}

        ov = self._overall
        return {"keys": list(self._keys), "names": list(self._names), "count": self._counts.copy(),
                "weight": self._weights.copy(), "values": per_metric(self._values), "lower": per_metric(self._lower),
                "upper": per_metric(self._upper), "effective_count": per_metric(self._n_eff),
                "insufficient": per_metric(self._insufficient),
                "overall": {"count": ov[4], "weight": ov[5],
                            **{m: float(ov[0][j]) for j, m in enumerate(self._metrics)}}}

    def to_frame(self):
        """One table: per cell, for each metric its value, bounds, effective count and flag.

        Returns
        -------
        pandas.DataFrame
            Rows: the cells, then a last row ``"overall"``; columns: ``count``
            then a MultiIndex ``(metric, field)`` with the fields ``value``,
            ``lower``, ``upper``, ``effective_count``, ``insufficient``.
        """
        import pandas as pd

        overall_key = ("overall",) * len(self._names)
        keys = self._keys + [overall_key]
        index = (pd.Index([k[0] for k in keys], name=self._names[0]) if len(self._names) == 1
                 else pd.MultiIndex.from_tuples(keys, names=self._names))
        ov = self._overall
        columns = {("count", ""): np.append(self._counts, ov[4])}
        for j, m in enumerate(self._metrics):
            columns[(m, "value")] = np.append(self._values[:, j], ov[0][j])
            columns[(m, "lower")] = np.append(self._lower[:, j], ov[1][j])
            columns[(m, "upper")] = np.append(self._upper[:, j], ov[2][j])
            columns[(m, "effective_count")] = np.append(self._n_eff[:, j], ov[3][j])
            columns[(m, "insufficient")] = np.append(self._insufficient[:, j],
                                                     not (np.isfinite(ov[0][j]) and ov[3][j] >= self.min_count))
        return pd.DataFrame(columns, index=index)

    # ---- MetricFrame's summaries --------------------------------------------------------------------------------
    def group_min(self):
        """The smallest value of each metric over the cells (NaN cells skipped).

        Returns
        -------
        pandas.Series
        """
        return self.by_group.min(axis=0)

    def group_max(self):
        """The largest value of each metric over the cells (NaN cells skipped).

        Returns
        -------
        pandas.Series
        """
        return self.by_group.max(axis=0)

    def difference(self, method="between_groups"):
        """The largest gap of each metric: between two cells, or between a cell and the overall value.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default="between_groups"
            ``"between_groups"``: ``group_max() - group_min()``;
            ``"to_overall"``: the largest ``|cell - overall|``.

        Returns
        -------
        pandas.Series
        """
        _check_method(method)
        if method == "between_groups":
            return self.group_max() - self.group_min()
        return (self.by_group - self.overall).abs().max(axis=0)

    def ratio(self, method="between_groups"):
        """The smallest ratio of each metric: between two cells, or between a cell and the overall value.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default="between_groups"
            ``"between_groups"``: ``group_min() / group_max()``;
            ``"to_overall"``: the smallest of ``cell / overall`` and its
            inverse over the cells.

        Returns
        -------
        pandas.Series
        """
        _check_method(method)
        if method == "between_groups":
            return self.group_min() / self.group_max()
        r = self.by_group / self.overall
        return r.where(~(r > 1), 1 / r).min(axis=0)

    # ---- display ------------------------------------------------------------------------------------------------
    def __repr__(self):
        level = "" if self.confidence is None else f", {self.confidence:.0%} intervals"
        return f"<Assessment: {len(self._keys)} cells x {len(self._metrics)} metrics{level}>\n{self.by_group!r}"

    def plot(self, metrics=None, *, figsize=None):
        """Bar charts of the metrics by cell, with their intervals and the overall value.

        One panel per metric: a bar per cell with its interval as an error
        bar, the overall value as a dashed line, and hatched pale bars for
        cells flagged ``insufficient``. The figure is made with
        :func:`matplotlib.pyplot.subplots`, so ``plt.show()`` shows it.

        Parameters
        ----------
        metrics : str or sequence of str, default=None
            The metrics to plot (default: all).
        figsize : (float, float), default=None
            The figure size (default: 3.2 inches wide per panel).

        Returns
        -------
        matplotlib.figure.Figure
        """
        import matplotlib.pyplot as plt

        chosen = self._metrics if metrics is None else ([metrics] if isinstance(metrics, str) else list(metrics))
        unknown = [m for m in chosen if m not in self._metrics]
        if unknown or not chosen:
            raise RateoptError(f"Assessment.plot: metrics {unknown or chosen!r} are not among {self._metrics!r}")
        labels = [" & ".join(f"{n}={v}" for n, v in zip(self._names, k)) if self._names != ["group"] else str(k[0])
                  for k in self._keys]
        if self._names == ["group", "value"]:
            labels = [f"{k[0]}={k[1]}" for k in self._keys]
        fig, axes = plt.subplots(1, len(chosen), squeeze=False,
                                 figsize=figsize or (3.2 * len(chosen) + 1.0, 0.45 * len(labels) + 1.6))
        pos = np.arange(len(labels))
        for ax, m in zip(axes[0], chosen):
            j = self._metrics.index(m)
            v, lo, hi = self._values[:, j], self._lower[:, j], self._upper[:, j]
            weak = self._insufficient[:, j]
            err = np.vstack([np.where(np.isfinite(lo), v - lo, 0.0), np.where(np.isfinite(hi), hi - v, 0.0)])
            bars = ax.barh(pos, np.nan_to_num(v), xerr=err, color=np.where(weak, "0.8", "C0"), ecolor="0.25",
                           capsize=3)
            for bar, w in zip(bars, weak):
                if w:
                    bar.set_hatch("//")
            ax.axvline(self._overall[0][j], color="C3", linestyle="--", linewidth=1, label="overall")
            ax.set_yticks(pos)
            ax.set_yticklabels(labels if ax is axes[0][0] else [""] * len(labels))
            ax.invert_yaxis()
            ax.set_title(m)
        axes[0][0].legend(loc="lower right", fontsize="small")
        if self.confidence is not None:
            kind = "simultaneous " if self.simultaneous else ""
            fig.suptitle(f"{self.confidence:.0%} {kind}intervals; hatched: insufficient evidence", fontsize="small")
        fig.tight_layout()
        return fig


def _check_method(method):
    if method not in _METHODS:
        raise RateoptError(f"method must be one of {_METHODS}, got {method!r}")
