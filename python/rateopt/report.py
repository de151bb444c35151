"""Reports a reviewer reads: Markdown, one self-contained HTML file, or JSON.

:func:`build_report` collects the facts of a training run into one
JSON-ready dict: the goals with their values on train / validation / test and
whether each is met, per-group rates (:func:`rateopt.group_rates`), the chosen
solution (its support iterates and probabilities), the trajectory, training
time, versions and seed. :func:`render` writes it as Markdown, HTML (plots
embedded as base64 PNG when matplotlib is installed) or JSON.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import os
import platform
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
           "table_columns", "REPORT_FORMATS"]

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
                 context=None, certificates=None, weights=None):
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

    Returns
    -------
    dict
        ``goals`` (name, values and met per split), ``objective`` per split,
        ``all_met``, ``classes``, ``group_rates``, ``solution`` (kind, support
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
    k = getattr(result, "n_trivial", 0)  # the trivial rules (iteration -1) are candidates, not iterates
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
    for label, tables in (("Per-group rates", rep["group_rates"]), ("Per-group rates, comparison model",
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
             ("All goals are met on every split reported." if rep["all_met"]
              else "**Some goals are NOT met** (see the table).") + " " + _tolerance_note(rep), ""]
    for head, cols, rows in _sections(rep):
        lines += [f"## {head}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
        lines.append("")
    if rep["context"].get("goals_toml"):
        lines += ["## Goals file", "", "```toml", rep["context"]["goals_toml"].rstrip(), "```", ""]
    return "\n".join(lines)


def _figures(rep):
    """``[(caption, png bytes)]``; empty when matplotlib is missing."""
    try:
        figs = [("Training trajectory", plot.plot_trajectory(rep["trajectory"]))]
        for split, t in rep["group_rates"].items():
            if "positive_rate" not in t:  # K classes: no two-class rate to plot
                break
            before = (rep.get("group_rates_before") or {}).get(split)
            for rate in ("positive_rate", "tpr"):
                figs.append((f"{rate} per group ({split})",
                             plot.plot_group_rates(t, before, rate=rate, labels=("comparison", "rateopt"),
                                                   split=split)))
            break
        if rep["context"].get("sweep"):
            figs.append(("Trade-off (training data)", plot.plot_tradeoff(rep["context"]["sweep"], split="train")))
    except RateoptError:
        return []
    return [(c, plot.to_png(f)) for c, f in figs]


_CSS = ("body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:0.25em 0.6em;"
        "text-align:left}th{background:#f2f2f2}.bad{color:#b00;font-weight:bold}.ok{color:#070}"
        "img{max-width:100%}pre{background:#f6f6f6;padding:0.6em}")


def render_html(rep, figures=True):
    """The report as one self-contained HTML page (plots as base64 PNG)."""
    e = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(rep['title'])}</title>"
             f"<style>{_CSS}</style></head><body><h1>{e(rep['title'])}</h1>",
             "<p class='ok'>All goals are met on every split reported.</p>" if rep["all_met"]
             else "<p class='bad'>Some goals are NOT met (see the table).</p>",
             f"<p>{e(_tolerance_note(rep))}</p>"]
    for head, cols, rows in _sections(rep):
        parts.append(f"<h2>{e(head)}</h2><table><tr>" + "".join(f"<th>{e(str(c))}</th>" for c in cols) + "</tr>")
        for r in rows:
            parts.append("<tr>" + "".join(f"<td class='bad'>{e(str(c))}</td>" if c == "NO" else f"<td>{e(str(c))}</td>"
                                          for c in r) + "</tr>")
        parts.append("</table>")
    if figures:
        for caption, png in _figures(rep):
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
