"""Sphinx configuration of rateopt's documentation site (built by ``.ci/docs``)."""

from __future__ import annotations

import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The rateopt being documented is the importable one (CI: the package .ci/run installed; a checkout
# with an in-place build: PYTHONPATH=python); the source tree is the fallback when none is importable.
try:
    import rateopt
except ImportError:
    sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("MPLBACKEND", "Agg")

import rateopt

project = "rateopt"
author = "the rateopt authors"
copyright = "the rateopt authors"
release = rateopt.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",  # MyST Markdown (myst-parser) plus executed code cells on the guide pages
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "build", "**/.ipynb_checkpoints", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.md5", "sg_execution_times.rst"]

# --------------------------------------------------------------------------- API reference
# (no "inherited-members" default: a default, even False, overrides the pages' own :inherited-members:)
autodoc_default_options = {"members": True, "show-inheritance": False}
# The docstrings carry the types (numpydoc's Parameters and Returns); signatures stay plain, so no
# annotation needs a target that only another project's inventory (no network here) could provide.
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# Every public name gets a page: docs/api/<module>.rst are written here from each module's __all__ (so
# a new export is documented, or its docstring breaks the build, without editing a list by hand).
API_MODULES = ["rateopt", "rateopt.goals", "rateopt.metrics", "rateopt.oracles", "rateopt.games",
               "rateopt.core", "rateopt.dask", "rateopt.datasets", "rateopt.plot", "rateopt.report",
               "rateopt.exceptions", "rateopt.cli"]
# The top-level names by topic; a name of rateopt.__all__ not listed here goes under "Other".
TOPICS = {
    "Data, rates and problems": [
        "make_groups_dataset", "Dataset", "Context", "Expression", "Constraint", "Problem",
        "CompiledProblem", "Evaluation", "equal", "sum", "group_rates"],
    "Named rates": [n for n in rateopt.__all__ if n.endswith(("_rate", "_count", "_proportion"))]
    + ["accuracy", "prevalence", "baseline_accuracy"],
    "Models and training": [
        "LinearModel", "KernelModel", "kernel_block", "train", "TrainResult", "FeasibilityReport",
        "ShrinkResult", "best_iterate", "sweep", "SweepResult", "load"],
    "Classifiers": [
        "RateConstrainedClassifier", "LinearClassifier", "StochasticClassifier", "EstimatorMixture"],
    "Post-processing": ["ThresholdClassifier", "ThresholdRule", "Certificate", "GoalBound"],
    "Assessment": ["assess", "Assessment"],
    "Group objectives (GroupOpt) and ramp losses": [
        "group_opt", "fold_constraints", "FoldedObjective", "group_opt_constants", "GroupOptResult",
        "minimax_group_loss", "ramp_mm", "RampMMResult", "RampClassifier"],
    "Core and configuration": ["FeatureMatrix", "AtomTable", "rate_kernel", "show_config", "get_config"],
}


def _summary(obj):
    """The first paragraph of an object's docstring, on one line (the API tables' second column)."""
    import inspect

    if not (inspect.isclass(obj) or callable(obj)):  # a constant: its type, not its type's docstring
        return f"A ``{type(obj).__name__}`` constant."
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


#: Undocumented (private) base classes whose methods the API pages show on their public subclasses: the
#: predict_proba/predict that every vote mixture inherits (rateopt._predictors._draws.VoteMixture).
SHOWN_BASES = ("VoteMixture",)


def _shown_inherited(cls):
    """The ``:inherited-members:`` option that shows the members ``cls`` inherits from :data:`SHOWN_BASES`
    (and from no other base), or ``""``."""
    bases = cls.__mro__[1:]
    if not any(b.__name__ in SHOWN_BASES for b in bases):
        return ""
    return f"   :inherited-members: {', '.join(b.__name__ for b in bases if b.__name__ not in SHOWN_BASES)}\n"


def _write(path, text):
    """Write a generated page only when it changed (an unchanged page is not read again)."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _api_pages(app, config):
    """Write docs/api/<module>.rst and one page per public name under docs/api/generated/."""
    import importlib
    import inspect
    import types

    out = pathlib.Path(app.confdir) / "api"
    (out / "generated").mkdir(exist_ok=True)
    modules = {name: importlib.import_module(name) for name in API_MODULES}
    exported = {name: [n for n in module.__all__
                       if not isinstance(getattr(module, n), types.ModuleType) and n != "__version__"]
                for name, module in modules.items()}
    # An object that rateopt re-exports from a public subpackage is documented there once.
    home = {}
    for name in API_MODULES[1:]:
        for n in exported[name]:
            home.setdefault(id(getattr(modules[name], n)), f"{name}.{n}")
    for name, module in modules.items():
        names = exported[name]
        if name == "rateopt":
            sections = {title: [n for n in listed if n in names] for title, listed in TOPICS.items()}
            seen = {n for listed in sections.values() for n in listed}
            sections["Other"] = [n for n in names if n not in seen]
        else:
            sections = {"": names}
        lines = [f".. _api-{name}:", "", f"``{name}``", "=" * (len(name) + 4), "",
                 f".. automodule:: {name}", "   :no-members:", "", f".. currentmodule:: {name}", ""]
        pages = []
        for title, listed in sections.items():
            if not listed:
                continue
            if title:
                lines += [title, "-" * len(title), ""]
            lines += [".. list-table::", "   :widths: 30 70", ""]
            for n in listed:
                obj = getattr(module, n)
                target = f"{name}.{n}"
                if name == "rateopt" and id(obj) in home:
                    target = home[id(obj)]
                else:
                    pages.append(f"generated/{target}")
                    if inspect.isclass(obj):
                        body = f".. autoclass:: {target}\n   :members:\n" + _shown_inherited(obj)
                    elif callable(obj):
                        body = f".. autofunction:: {target}\n"
                    else:
                        body = f".. autodata:: {target}\n   :no-value:\n"
                    # "Examples using this": the gallery examples that call it (sphinx-gallery's
                    # backreferences; nothing is shown when none does).
                    body += (f"\n.. minigallery:: {target}\n   :add-heading: Examples using ``{n}``\n"
                             "   :heading-level: -\n")
                    _write(out / "generated" / f"{target}.rst",
                           f"{target}\n{'=' * len(target)}\n\n.. currentmodule:: {name}\n\n{body}")
                lines += [f"   * - :obj:`~{target}`", f"     - {_summary(obj)}"]
            lines.append("")
        lines += [".. toctree::", "   :hidden:", "", *(f"   {p}" for p in pages), ""]
        _write(out / f"{name}.rst", "\n".join(lines))


def _skip_inherited_from_sklearn(app, what, name, obj, skip, options):
    """Leave out the methods scikit-learn adds to every estimator (``set_fit_request``, ...)."""
    if getattr(obj, "__module__", None) and str(obj.__module__).startswith("sklearn"):
        return True
    return None


def setup(app):
    app.connect("config-inited", _api_pages)
    app.connect("autodoc-skip-member", _skip_inherited_from_sklearn)


# --------------------------------------------------------------------------- Markdown
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
# Pages with ``file_format: mystnb`` front matter (the quickstart and the guide pages whose code runs in
# a few seconds; metrics.md and oracles.md stay static) run their ``{code-cell}`` blocks when the site is built
# (fresh every build, no cache), so the rendered page shows what the code prints and plots; a cell that
# raises fails the build. Other Markdown pages are plain MyST.
nb_execution_mode = "force"
nb_execution_in_temp = True  # files a page's code writes go to a temporary folder, not into docs/
nb_execution_timeout = 180
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# --------------------------------------------------------------------------- gallery
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "abort_on_example_error": False,  # every failing example is reported; -W turns them into a failed build
    "only_warn_on_example_error": False,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    # Backreferences: which examples use each public name, listed on its API page (the minigallery
    # that _api_pages appends to every page).
    "doc_module": ("rateopt",),
    "backreferences_dir": "api/generated/backreferences",
    "reference_url": {"rateopt": None},
}

# --------------------------------------------------------------------------- nitpicky
nitpicky = True
# Third-party names that numpydoc or autodoc render as references and that no local inventory resolves
# (the build is offline: no intersphinx).
nitpick_ignore_regex = [
    # Other projects' names (scikit-learn, NumPy, ...): the build is offline, so no intersphinx
    # inventory resolves them; they render as code.
    (r"py:.*", r"(sklearn|numpy|scipy|pandas|dask|distributed|matplotlib)(\..*)?"),
    # Private modules and names (a component starting with "_") that public docstrings mention
    # for readers of the source: not part of the API, so not documented.
    (r"py:.*", r"(.*\.)?_[A-Za-z0-9].*"),
]
# Internal helpers (no leading underscore, not exported) that docstrings name by role.
nitpick_ignore = [
    ("py:func", name) for name in ("shrink", "sealed", "resolve_l2", "cell_codes", "bias_cutting_plane",
                                   "stationary_distribution_trusted", "swap_update_trusted")
] + [
    ("py:data", "LOOP_METHODS"), ("py:data", "RATE_COLUMNS"), ("py:data", "METRIC_KINDS"),
    ("py:class", "Constant"), ("py:attr", "args"), ("py:meth", "bind"), ("py:meth", "Expression.leaves"),
]

# --------------------------------------------------------------------------- HTML
html_theme = "pydata_sphinx_theme"
html_title = f"rateopt {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # The on-page table of contents, except on the guide's pages, whose tables and executed code need
    # the room (at 1200 px, both sidebars leave code about 65 characters; the guide's code is wider).
    "secondary_sidebar_items": {"*": ["page-toc"], "api/**": ["page-toc"], "auto_examples/*": ["page-toc"],
                                "guide/*": []},
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_static_path = ["_static"]
html_css_files = ["rateopt.css"]
html_show_sourcelink = False
# Pages without sub-pages have no section navigation: no empty left sidebar.
html_sidebars = {page: [] for page in ("index", "install", "quickstart", "papers", "glossary", "changelog",
                                       "development")}
