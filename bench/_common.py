"""Shared helpers for the scripts in ``bench/``.

Benchmarks measure; tests assert correctness (DESIGN §3 rule 6). Every bench
script records where and on what it ran (machine, library versions, thread
settings, git SHA, date) next to its numbers, times each configuration several
times and reports medians, and writes a JSON file plus a short markdown table to
``bench/results/``. The helpers here are the parts every script needs:

* :func:`time_repeated` / :class:`Interleaved` -- wall-clock timing with
  ``time.perf_counter``, warm-up calls, medians. ``Interleaved`` runs the
  repeats of several configurations round-robin, so slow drift on a shared,
  noisy machine hits all of them alike and ratios taken in the same run stay
  meaningful.
* :func:`machine_info`, :func:`git_sha`, :func:`utc_now` -- provenance.
* :func:`results_paths`, :func:`write_results`, :func:`markdown_table`,
  :func:`emit_json_line` -- output.

This module imports only the standard library and NumPy at import time, so a
script can report a useful error when the compiled package is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import io
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"

__all__ = [
    "BENCH_DIR",
    "CpuMonitor",
    "REPO_ROOT",
    "RESULTS_DIR",
    "Interleaved",
    "add_common_args",
    "emit_json_line",
    "git_sha",
    "machine_info",
    "markdown_table",
    "median",
    "results_paths",
    "time_repeated",
    "limit_blas_threads",
    "utc_now",
    "wait_for_quiet",
    "write_results",
]


# --------------------------------------------------------------------------- timing


#: The training settings the papers' reproductions and the benchmarks recorded
#: before issue 14's defaults study ran with: the papers' hinge objective proxy
#: and the paper's uniform swap-regret start without a floor. Scripts whose
#: committed results came from those settings pass them explicitly, so a rerun
#: reproduces them (rateopt's defaults are now the study's: docs/defaults.md).
PAPER_SETTINGS = {"proxy": "hinge", "lambda_init": "uniform", "lambda_floor": 0.0}


def paper_settings(method):
    """:data:`PAPER_SETTINGS` less what ``method``'s game does not read (a game refuses such a setting)."""
    from rateopt.games import get_game

    reads = get_game(method).reads
    return {k: v for k, v in PAPER_SETTINGS.items() if k in reads}


def median(values: Iterable[float]) -> float:
    """Median of a non-empty sequence of numbers (``statistics.median``)."""
    values = list(values)
    if not values:
        raise ValueError("median of an empty sequence")
    return float(statistics.median(values))


def time_repeated(
    fn: Callable[[], Any], *, repeats: int, warmup: int = 1
) -> dict[str, Any]:
    """Time ``fn()`` ``repeats`` times after ``warmup`` untimed calls.

    Returns ``{"median_s", "min_s", "samples_s", "last"}``; ``last`` is the
    return value of the last warm-up call (or of the first timed call when
    ``warmup == 0``), so a caller can check the result without an extra run.
    """
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    last = None
    for _ in range(warmup):
        last = fn()
    samples = []
    for i in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        samples.append(time.perf_counter() - t0)
        if warmup == 0 and i == 0:
            last = out
        del out
    return {
        "median_s": median(samples),
        "min_s": min(samples),
        "samples_s": samples,
        "last": last,
    }


class Interleaved:
    """Time several named configurations with their repeats interleaved.

    ``add(name, fn)`` registers a configuration; ``run(repeats=...)`` calls
    each configuration ``warmup`` times (untimed, in registration order), then
    performs rounds, each timing every configuration once. On a machine shared
    with other work, slow drift then affects all configurations alike, which
    keeps ratios of medians from the same run honest.

    With ``quiet_cores`` set, each round is watched with :class:`CpuMonitor`;
    a round is *quiet* if other processes used at most ``quiet_cores`` cores on
    average meanwhile. Rounds continue until ``repeats`` quiet rounds are in or
    ``max_rounds`` rounds have run; medians then use the quiet rounds only if
    there are at least ``min(repeats, 3)`` of them, else all rounds (and
    :attr:`used_quiet_only` is False). All samples and per-round loads are kept.

    After ``run``: ``median_s(name)``, ``samples_s(name)`` (the rounds the
    median uses), ``all_samples_s(name)``, ``warm_result(name)`` (the return
    value of the last warm-up call, for correctness checks), ``round_loads``.
    """

    def __init__(self) -> None:
        self._fns: dict[str, Callable[[], Any]] = {}
        self._samples: dict[str, list[float]] = {}
        self._warm: dict[str, Any] = {}
        self.round_loads: list[float | None] = []
        self.used_rounds: list[int] = []
        self.used_quiet_only = False

    def add(self, name: str, fn: Callable[[], Any]) -> None:
        if name in self._fns:
            raise ValueError(f"duplicate configuration name {name!r}")
        self._fns[name] = fn

    def run(
        self,
        *,
        repeats: int,
        warmup: int = 1,
        on_warm: Callable[[str, Any], None] | None = None,
        quiet_cores: float | None = None,
        max_rounds: int | None = None,
    ) -> None:
        """Warm up, then time interleaved rounds (see the class docstring).

        ``on_warm(name, result)``, if given, is called right after each
        configuration's last warm-up call (e.g. to check it, then drop it).
        The warm-up result is kept for :meth:`warm_result` only when
        ``on_warm`` is not given.
        """
        if repeats < 1:
            raise ValueError("repeats must be >= 1")
        if quiet_cores is None or max_rounds is None:
            max_rounds = repeats
        max_rounds = max(max_rounds, repeats)
        for name, fn in self._fns.items():
            res = None
            for _ in range(max(warmup, 0)):
                res = fn()
            if on_warm is not None:
                on_warm(name, res)
            else:
                self._warm[name] = res
            del res
            self._samples[name] = []
        quiet: list[int] = []
        for r in range(max_rounds):
            with CpuMonitor() as mon:
                for name, fn in self._fns.items():
                    t0 = time.perf_counter()
                    out = fn()
                    self._samples[name].append(time.perf_counter() - t0)
                    del out
            load = mon.external_cores
            self.round_loads.append(load)
            if quiet_cores is None or load is None or load <= quiet_cores:
                quiet.append(r)
            if quiet_cores is None and r + 1 >= repeats:
                break
            if len(quiet) >= repeats:
                break
        n_rounds = len(self.round_loads)
        if quiet_cores is not None and len(quiet) >= min(repeats, 3):
            self.used_rounds = quiet[:repeats]
            self.used_quiet_only = True
        else:
            self.used_rounds = list(range(n_rounds))
            self.used_quiet_only = quiet_cores is None

    def median_s(self, name: str) -> float:
        return median(self.samples_s(name))

    def samples_s(self, name: str) -> list[float]:
        return [self._samples[name][r] for r in self.used_rounds]

    def all_samples_s(self, name: str) -> list[float]:
        return list(self._samples[name])

    def warm_result(self, name: str) -> Any:
        return self._warm.get(name)

    def names(self) -> list[str]:
        return list(self._fns)


# --------------------------------------------------------------------------- machine load


def _proc_stat_busy() -> tuple[float, float] | None:
    """(busy, total) CPU seconds summed over all CPUs since boot, from /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    vals = [float(v) for v in fields[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0.0)
    total = sum(vals[:8])
    hz = float(os.sysconf("SC_CLK_TCK"))
    return (total - idle) / hz, total / hz


class CpuMonitor:
    """How busy the *other* processes kept the machine during a block.

    ``external_cores`` = (all CPU time used on the machine - this process's CPU
    time) / wall time, i.e. the average number of cores taken by other work.
    On a small shared machine a value above ~0.2 means multi-threaded timings
    of this block are contaminated (a worker thread had to share its core).
    Linux only (``/proc/stat``); elsewhere the fields are None.
    """

    def __init__(self) -> None:
        self.external_cores: float | None = None
        self.own_cores: float | None = None
        self.wall_s: float | None = None

    def __enter__(self) -> CpuMonitor:
        self._t0 = time.perf_counter()
        self._own0 = _own_cpu_s()
        self._sys0 = _proc_stat_busy()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.wall_s = time.perf_counter() - self._t0
        sys1 = _proc_stat_busy()
        own = _own_cpu_s() - self._own0
        self.own_cores = own / self.wall_s if self.wall_s > 0 else None
        if self._sys0 is not None and sys1 is not None and self.wall_s > 0:
            busy = sys1[0] - self._sys0[0]
            self.external_cores = max(0.0, (busy - own) / self.wall_s)

    def as_dict(self) -> dict[str, Any]:
        return {"external_cores": self.external_cores, "own_cores": self.own_cores,
                "wall_s": self.wall_s}


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def wait_for_quiet(max_wait_s: float, *, max_external_cores: float = 0.25,
                   window_s: float = 2.0) -> dict[str, Any]:
    """Sleep until other processes use at most ``max_external_cores`` cores
    on average over a ``window_s`` window, or ``max_wait_s`` has passed.

    Returns ``{"waited_s", "external_cores", "quiet"}`` (the last window's load).
    """
    t0 = time.perf_counter()
    load = None
    while True:
        with CpuMonitor() as mon:
            time.sleep(window_s)
        load = mon.external_cores
        if load is None or load <= max_external_cores:
            quiet = True
            break
        if time.perf_counter() - t0 + window_s > max_wait_s:
            quiet = False
            break
    return {"waited_s": time.perf_counter() - t0, "external_cores": load,
            "quiet": quiet}


def limit_blas_threads(n: int | None) -> Any:
    """A context manager limiting BLAS thread pools to ``n`` threads
    (threadpoolctl), or a no-op if ``n`` is None or threadpoolctl is missing.

    Why: OpenBLAS worker threads busy-wait after each call; on a 2-core
    machine they then steal the core an OpenMP kernel timed next needs.
    """
    if n is None:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")


# --------------------------------------------------------------------------- provenance


def utc_now() -> str:
    """The current UTC time, ISO 8601 with seconds."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def git_sha(repo: Path = REPO_ROOT) -> dict[str, Any]:
    """``{"sha": ..., "dirty": ...}`` for ``repo``; values are None if unknown.

    Uses only read-only git commands (``rev-parse``, ``status --porcelain``).
    ``sha`` is None outside a repository or before the first commit.
    """

    def _git(*args: str) -> str | None:
        try:
            proc = subprocess.run(
                ["git", "-C", str(repo), *args],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    sha = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"sha": sha, "dirty": None if status is None else bool(status)}


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _threadpool_info() -> list[dict[str, Any]] | None:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    keep = ("user_api", "internal_api", "num_threads", "version", "prefix")
    return [{k: d.get(k) for k in keep} for d in threadpool_info()]


def _show_config(module: Any) -> Any:
    """The output of ``module.show_config()``: its return value if it returns
    something JSON-friendly, else what it printed. None if absent or failing."""
    fn = getattr(module, "show_config", None)
    if fn is None:
        return None
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            ret = fn()
    except Exception as exc:  # provenance must never break a benchmark
        return f"show_config() failed: {type(exc).__name__}: {exc}"
    if ret is not None:
        try:
            json.dumps(ret)
            return ret
        except (TypeError, ValueError):
            return str(ret)
    return buf.getvalue().strip() or None


def machine_info(extra_modules: Sequence[str] = ("numpy", "scipy")) -> dict[str, Any]:
    """Where the benchmark ran: platform, CPUs, memory, library versions,
    thread settings, and ``rateopt.show_config()`` if rateopt is importable."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
    }
    if hasattr(os, "sched_getaffinity"):
        info["cpu_affinity_count"] = len(os.sched_getaffinity(0))
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        info["memory_gib"] = round(pages * page_size / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    info["env"] = {
        k: os.environ[k]
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                  "OMP_PROC_BIND", "OMP_PLACES")
        if k in os.environ
    }
    versions: dict[str, str | None] = {}
    for name in extra_modules:
        try:
            mod = __import__(name)
            versions[name] = getattr(mod, "__version__", None)
        except ImportError:
            versions[name] = None
    try:
        import rateopt

        versions["rateopt"] = getattr(rateopt, "__version__", None)
        info["rateopt_show_config"] = _show_config(rateopt)
        core = getattr(rateopt, "_core", None)
        if core is not None and hasattr(core, "openmp_enabled"):
            try:
                info["rateopt_openmp_enabled"] = bool(core.openmp_enabled())
            except Exception:
                pass
    except ImportError:
        versions["rateopt"] = None
    info["versions"] = versions
    info["threadpools"] = _threadpool_info()
    if hasattr(os, "getloadavg"):
        info["loadavg"] = list(os.getloadavg())
    return info


# --------------------------------------------------------------------------- output


def add_common_args(parser: argparse.ArgumentParser) -> None:
    """``--quick``, ``--json``, ``--out`` with the meaning every bench script shares."""
    parser.add_argument(
        "--quick", action="store_true",
        help="small sizes and fewer repeats (a run of well under 30 s); results go "
             "to <name>_quick.json/.md unless --out is given",
    )
    parser.add_argument(
        "--json", action="store_true",
        help="make the last stdout line one JSON object with the results",
    )
    parser.add_argument(
        "--out", type=Path, default=None,
        help="JSON results path (the markdown table goes next to it, .md); "
             "default bench/results/<name>.json, or <name>_quick.json with --quick",
    )


def results_paths(name: str, *, quick: bool, out: Path | None) -> tuple[Path, Path]:
    """(json_path, md_path). A quick run never overwrites the full results
    unless ``out`` says so explicitly."""
    if out is None:
        out = RESULTS_DIR / (f"{name}_quick.json" if quick else f"{name}.json")
    out = Path(out)
    return out, out.with_suffix(".md")


def _json_default(obj: Any) -> Any:
    # NumPy scalars/arrays and Paths, without importing numpy here.
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def _finite(obj: Any) -> Any:
    """Replace NaN/inf (not valid JSON) by None, recursively."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def to_json(obj: Any, *, indent: int | None = None) -> str:
    """JSON text (strict: NaN/inf become null)."""
    obj = json.loads(json.dumps(obj, default=_json_default))  # normalize numpy types
    return json.dumps(_finite(obj), indent=indent, allow_nan=False)


def write_results(result: dict[str, Any], md_text: str, json_path: Path,
                  md_path: Path) -> None:
    """Write the full result as pretty JSON and the markdown summary."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(to_json(result, indent=2) + "\n", encoding="utf-8")
    md_path.write_text(md_text.rstrip() + "\n", encoding="utf-8")


def emit_json_line(result: dict[str, Any]) -> None:
    """Print ``result`` as one compact JSON line (the last line of stdout)."""
    sys.stdout.flush()
    print(to_json(result), flush=True)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table; floats are shown with 3 significant digits
    (ms and GB/s values) unless already formatted as strings."""

    def cell(v: Any) -> str:
        if v is None:
            return "–"
        if isinstance(v, float):
            if not math.isfinite(v):
                return "–"
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
