"""Fail unless the installed rateopt's core was built with OpenMP (every wheel's first test command).

A core built without OpenMP still works, single-threaded, and passes every test: without this check a
wheel whose build did not find the OpenMP runtime would ship silently. Run from outside the source
tree, against the installed wheel: ``python .ci/check_openmp.py`` (pyproject.toml's
[tool.cibuildwheel] test-command, .ci/wheel). Prints ``rateopt.show_config()`` either way.
"""

import sys


def check(info):
    """The exit status for a configuration ``info`` (``rateopt.get_config()``): 0 with OpenMP, else a message."""
    if info.get("openmp"):
        return 0
    return (f"error: rateopt {info.get('version')} was built without OpenMP (compiler {info.get('compiler')}): "
            "the core would run single-threaded; the wheel's build did not find the OpenMP runtime")


def main():
    import rateopt

    rateopt.show_config()
    return check(rateopt.get_config())


if __name__ == "__main__":
    sys.exit(main())
