"""Shared pytest configuration.

The tests mirror the package: ``tests/<package>/test_<module>.py`` for the modules of
``python/rateopt/<package>/`` (``tests/core/``, ``tests/_language/``, ...), ``tests/test_<module>.py``
for its top-level modules, ``tests/bench/`` for the ``bench/`` scripts. The support modules
(``tests/_*.py``, ``tests/reference.py``) stay here and are imported by plain name (pyproject's
``pythonpath = ["tests"]``); test modules are imported by path (``--import-mode=importlib``), so two
test files may share a name in different folders.

Hypothesis profiles for the property tests (``tests/*/test_properties_*.py``):

* ``rateopt-ci`` (the default): derandomized, so every run draws the same
  examples and CI is deterministic; no deadline (the machine is shared, timings
  vary); no example database (nothing is written to the checkout).
* ``rateopt-explore``: random draws and ten times more examples, for hunting
  new counterexamples locally: ``RATEOPT_HYPOTHESIS_PROFILE=rateopt-explore pytest
  tests/core/test_properties_kernel.py``.

Each test sets its own ``max_examples`` (scaled by ``rateopt-explore``) so that
the whole property suite runs in well under a minute on two cores.
"""

import os

from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "rateopt-ci",
    derandomize=True,
    # no Phase.explain: its coverage-traced reruns of failing examples are slow
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
    deadline=None,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "rateopt-explore",
    derandomize=False,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("RATEOPT_HYPOTHESIS_PROFILE", "rateopt-ci"))

