"""Loading a ``bench/`` script as a module in the smoke tests (bench/ is not a package)."""

import importlib.util
import sys


def load_bench_script(path, name):
    """Execute the script at ``path`` as module ``name``, with its folder on ``sys.path`` while it imports.

    The module is registered in ``sys.modules`` under ``name`` (dataclasses look their module up
    there); a caller that wants it gone afterwards pops it.
    """
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(path.parent))
    return mod
