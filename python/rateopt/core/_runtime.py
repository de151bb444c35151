"""The compiled core, loaded with the OpenMP settings rateopt runs best with.

Every module of :mod:`rateopt.core` takes the extension from here, so this is the
one place the extension module is loaded. OpenMP workers spin between
parallel regions by default; the training games run thousands of short
regions, and on a machine shared with other work the spinning threads made a
fit up to 6x slower than one thread, while passive waiting costs nothing
measurable on an idle machine. The OpenMP runtime reads ``OMP_WAIT_POLICY``
once, when ``rateopt._core`` (which links it) is loaded, so it is set just
before; a user's own setting wins.
"""

import importlib
import os

__all__ = ["extension", "load_core"]


def load_core():
    """``rateopt._core``, imported after the OpenMP setting it must see (imported once; later calls reuse it)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    return importlib.import_module("._core", __package__.rpartition(".")[0])


#: The loaded extension module (the modules of rateopt.core import it as ``_core``).
extension = load_core()
