"""Reports a reviewer reads: Markdown, one self-contained HTML file, or JSON.

:func:`build_report` collects the facts of a training run into one
JSON-ready dict: the goals with their values on train / validation / test and
whether each is met, per-group rates (:func:`rateopt.group_rates`), the chosen
solution (its support iterates and probabilities), the trajectory, training
time, versions and seed. :func:`render` writes it as Markdown, HTML (plots
embedded as base64 PNG when matplotlib is installed) or JSON.

The HTML report plots every rate the goals constrain (:func:`constrained_rates`:
e.g. equalized odds constrains ``tpr`` and ``fpr``) per group, on every split
that has a per-group table (train, validation, test), beside the comparison
model's bars when there is one (``rateopt fit --compare-unconstrained``: the
same model trained without goals, labelled as such). Each figure's caption
judges the goals on that rate and split with the report's tolerance rule
(:func:`goal_met`) and states it. The figures are drawn off pyplot (nothing is
left open when many reports are written in one process).
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import os
import platform
import re
import warnings
from importlib.metadata import version

import numpy as np
import scipy

from . import plot
from ._utils._atomic import atomic_path
from ._utils._json import json_ready
from ._version import __version__
from .exceptions import RateoptError

#: The round-off allowance of a goal's value: a goal is met when its value is ``<= TOLERANCE``. Goal values are
#: sums of rates in [0, 1], so this equals the rule ``value <= 1e-9 * max(1, |value|)``. ``rateopt fit``'s
#: report, ``rateopt fit --postprocess``'s summary and ``rateopt evaluate``'s default ``--tolerance`` use it.
TOLERANCE = 1e-9


def goal_met(value, tolerance=TOLERANCE):
    """Whether a goal of ``value`` is met: ``value <= tolerance``.

    Parameters
    ----------
    value : float
        The goal's value (``<= 0`` when it holds exactly).
    tolerance : float, default=TOLERANCE
        The allowed violation; the default is the round-off :data:`TOLERANCE` (1e-9).

    Returns
    -------
    bool
        True when ``value <= tolerance``.
    """
    return bool(value <= tolerance)

__all__ = ["TOLERANCE", "goal_met", "build_report", "build_multiclass_report", "render", "write_report",
           "table_columns", "constrained_rates", "REPORT_FORMATS"]

REPORT_FORMATS = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html", ".json": "json"}


def _versions():
    out = {"rateopt": __version__, "python": platform.python_version(), "numpy": np.__version__,
           "scipy": scipy.__version__, "platform": platform.platform()}
    try:
        out["highspy"] = version("highspy")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        pass
    return out


def _table_dict(t):
    if t is None:
        return None
    if hasattr(t, "reset_index"):
        t = t.reset_index()
        return {c: t[c].tolist() for c in t.columns}
    return {k: (list(v) if not isinstance(v, np.ndarray) else v.tolist()) for k, v in t.items()}


def _records(result):
    """``(iterations, n_recorded, settings)`` of a result's recorded iterates."""
    return (np.asarray(result.iterations), int(len(result.objectives)) - getattr(result, "n_trivial", 0),
            dict(result.settings or {}))


def build_report(result, *, solution="m-stochastic", epsilon=0.0, evaluations=None, group_rates=None,
                 group_rates_before=None, seconds=None, seed=None, tolerance=TOLERANCE, title="rateopt report",
                 context=None, certificates=None, weights=None, comparison="comparison model"):
    """The facts of a training run (two classes or K classes), as a JSON-ready dict.

    Parameters
    ----------
    result : TrainResult
        The run (its records give the training values when ``evaluations``
        has no ``"train"`` entry, the solution's support and the trajectory).
        A K-class run's ``evaluations`` must hold ``"train"``.
    solution : str, default="m-stochastic"
        The solution kind reported.
    epsilon : float, default=0.0
        The m-stochastic LP's allowed violation.
    evaluations : mapping of str to Evaluation, default=None
        Objective and constraint values per split (``"train"``,
        ``"validation"``, ``"test"``), e.g. from :meth:`rateopt.Problem.evaluate`
        of the solution's expected decisions.
    group_rates : mapping of str to table, default=None
        :func:`rateopt.group_rates` tables per split (two-class or K-class
        columns).
    group_rates_before : mapping of str to table, default=None
        The same for a comparison model (e.g. unconstrained).
    seconds : float, default=None
        Training time.
    seed : int, default=None
        The run's random seed, shown in the report.
    tolerance : float, default=1e-9
        A goal is met on a split when its value is ``<= tolerance``.
    title : str, default="rateopt report"
        The report's heading.
    context : dict, default=None
        Further facts shown as is (data files, columns, the goals file);
        its ``"classes"`` are also the report's ``classes``.
    certificates : mapping of str to Certificate, default=None
        Held-out certificates per split (:class:`rateopt.Certificate`): each
        goal's high-confidence upper bound on its population value.
    weights : array-like of shape (n_recorded,), default=None
        The solution's weights over the recorded iterates (default:
        ``result.mixture(solution, epsilon=epsilon)``; give them for a solution
        the result cannot rebuild alone, e.g. ``"thresholded"``).
    comparison : str, default="comparison model"
        What ``group_rates_before`` measured: the label of its bars and tables
        (``rateopt fit --compare-unconstrained`` gives ``"unconstrained
        model"``).

    Returns
    -------
    dict
        ``goals`` (name, values and met per split), ``objective`` per split,
        ``all_met``, ``classes``, ``group_rates``, ``group_rates_before`` and
        ``comparison`` (its label), ``solution`` (kind, support
        iterates and probabilities), ``trajectory``, ``training_seconds``,
        ``seed``, ``versions``, ``settings`` and ``context``.
    """
    q = np.asarray(result.mixture(solution, epsilon=epsilon) if weights is None else weights, dtype=float)
    evaluations = dict(evaluations or {})
    names = list(result.constraint_names)
    values = {}
    if "train" not in evaluations:
        obj, g = result.solution_values(solution, epsilon=epsilon)
        values["train"] = (float(obj), np.asarray(g, dtype=float))
        if result.val_constraints is not None and result.val_rate_map.metric is None \
                and not result.val_rate_map.metric_constraints:
            values["validation"] = (float(q @ result.val_objectives), result.val_constraints.T @ q)
    for split, ev in evaluations.items():
        values[split] = (float(ev.objective), np.array([ev.constraints[n] for n in names], dtype=float)
                         if set(names) <= set(ev.constraints) else np.array(list(ev.constraints.values()), float))
    splits = [s for s in ("train", "validation", "test") if s in values] + \
             [s for s in values if s not in ("train", "validation", "test")]
    goals = []
    for i, n in enumerate(names):
        vals = {s: float(values[s][1][i]) for s in splits}
        goals.append({"name": n, "values": vals, "met": {s: goal_met(v, tolerance) for s, v in vals.items()}})
    iterations, n_recorded, settings = _records(result)
    support = np.flatnonzero(q > 0)
    k = getattr(result, "n_trivial", 0)  # trivial rules and window averages (iterations < 0): candidates, not iterates
    traj = {"iteration": iterations[k:].tolist(), "objective": np.asarray(result.objectives)[k:].tolist(),
            "constraints": np.asarray(result.constraints)[k:].tolist(),
            "multipliers": np.asarray(result.multipliers)[k:].tolist(), "constraint_names": names}
    classes = (context or {}).get("classes")
    rep = {
        "title": title,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": _versions(),
        "seed": seed,
        "method": result.method,
        "n_iter": int(result.n_iter),
        "n_recorded": n_recorded,
        "training_seconds": seconds,
        "settings": settings,
        "classes": None if classes is None else list(classes),
        "solution": {"kind": solution, "epsilon": float(epsilon),
                     "support": [{"iterate": int(t), "iteration": int(iterations[t]),
                                  "probability": float(q[t])} for t in support]},
        "tolerance": tolerance,
        "objective": {s: values[s][0] for s in splits},
        "goals": goals,
        "all_met": all(all(g["met"].values()) for g in goals),
        "group_rates": {k: _table_dict(v) for k, v in (group_rates or {}).items()},
        "group_rates_before": {k: _table_dict(v) for k, v in (group_rates_before or {}).items()} or None,
        "comparison": str(comparison),
        "trajectory": traj,
        "context": context or {},
        "certificates": {k: c.to_dict() for k, c in (certificates or {}).items()},
    }
    return json_ready(rep)


def build_multiclass_report(result, *, solution="m-stochastic", epsilon=0.0, evaluations, class_rates=None,
                            seconds=None, seed=None, tolerance=TOLERANCE, title="rateopt report", context=None):
    """Deprecated: :func:`build_report` builds K-class reports too (removed in the next release).

    Parameters
    ----------
    result : TrainResult
        The K-class training run.
    solution : str, default="m-stochastic"
        The solution kind reported.
    epsilon : float, default=0.0
        The m-stochastic LP's allowed violation.
    evaluations : mapping of str to Evaluation
        Objective and constraint values per split (with ``"train"``).
    class_rates : mapping of str to table, default=None
        :func:`rateopt.group_rates` tables of K-class predictions per split
        (:func:`build_report`'s ``group_rates``).
    seconds : float, default=None
        Training time.
    seed : int, default=None
        The run's random seed.
    tolerance : float, default=1e-9
        A goal is met on a split when its value is ``<= tolerance``.
    title : str, default="rateopt report"
        The report's heading.
    context : dict, default=None
        Further facts shown as is.

    Returns
    -------
    dict
        :func:`build_report`'s report.
    """
    warnings.warn("build_multiclass_report is deprecated: build_report builds K-class reports (class_rates= is "
                  "its group_rates=)", DeprecationWarning, stacklevel=2)
    return build_report(result, solution=solution, epsilon=epsilon, evaluations=evaluations, group_rates=class_rates,
                        seconds=seconds, seed=seed, tolerance=tolerance, title=title, context=context)


# --------------------------------------------------------------------------- rendering


def table_columns(table):
    """The columns of a :func:`rateopt.group_rates` table that reports and ``rateopt evaluate`` show.

    Parameters
    ----------
    table : mapping
        A table (column -> values) of two-class or K-class rates.

    Returns
    -------
    list of str
        Two classes: ``count``, ``positive_rate``, ``tpr``, ``fpr``, ``error``;
        K classes: ``count``, then every ``proportion[c]`` and every ``recall[c]``.
    """
    if "positive_rate" in table:
        return [c for c in ("count", "positive_rate", "tpr", "fpr", "error") if c in table]
    return ["count"] + [c for c in table if c.startswith("proportion[")] + [c for c in table if c.startswith("recall[")]


def _fmt(v, digits=4):
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _sections(rep):
    """The report as (heading, header row, rows) tables, shared by Markdown and HTML."""
    splits = list(rep["objective"])
    out = []
    out.append(("Goals", ["goal"] + [f"{s} value" for s in splits] + [f"{s} met" for s in splits],
                [[g["name"]] + [_fmt(g["values"][s]) for s in splits] + [_fmt(g["met"][s]) for s in splits]
                 for g in rep["goals"]]))
    out.append(("Objective", ["split", "objective"], [[s, _fmt(v)] for s, v in rep["objective"].items()]))
    for split, cert in (rep.get("certificates") or {}).items():
        out.append((f"Certified bounds on the population ({split} data held out, drawn decisions, confidence "
                    f"{cert['confidence']:g}, {cert['method']})",
                    ["goal", f"{split} value", "upper bound", "certified"],
                    [[g["name"], _fmt(g["value"]), _fmt(g["upper"]),
                      "n/a" if g["certified"] is None else _fmt(bool(g["certified"]))] for g in cert["goals"]]))
    for label, tables in (("Per-group rates", rep["group_rates"]),
                          (f"Per-group rates of the {_comparison(rep)}, for comparison",
                           rep.get("group_rates_before") or {})):
        for split, t in tables.items():
            cols = table_columns(t)
            rows = [[f"{g}={v}" if g != "all" else "all"] + [_fmt(t[c][i], 0 if c == "count" else 4) for c in cols]
                    for i, (g, v) in enumerate(zip(t["group"], t["value"]))]
            out.append((f"{label} ({split})", ["group"] + cols, rows))
    sw = rep["context"].get("sweep")
    if sw:
        out.append((f"Trade-off: the goal retrained at each {sw['parameter']} (values on the training data)",
                    [sw["parameter"], "objective", "disparity", "largest violation"],
                    [[_fmt(v), _fmt(o), _fmt(d), _fmt(m)] for v, o, d, m in
                     zip(sw["values"], sw["objective"], sw["disparity"], sw["max_violation"])]))
    sol = rep["solution"]
    out.append((f"Solution: {sol['kind']}", ["recorded iterate", "iteration", "probability"],
                [[s["iterate"], s["iteration"], _fmt(s["probability"])] for s in sol["support"]]))
    facts = [["method", rep["method"]], ["iterations", rep["n_iter"]], ["recorded iterates", rep["n_recorded"]],
             ["training time (s)", _fmt(rep["training_seconds"], 2)], ["seed", rep["seed"]],
             ["created", rep["created"]],
             ["tolerance (a goal is met when its value is <= it)", f"{rep.get('tolerance', TOLERANCE):g}"]] + \
            [[f"version of {k}", v] for k, v in rep["versions"].items()] + \
            [[k, v] for k, v in rep["context"].items() if not isinstance(v, (dict, list)) and k != "goals_toml"]
    out.append(("Run", ["fact", "value"], [[a, _fmt(b)] for a, b in facts]))
    return out


def _tolerance_note(rep):
    """The sentence that states the rule the report judged the goals with."""
    tol = rep.get("tolerance", TOLERANCE)
    return f"A goal is met when its value is <= {tol:g}" + (" (the round-off tolerance)." if tol == TOLERANCE
                                                             else ".")


def render_markdown(rep):
    """The report as Markdown text."""
    lines = [f"# {rep['title']}", "",
             (_banner(rep) if rep["all_met"] else f"**{_banner(rep)}**") + " " + _tolerance_note(rep), ""]
    for head, cols, rows in _sections(rep):
        lines += [f"## {head}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
        lines.append("")
    if rep["context"].get("goals_toml"):
        lines += ["## Goals file", "", "```toml", rep["context"]["goals_toml"].rstrip(), "```", ""]
    return "\n".join(lines)


def _comparison(rep):
    return rep.get("comparison") or "comparison model"


def _column(t, name):
    """A table column as floats (a JSON table's missing values, None, as NaN)."""
    return np.array([np.nan if v is None else v for v in t[name]], dtype=float)


def _two_class(column, transform=None):
    def values(t):
        v = _column(t, column)
        return v if transform is None else transform(v, t)
    return values


#: Two-class rates of the goals' constraint names (the rate language's short names) that a per-group table gives:
#: short name -> the function of the table that computes it.
_TABLE_RATES = {
    "ppr": _two_class("positive_rate"),
    "npr": _two_class("positive_rate", lambda v, t: 1.0 - v),
    "tpr": _two_class("tpr"), "fpr": _two_class("fpr"), "fnr": _two_class("fnr"), "tnr": _two_class("tnr"),
    "error": _two_class("error"),
    "accuracy": _two_class("error", lambda v, t: 1.0 - v),
    "prevalence": _two_class("prevalence"),
    "tp_prop": _two_class("tpr", lambda v, t: v * _column(t, "prevalence")),
    "fn_prop": _two_class("fnr", lambda v, t: v * _column(t, "prevalence")),
    "fp_prop": _two_class("fpr", lambda v, t: v * (1.0 - _column(t, "prevalence"))),
    "tn_prop": _two_class("tnr", lambda v, t: v * (1.0 - _column(t, "prevalence"))),
    "precision": _two_class("tpr", lambda v, t: v * _column(t, "prevalence") / _column(t, "positive_rate")),
}
#: K-class rates ``name(c)`` -> the table column of class ``c``.
_CLASS_RATES = {"ppr": "proportion[{}]", "recall": "recall[{}]"}
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_RATE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\([^()]*\))?\x00")


def _rates_of(name):
    """The rates a constraint's name mentions (``"tpr[group=A] >= tpr[all] - 0.05"`` -> ``["tpr"]``)."""
    prev = None
    while prev != name:  # each context "[...]" (innermost first) becomes one mark: a group value is no rate
        prev, name = name, _BRACKETS.sub("\x00", name)
    out = []
    for m in _RATE.finditer(name):
        rate = m.group(1) + (m.group(2) or "")
        if rate not in out:
            out.append(rate)
    return out


def _rows_of(rep, rate, table):
    """The table rows a rate's figure shows: ``all`` and the group columns its constraints name (all rows when
    they name none the table has)."""
    columns = set()
    for g in rep["goals"]:
        if rate in _rates_of(g["name"]):
            columns |= {ctx.split("=", 1)[0] for ctx in re.findall(r"\[([^\[\]]*)\]", g["name"]) if "=" in ctx}
    keep = [i for i, grp in enumerate(table["group"]) if grp == "all" or grp in columns]
    return keep if len(keep) > 1 else list(range(len(table["group"])))


def _rate_values(table, rate):
    """``rate``'s value per row of a per-group table, or None when the table does not give it."""
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\((.*)\)", rate)
    if m:
        column = _CLASS_RATES.get(m.group(1), "").format(m.group(2))
        return _column(table, column) if column and column in table else None
    if rate in _TABLE_RATES and "positive_rate" in table:
        with np.errstate(divide="ignore", invalid="ignore"):
            return _TABLE_RATES[rate](table)
    return None


def constrained_rates(rep):
    """The rates the report's goals constrain, and whether its per-group tables give each.

    Parameters
    ----------
    rep : dict
        A report from :func:`build_report`.

    Returns
    -------
    plotted : list of str
        The rates (short names of the rate language, e.g. ``"tpr"``, ``"fpr"``,
        ``"ppr(2)"``) in the order the goals first name them, that the
        per-group tables give (two classes: ``ppr``, ``npr``, ``tpr``, ``fpr``,
        ``fnr``, ``tnr``, ``error``, ``accuracy``, ``precision``,
        ``prevalence`` and the ``*_prop`` proportions; K classes: ``ppr(c)``
        and ``recall(c)``).
    others : list of str
        The rates the goals name that the tables do not give (e.g. churn,
        counts, a confusion cell), which the report lists without a plot.
    """
    rates = []
    for g in rep["goals"]:
        rates += [r for r in _rates_of(g["name"]) if r not in rates]
    tables = list(rep["group_rates"].values())
    if not tables:
        return [], rates
    plotted = [r for r in rates if _rate_values(tables[0], r) is not None]
    return plotted, [r for r in rates if r not in plotted]


def _rate_table(t, rate, rows):
    """The rows ``rows`` of a per-group table, with the one column ``rate``."""
    values = _rate_values(t, rate)
    return {"group": [t["group"][i] for i in rows], "value": [t["value"][i] for i in rows], rate: values[rows]}


def _verdict(rep, rate, split):
    """The caption's judgement of the goals on ``rate`` on ``split``, stating the tolerance rule."""
    tol = rep.get("tolerance", TOLERANCE)
    on = [g for g in rep["goals"] if rate in _rates_of(g["name"])]
    vals = [g["values"][split] for g in on if g["values"].get(split) is not None]
    if not vals:
        return f"{len(on)} constraint(s) on {rate}; not evaluated on the {split} data."
    worst = max(vals)
    met = all(goal_met(v, tol) for v in vals)
    return (f"{len(on)} constraint(s) on {rate}; largest value on the {split} data {worst:+.4g}: "
            + ("met" if met else "NOT met") + f" (a goal is met when its value is <= {tol:g}).")


def _figures(rep):
    """``(trajectory, [(rate, [(split, caption, png)])], tradeoff)``: PNG figures; empty without matplotlib.

    Drawn off pyplot (``plot._unmanaged``): a batch of reports leaves no figure open.
    """
    per_rate = []
    try:
        with plot._unmanaged():
            trajectory = [("Training trajectory", plot.to_png(plot.plot_trajectory(rep["trajectory"])))]
            plotted, _ = constrained_rates(rep)
            before_all = rep.get("group_rates_before") or {}
            labels = (_comparison(rep), "rateopt (with the goals)")
            for rate in plotted:
                figs = []
                for split, t in rep["group_rates"].items():
                    rows = _rows_of(rep, rate, t)
                    mine = _rate_table(t, rate, rows)
                    before = before_all.get(split)
                    if before is not None:
                        before = _rate_table(before, rate, rows)
                    fig = plot.plot_group_rates(mine, before=before, rate=rate, labels=labels, split=split)
                    figs.append((split, _verdict(rep, rate, split), plot.to_png(fig)))
                per_rate.append((rate, figs))
            tradeoff = []
            if rep["context"].get("sweep"):
                tradeoff = [("Trade-off (training data)",
                             plot.to_png(plot.plot_tradeoff(rep["context"]["sweep"], split="train")))]
    except RateoptError:
        return [], [], []
    return trajectory, per_rate, tradeoff


_CSS = ("body{font-family:system-ui,sans-serif;max-width:80em;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:0.25em 0.6em;"
        "text-align:left}th{background:#f2f2f2}.bad{color:#b00;font-weight:bold}.ok{color:#070}"
        "img{max-width:100%}pre{background:#f6f6f6;padding:0.6em}"
        ".figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(30em,1fr));gap:1em}"
        "figure{margin:0}figcaption{font-size:0.9em;margin-top:0.3em}")


def _banner(rep):
    """The report's verdict: all met, or how many constraints are not met on which split."""
    if rep["all_met"]:
        return "All goals are met on every split reported."
    splits = list(rep["objective"])
    failed = {s: sum(not g["met"].get(s, True) for g in rep["goals"]) for s in splits}
    where = ", ".join(f"{n} of {len(rep['goals'])} on the {s} data" for s, n in failed.items() if n)
    return f"Some goals are NOT met ({where}; see the table)."


def _html_table(e, head, cols, rows):
    out = [f"<h2>{e(head)}</h2><table><tr>" + "".join(f"<th>{e(str(c))}</th>" for c in cols) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td class='bad'>{e(str(c))}</td>" if c == "NO" else f"<td>{e(str(c))}</td>"
                                    for c in r) + "</tr>")
    out.append("</table>")
    return out


def _html_rate_figures(e, rep, per_rate):
    """The section of the constrained rates' figures: one heading per rate, one figure per split."""
    if not per_rate:
        return []
    compared = (f"The bars labelled &ldquo;{e(_comparison(rep))}&rdquo; are that model's, for comparison: it is not "
                "held to the goals. ") if rep.get("group_rates_before") else ""
    parts = ["<h2>Constrained rates per group</h2>"
             f"<p>Every rate the goals constrain, per group, on every split with a per-group table "
             f"({e(', '.join(rep['group_rates']))}). {compared}{e(_tolerance_note(rep))}</p>"]
    for rate, figs in per_rate:
        parts.append(f"<h3>{e(rate)}</h3><div class='figs'>")
        for split, caption, png in figs:
            data = base64.b64encode(png).decode("ascii")
            cls = "bad" if "NOT met" in caption else "ok" if ": met" in caption else ""
            parts.append(f"<figure><img alt='{e(rate)} per group ({e(split)} data)' "
                         f"src='data:image/png;base64,{data}'><figcaption class='{cls}'>{e(split)}: "
                         f"{e(caption)}</figcaption></figure>")
        parts.append("</div>")
    return parts


def render_html(rep, figures=True):
    """The report as one self-contained HTML page (plots as base64 PNG)."""
    e = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(rep['title'])}</title>"
             f"<style>{_CSS}</style></head><body><h1>{e(rep['title'])}</h1>",
             f"<p class='{'ok' if rep['all_met'] else 'bad'}'>{e(_banner(rep))}</p>",
             f"<p>{e(_tolerance_note(rep))}</p>"]
    trajectory, per_rate, tradeoff = _figures(rep) if figures else ([], [], [])
    for head, cols, rows in _sections(rep):
        parts += _html_table(e, head, cols, rows)
        if head == "Objective":  # the figures of the goals' rates right below the goals and the objective
            parts += _html_rate_figures(e, rep, per_rate)
            _, others = constrained_rates(rep)
            if figures and others:
                why = ("the per-group tables do not give them" if rep["group_rates"] else
                       "the report has no per-group table")
                parts.append(f"<p>Constrained rates not plotted ({why}): {e(', '.join(others))}.</p>")
    for caption, png in trajectory + tradeoff:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<h2>{e(caption)}</h2><img alt='{e(caption)}' src='data:image/png;base64,{data}'>")
    if rep["context"].get("goals_toml"):
        parts.append(f"<h2>Goals file</h2><pre>{e(rep['context']['goals_toml'])}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts)


def render(rep, fmt):
    """Render a report as text.

    Parameters
    ----------
    rep : dict
        A report from :func:`build_report`.
    fmt : {"markdown", "html", "json"}
        The format.

    Returns
    -------
    str
        The report's text (HTML: one self-contained page).
    """
    if fmt == "markdown":
        return render_markdown(rep)
    if fmt == "html":
        return render_html(rep)
    if fmt == "json":
        return json.dumps(rep, indent=1, allow_nan=False)
    raise RateoptError(f"report format must be 'markdown', 'html' or 'json', got {fmt!r}")


def write_report(rep, path):
    """Write a report to a file, the format chosen by its suffix.

    Parameters
    ----------
    rep : dict
        A report from :func:`build_report`.
    path : str or os.PathLike
        The file: ``.md``/``.markdown``, ``.html``/``.htm`` or ``.json``.
    """
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in REPORT_FORMATS:
        raise RateoptError(f"{path}: a report file ends with one of {sorted(REPORT_FORMATS)}")
    text = render(rep, REPORT_FORMATS[ext])
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
