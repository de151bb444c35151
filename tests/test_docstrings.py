"""Docstrings of the public API.

One test per public module: ``rateopt`` and its public subpackages and modules (``PUBLIC``, by their
``__all__``), and the internal modules whose docstrings earlier tests held to numpydoc (``INTERNAL``).
Every exported function and class has a docstring with a summary line. Beyond that, each rule that a
module's docstrings meet today is required of them:

* GL08: the public methods and properties that exported classes define have docstrings;
* PR01: callables that take parameters have a ``Parameters`` section;
* with numpydoc installed (pyproject's ``test`` extra): every rule of :func:`numpydoc.validate.validate`,
  on the exports and those members (GL08 and PR01 are its codes for the two checks above).

Examples, "See Also" and extended summaries (EX01, SA01, ES01) are never required. ``NOT_YET`` lists,
per module, the codes that some of its docstrings still break (drop a code once they are fixed); the
objects in ``STRICT``, which earlier tests validated by name, are held to every code all the same.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re

import pytest

try:
    from numpydoc.validate import validate
except ImportError:  # a test dependency (pyproject's test extra); without it, the checks below that need no parser
    validate = None

PUBLIC = ["rateopt", "rateopt.core", "rateopt.goals", "rateopt.metrics", "rateopt.games", "rateopt.oracles",
          "rateopt.exceptions", "rateopt.report", "rateopt.plot", "rateopt.cli", "rateopt.dask", "rateopt.datasets"]
INTERNAL = ["rateopt._language._data", "rateopt._language._rates", "rateopt._compiler._problem",
            "rateopt._compiler._toml", "rateopt._training._row_coefficients", "rateopt._group_rates",
            "rateopt._methods._sweep"]
#: The extras' modules (rateopt[dask], rateopt[datasets]): skipped if they cannot be imported (they import
#: dask, distributed and pandas lazily, so today they always can).
OPTIONAL = {"rateopt.dask", "rateopt.datasets"}

PARAMETERS = re.compile(r"^ *Parameters\n *----------$", re.M)
NEVER = {"EX01", "SA01", "ES01"}
NOT_YET = {
    "rateopt": {"GL02", "GL08", "PR01", "PR03", "PR04", "PR07", "RT01", "RT03", "SA03", "SS05", "SS06"},
    "rateopt.core": {"GL02", "PR01", "PR03", "PR04", "PR07", "RT03", "SA03", "SS06"},
    "rateopt.metrics": {"GL08", "PR01", "PR02", "RT03"},
    "rateopt.games": {"GL08", "PR01", "RT01"},
    "rateopt.oracles": {"GL02", "GL08", "PR01", "RT01", "SS06"},
    "rateopt.exceptions": {"GL02", "SS06"},
    "rateopt.cli": {"PR01", "RT01"},
    "rateopt.dask": {"GL08"},
}
STRICT = {
    "rateopt": {"FeasibilityReport", "FeasibilityReport.describe", "TrainResult.feasibility", "ramp_mm",
                "RampMMResult", "RampMMResult.classifier", "RampMMResult.save", "RampClassifier",
                "RampClassifier.predict", "RampClassifier.predict_proba", "RampClassifier.decision_function",
                "RampClassifier.save"},
    "rateopt.core": {"rate_kernel_offsets", "OffsetKernelResult", "sdca_two_sided_hinge", "SdcaResult",
                     "ramp_rates", "RampRates"},
    "rateopt.metrics": {"Threshold", "ThresholdedRate", "ThresholdedRate.name", "RocAuc", "RocAuc.maximize",
                        "roc_auc", "roc_auc_lj"},
    "rateopt.exceptions": {"InfeasibleWarning"},
    "rateopt.dask": {"Dataset", "Dataset.subset_stats", "Dataset.membership_tables", "Dataset.game_block",
                     "Dataset.total_weight", "Dataset.group_values", "RemoteBlock", "RemoteBlock.run_kernel",
                     "RemoteBlock.revalidated", "check_workers", "predict", "evaluate"},
}


def _exports(module):
    """``(name, object)`` for the functions and classes of ``module.__all__`` and the public methods and
    properties that those classes define (``Class.member``)."""
    for name in module.__all__:
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        yield name, obj
        if inspect.isclass(obj):
            for member, value in vars(obj).items():
                if isinstance(value, (classmethod, staticmethod)):
                    value = value.__func__
                if not member.startswith("_") and (inspect.isfunction(value) or isinstance(value, property)):
                    yield f"{name}.{member}", value


def _doc(obj):
    return inspect.getdoc(obj.fget if isinstance(obj, property) else obj) or ""


def _plain_problems(obj):
    """The rules checked without numpydoc: a docstring (GL08) and, where the object takes parameters,
    a ``Parameters`` section (PR01)."""
    doc = _doc(obj)
    if not doc.strip():
        return [("GL08", "no docstring")]
    if isinstance(obj, property) or (inspect.isclass(obj) and issubclass(obj, BaseException)):
        return []
    try:
        signature = inspect.signature(obj.__init__ if inspect.isclass(obj) else obj)
    except (TypeError, ValueError):  # no signature to read
        return []
    if [p for p in signature.parameters if p not in ("self", "cls")] and not PARAMETERS.search(doc):
        return [("PR01", "takes parameters but has no Parameters section")]
    return []


@pytest.mark.parametrize("modname", PUBLIC + INTERNAL)
def test_docstrings(modname):
    if modname in OPTIONAL:
        module = pytest.importorskip(modname, exc_type=ImportError)
    else:
        module = importlib.import_module(modname)
    objects = dict(_exports(module))
    undocumented = [name for name, obj in objects.items() if "." not in name and not _doc(obj).strip()]
    assert not undocumented, f"exports of {modname} without a docstring: {undocumented}"
    strict = STRICT.get(modname, set())
    for name in sorted(strict - objects.keys()):  # inherited members are not in vars(): looked up by name
        objects[name] = functools.reduce(getattr, name.split("."), module)
    problems = []
    for name, obj in objects.items():
        qual = f"{modname}.{name}"
        found = _plain_problems(obj) + (validate(qual)["errors"] if validate is not None else [])
        ignore = NEVER if name in strict else NEVER | NOT_YET.get(modname, set())
        problems += [f"{qual} {code} {message}" for code, message in found if code not in ignore]
    assert not problems, "\n".join(problems)
