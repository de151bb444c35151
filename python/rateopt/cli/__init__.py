"""The ``rateopt`` command line: fit, evaluate, predict and report for batch pipelines.

``rateopt fit`` trains under a goals file and saves the model with its
encoding, ``rateopt evaluate`` is a pipeline gate (exit status 1 when a goal
is violated beyond ``--tolerance``), ``rateopt predict`` scores a file in
chunks, ``rateopt report`` re-renders a report from a saved training result;
``datasets``, ``reproduce``, ``selfcheck`` and ``demo`` complete it. With no
arguments it runs the self-check and the demo (``python -m rateopt``).

Exit status: 0 success; 1 a goal violated (``evaluate``) or a failed
self-check; 2 bad input (a missing column, an invalid goals file, a model
from another version, ...), reported as one line on standard error. Set
``RATEOPT_DEBUG=1`` to see the traceback instead. See ``docs/cli.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from .._params import MODEL_PARAMS, SOLUTION_PARAMS, TRAIN_PARAMS
from .._version import __version__
from ..exceptions import RateoptError
from . import _commands

__all__ = ["main", "build_parser"]

EXIT_OK, EXIT_VIOLATED, EXIT_BAD_INPUT = 0, 1, 2


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit status 2 (as argparse), no usage dump
        raise _UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def _csv_list(text):
    return tuple(s.strip() for s in text.split(",") if s.strip())


def _float_list(text):
    try:
        values = [float(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number")
    return values


def _param_value(text):
    """A command-line value for the parameter tables: none/true/false, int, float, else the string."""
    low = text.strip().lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _add_params(p, tables):
    group = p.add_argument_group("training parameters (the table shared with rateopt.train; default: the goals "
                                 "file's [train], else rateopt's)")
    group.add_argument("--method", dest="param_method", default=argparse.SUPPRESS, metavar="METHOD",
                       help="the training game: auto or a name of rateopt.games.GAMES (proxy-swap, "
                            "proxy-external, lagrangian-hinge, unconstrained, three-player, ...)")
    for table in tables:
        for param in table:
            if param.name in ("oracle", "verbose", "random_state", "n_threads"):
                continue
            group.add_argument("--" + param.name.replace("_", "-"), dest="param_" + param.name, type=_param_value,
                               default=argparse.SUPPRESS, metavar=param.name.upper(),
                               help=f"{param.doc} (default: {param.default!r})".replace("%", "%%"))


def _add_columns(p):
    p.add_argument("--label", help="the label column (two distinct values)")
    p.add_argument("--positive", help="the label value that is the positive class (default: the larger)")
    p.add_argument("--groups", type=_csv_list, default=(), help="group columns, comma-separated (LIBSVM: "
                   "feature indices)")
    p.add_argument("--weight", help="a column of example weights")
    p.add_argument("--baseline", help="a column of a deployed model's decisions or scores")
    p.add_argument("--drop", type=_csv_list, default=(), help="columns that are not features")


def build_parser():
    """The argument parser of ``rateopt``."""
    root = _Parser(prog="rateopt", description="Train and check classifiers under rate goals.")
    root.add_argument("--version", action="version", version=f"rateopt {__version__}")
    root.add_argument("--quiet", action="store_true", help="no progress bars")
    # The global flags are accepted after the command too (rateopt fit ... --quiet); SUPPRESS keeps a flag
    # given before the command when it is not repeated after it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress bars")
    sub = root.add_subparsers(dest="command", parser_class=_Parser)

    def command(name, **kwargs):
        return sub.add_parser(name, parents=[common], **kwargs)

    fmt = dict(choices=("csv", "parquet", "libsvm"), help="the data's format (default: from the suffix)")

    p = command("fit", help="train under a goals file and save the model")
    p.add_argument("data", help="training data: .csv, .parquet or .libsvm/.svm")
    p.add_argument("--goals", required=True, help="the goals file (TOML)")
    p.add_argument("--out", required=True, help="the model file to write (.npz)")
    p.add_argument("--report", help="also write a report (.html, .md or .json)")
    p.add_argument("--format", **fmt)
    _add_columns(p)
    p.add_argument("--unknown", choices=("ignore", "error"), default="ignore",
                   help="categories unseen in training, at predict time: all-zero one-hot (ignore) or an error")
    p.add_argument("--seed", type=int, default=0, help="the run's random seed (rateopt.train's random_state; a kernel model's landmarks too)")
    p.add_argument("--threads", type=int, default=None, help="threads of the core (default: the OpenMP setting)")
    p.add_argument("--compare-unconstrained", action="store_true",
                   help="also train without goals and show its per-group rates in the report")
    p.add_argument("--sweep", type=_float_list, metavar="V1,V2,...",
                   help="also retrain at these values of a goal's slack (warm-started) and add the trade-off "
                        "curve to the report")
    p.add_argument("--sweep-goal", type=int, default=0, help="which goal --sweep varies (0-based, file order)")
    p.add_argument("--certify", type=float, default=None, metavar="CONFIDENCE",
                   help="bound every goal's population value on the goals file's validation and test splits "
                        "(held out) at this confidence; shown in the summary and the report")
    p.add_argument("--postprocess", metavar="SCORE_COLUMN|MODEL.npz", default=None,
                   help="instead of training, fit the exact best randomized per-group threshold rule under the "
                        "goals on this numeric column of scores (any model's), or on the scores of a model file "
                        "written by rateopt fit, with the --groups columns as cells; predict and evaluate then "
                        "score the rows the same way and read the groups")
    p.add_argument("--sweep-parameter", default="slack", help="which parameter of that goal --sweep varies")
    _add_params(p, (TRAIN_PARAMS, MODEL_PARAMS, SOLUTION_PARAMS))

    p = command("evaluate", help="per-goal values and per-group rates; exit status 1 if a goal is violated")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("--goals", help="goals file (default: the goals the model was trained with)")
    p.add_argument("--tolerance", type=float, default=None,
                   help="allowed violation before the gate fails (default: 1e-9, the report's round-off tolerance)")
    p.add_argument("--decisions", choices=("expected", "drawn"), default="expected",
                   help="score the expected decisions (probabilities) or one seeded draw")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", dest="json_out", help="write the evaluation as JSON")
    p.add_argument("--certify", type=float, default=None, metavar="CONFIDENCE",
                   help="treat DATA as held out: bound every goal's population value at this confidence "
                        "(e.g. 0.95) from the model's drawn decisions; the gate then also fails when a goal "
                        "is not certified")
    p.add_argument("--id-column", metavar="NAME", default=None,
                   help="a column of row ids: each row's drawn decision is keyed on its id (default: on its row "
                        "number in DATA)")
    p.add_argument("--format", **fmt)

    p = command("predict", help="score a file in chunks")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("--out", required=True, help="predictions file (.csv or .parquet)")
    p.add_argument("--proba", action="store_true", help="also write the probability of the positive class (K "
                   "classes: one probability column per class is always written)")
    p.add_argument("--seed", type=int, default=0, help="seed of a stochastic model's draws")
    p.add_argument("--keep", type=_csv_list, default=(), help="input columns copied to the output (e.g. an id)")
    p.add_argument("--chunk-rows", type=int, default=100_000,
                   help="rows read and scored at a time (decisions do not depend on it)")
    p.add_argument("--id-column", metavar="NAME", default=None,
                   help="a column of row ids: each row's drawn decision is keyed on its id (default: on its row "
                        "number in DATA, so the same file gives the same decisions in any chunking)")
    p.add_argument("--format", **fmt)

    p = command("report", help="re-render a report from a saved training result")
    p.add_argument("result", help="the .result.npz written by fit (or the model .npz next to it)")
    p.add_argument("--out", required=True, help="report file (.html, .md or .json)")
    p.add_argument("--solution", help="re-select the solution (m-stochastic, T-stochastic, best, last, exact)")
    p.add_argument("--epsilon", type=float, default=None)
    p.add_argument("--data", help="data to recompute per-group rates on (a file in the model's format)")
    p.add_argument("--model-out", help="write the re-selected classifier here (with its encoding)")

    p = command("datasets", help="list the offline benchmark datasets, or export one to a data file (export)")
    dsub = p.add_subparsers(dest="datasets_command", parser_class=_Parser)
    p = dsub.add_parser("export", parents=[common], help="write a dataset's raw columns, groups and label to a "
                        "file rateopt fit reads (its as_frame=True table)")
    p.add_argument("name", help="the dataset (as listed by rateopt datasets)")
    p.add_argument("out", help="the file to write: .csv or .parquet")
    p.add_argument("--split", choices=("all", "train", "validation", "test"), default="all",
                   help="the rows to write: all, or one part of the dataset's default split (default: all)")
    p.add_argument("--seed", type=int, default=0, help="the split's random_state (default: 0)")
    p = command("reproduce", help="run a paper reproduction (bench/reproduce_NAME.py of a source checkout)")
    p.add_argument("name")
    p.add_argument("args", nargs=argparse.REMAINDER, help="passed to the script (e.g. --quick)")
    command("selfcheck", help="build configuration and a check of the core against NumPy")
    command("demo", help="the self-check, then the demo of equal opportunity on generated data")
    return root


def main(argv=None):
    """Run the command line; return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = os.environ.get("RATEOPT_DEBUG", "") not in ("", "0")
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # --help, --version: printed; their exit status
            return exc.code if isinstance(exc.code, int) else 0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            status = _commands.run(args)
        for w in caught:
            print(f"rateopt: warning: {' '.join(str(w.message).split())}", file=sys.stderr)
        return status
    except BrokenPipeError:  # the reader (e.g. `| head`) closed the pipe: stop quietly, as Unix tools do
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 141
    except _UsageError as exc:
        print(f"rateopt: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (RateoptError, ValueError, TypeError, OSError, KeyError) as exc:
        if debug:
            raise
        msg = " ".join(str(exc).split()) or type(exc).__name__
        print(f"rateopt: error: {msg}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("rateopt: interrupted", file=sys.stderr)
        return 130
