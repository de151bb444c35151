"""One version: rateopt.__version__, ``rateopt --version`` and the installed package's metadata."""

import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys

import pytest

import rateopt

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_version_is_a_pep440_release_string():
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?", rateopt.__version__)


def test_command_line_reports_the_package_version():
    # The child imports the same rateopt as this process (its folder first on sys.path).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(pathlib.Path(rateopt.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "rateopt", "--version"], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout.strip() == f"rateopt {rateopt.__version__}"


def _distribution_of_imported_package():
    """The installed distribution whose files hold the imported rateopt, or None (a source checkout)."""
    try:
        dist = importlib.metadata.distribution("rateopt")
    except importlib.metadata.PackageNotFoundError:
        return None
    imported = pathlib.Path(rateopt.__file__).resolve()
    for f in dist.files or ():
        if f.name == "__init__.py" and pathlib.Path(dist.locate_file(f)).resolve() == imported:
            return dist
    return None


def test_metadata_version_is_the_package_version():
    # CI (.ci/run) installs the package, so this runs there; a source tree put on sys.path
    # (PYTHONPATH, a .pth) has no metadata of its own to compare.
    dist = _distribution_of_imported_package()
    if dist is None:
        pytest.skip("rateopt is imported from a source tree, not from an installed distribution")
    assert dist.version == rateopt.__version__
    assert importlib.metadata.version("rateopt") == rateopt.__version__


@pytest.mark.skipif(not (ROOT / "pyproject.toml").exists(), reason="not run from a source checkout")
def test_pyproject_reads_the_version_from_the_package():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in config["project"] and "version" in config["project"]["dynamic"]
    provider = config["tool"]["scikit-build"]["metadata"]["version"]
    assert provider["provider"] == "scikit_build_core.metadata.regex"
    source = (ROOT / provider["input"]).read_text()
    # scikit-build-core's default regex: the first __version__ = "..." assignment.
    m = re.search(r"""(?i)^(__version__|VERSION)(?: ?: ?str)? *= *(['"])v?(?P<value>.+?)\2""", source, re.M)
    assert m and m.group("value") == rateopt.__version__
