"""The validated Python face of the compiled core.

This package is the boundary between user data and the C++ kernels in
:mod:`rateopt._core`. Data objects (:class:`FeatureMatrix`, :class:`AtomTable`)
are validated **once**, when they are built; the per-iteration functions then
check only cheap invariants (lengths, finiteness of the small vectors) before
releasing the GIL and calling the core, whose rates are those of Cotter et al. [1]_.

Its modules, one concern each:

* ``_matrix``: :class:`FeatureMatrix`, :class:`AtomTable` (the validated data);
* ``_kernel``: the fused rate kernels (:func:`rate_kernel`,
  :func:`rate_kernel_multi`, :func:`rate_kernel_offsets`, :func:`ramp_rates`,
  the :data:`PROXIES` codes);
* ``_boosting``: the boosting pass :func:`boosting_pass` (atom rates and each
  row's proxy gradient and Hessian at given scores, the :data:`BOOSTING_PROXIES`)
  and its K-class twin :func:`boosting_multiclass_pass` (confusion counts and
  the softmax proxy's per-row, per-class derivatives);
* ``_multiclass``: the fused K-column multiclass pass (:class:`ClassCells`,
  :func:`multiclass_pass`, :func:`multiclass_scores`, the
  :data:`MULTICLASS_PROXIES` codes);
* ``_multipliers``: the multiplier players' updates, the stationary
  distribution and the simplex and L1 projections;
* ``_sdca``: the exact two-sided hinge solver :func:`sdca_two_sided_hinge`;
* ``_loop``: :func:`run_train_loop`, whole runs of the built-in games;
* ``_kernel_block``, ``_threads``, ``_config``: kernel matrices, thread
  counts, the build report.

:func:`stationary_distribution_trusted`, :func:`swap_update_trusted` and
``boosting_pass_trusted`` are importable from here too, but kept out of ``__all__``: they skip every check,
for callers whose state is valid by construction.

See ``docs/core_api.md`` for the mathematical contract.

References
----------
.. [1] A. Cotter, H. Jiang, S. Wang, T. Narayan, M. Gupta, S. You, K. Sridharan.
   "Optimization with Non-Differentiable Constraints with Applications to
   Fairness, Recall, Churn, and Other Goals". JMLR 20(172), 2019.
"""

from __future__ import annotations

from ._boosting import BOOSTING_PROXIES, boosting_multiclass_pass, boosting_pass
from ._boosting import boosting_pass_trusted as boosting_pass_trusted
from ._kernel import (
    PROXIES,
    KernelResult,
    MultiKernelResult,
    OffsetKernelResult,
    RampRates,
    ramp_rates,
    rate_kernel,
    rate_kernel_multi,
    rate_kernel_offsets,
)
from ._loop import (
    LOOP_GAMES,
    OBJECTIVE_PROXIES,
    OPTIMIZERS,
    UPDATES,
    LoopOutcome,
    LoopRecords,
    LoopState,
    run_train_loop,
)
from ._matrix import AtomTable, FeatureMatrix
from ._multiclass import (
    MULTICLASS_PROXIES,
    ClassCells,
    MulticlassPassResult,
    multiclass_pass,
    multiclass_scores,
)
from ._multipliers import (
    external_update_additive,
    external_update_multiplicative,
    project_l1_ball_nonneg,
    project_simplex,
    stationary_distribution,
    swap_regret_update,
    swap_regret_update_additive,
)
from ._multipliers import stationary_distribution_trusted as stationary_distribution_trusted
from ._multipliers import swap_update_trusted as swap_update_trusted
from ._sdca import SdcaResult, sdca_two_sided_hinge

__all__ = [
    "BOOSTING_PROXIES",
    "boosting_pass",
    "boosting_multiclass_pass",
    "FeatureMatrix",
    "AtomTable",
    "KernelResult",
    "rate_kernel",
    "rate_kernel_multi",
    "MultiKernelResult",
    "PROXIES",
    "swap_regret_update",
    "swap_regret_update_additive",
    "stationary_distribution",
    "external_update_multiplicative",
    "external_update_additive",
    "project_simplex",
    "project_l1_ball_nonneg",
    "LOOP_GAMES",
    "OPTIMIZERS",
    "UPDATES",
    "OBJECTIVE_PROXIES",
    "LoopState",
    "LoopRecords",
    "LoopOutcome",
    "run_train_loop",
    "OffsetKernelResult",
    "rate_kernel_offsets",
    "SdcaResult",
    "sdca_two_sided_hinge",
    "RampRates",
    "ramp_rates",
    "ClassCells",
    "MULTICLASS_PROXIES",
    "MulticlassPassResult",
    "multiclass_pass",
    "multiclass_scores",
]
