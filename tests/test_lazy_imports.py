"""``import rateopt`` loads no slow dependency; the estimators load on first access (issue 34, item 5).

Each check runs in a fresh Python process (this one has imported everything
long ago), with the folder above the package this test imported first on
``PYTHONPATH``: the installed wheel in CI, the source tree with its built core
here.
"""

import json
import os
import subprocess
import sys

import pytest

import rateopt

#: What ``import rateopt`` must leave out of ``sys.modules`` (issue 34's list).
SLOW = ("sklearn", "pandas", "matplotlib", "scipy.stats", "scipy.optimize", "highspy")


def _run(code):
    """Run ``code`` in a fresh interpreter importing the same rateopt; return its last stdout line, parsed."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(rateopt.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _loaded_after(statement):
    """The modules of ``SLOW`` in ``sys.modules`` after ``statement``, and the file rateopt came from."""
    return _run(f"import json, sys\n{statement}\n"
                f"print(json.dumps([[m for m in {SLOW!r} if m in sys.modules], sys.modules['rateopt'].__file__]))")


def test_import_rateopt_loads_no_slow_dependency():
    loaded, where = _loaded_after("import rateopt")
    assert os.path.realpath(where) == os.path.realpath(rateopt.__file__)
    assert loaded == []


def test_the_probe_sees_a_slow_dependency():
    # The check above can fail: the same probe finds scikit-learn (and what it imports) when it is loaded.
    loaded, _ = _loaded_after("import rateopt, sklearn.base")
    assert "sklearn" in loaded


@pytest.mark.parametrize("name", sorted(rateopt._LAZY))
def test_a_lazy_name_loads_its_module_on_first_access(name):
    module = "rateopt" + rateopt._LAZY[name]
    before, after, qualname = _run(
        "import json, sys, rateopt\n"
        f"before = {module!r} in sys.modules\n"
        f"obj = getattr(rateopt, {name!r})\n"
        f"print(json.dumps([before, {module!r} in sys.modules, obj.__module__ + '.' + obj.__qualname__]))")
    assert (before, after) == (False, True)
    assert qualname == f"{module}.{name}"


def test_the_estimators_are_scikit_learn_estimators():
    from sklearn.base import BaseEstimator, ClassifierMixin

    from rateopt import RateConstrainedClassifier, ThresholdClassifier
    from rateopt._estimator import RateConstrainedClassifier as defined
    from rateopt._threshold_classifier import ThresholdClassifier as defined_threshold

    assert RateConstrainedClassifier is defined and ThresholdClassifier is defined_threshold
    for cls in (RateConstrainedClassifier, ThresholdClassifier):
        assert issubclass(cls, BaseEstimator) and issubclass(cls, ClassifierMixin)


def test_every_public_name_resolves_and_is_listed():
    names = set(dir(rateopt))
    assert set(rateopt.__all__) <= names
    assert set(rateopt._LAZY) <= set(rateopt.__all__)
    for name in rateopt.__all__:
        assert getattr(rateopt, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        rateopt.no_such_name  # noqa: B018


def test_a_star_import_gives_every_public_name():
    missing = _run("import json\nfrom rateopt import *\n"
                   "import rateopt\nprint(json.dumps([n for n in rateopt.__all__ if n not in globals()]))")
    assert missing == []


def test_cli_help_loads_no_slow_dependency():
    # ``rateopt --help`` builds the parser only: each command's module is imported when that command runs.
    loaded, _ = _loaded_after(
        "import sys\nfrom rateopt.cli import main\nsys.argv = ['rateopt', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass")
    assert loaded == []


def test_running_a_command_imports_its_module():
    from rateopt.cli import _commands

    assert _commands.command("fit").__module__ == "rateopt.cli._fit"
    assert _commands.command("selfcheck").__module__ == "rateopt.cli._info"
    assert set(_commands.COMMANDS) == {"fit", "evaluate", "predict", "report", "datasets", "reproduce",
                                       "selfcheck", "demo"}
