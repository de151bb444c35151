"""Goals: data-independent recipes for families of rate constraints.

A goal (e.g. ``equal_opportunity("sex", slack=0.05)``) is a small frozen
object holding only simple parameters (group column, slack, bound, dataset
role), so a scikit-learn estimator can take it as a parameter, print it and
clone it. :meth:`Goal.bind` turns it into :class:`~rateopt._language._rates.Constraint`
objects on actual datasets; :class:`~rateopt.Problem` binds goals passed
among its constraints.

Goals over a group column give constraints for every group value (sorted,
missing values left out; ``values=`` restricts them), or for every ordered
pair of values when ``pairwise=True``. Two-sided goals (``sides="both"``) give,
per group, the ``<=`` constraint then the ``>=`` one; goals with several rates
(equalized odds: TPR then FPR) give all groups for the first rate first.

Slack is additive by default (Cotter et al., 2019, Sec. 3.7): ``rate(g) >= rate(all) -
slack``. With ``multiplicative=True`` the slack is a relative shortfall, the
ratio ``r = 1 - slack``: ``rate(g) >= r * rate(all)`` and ``r * rate(g) <=
rate(all)``; e.g. the "80% rule" is ``demographic_parity(group, slack=0.2,
multiplicative=True)``.

The seed tables' rows map to goals as follows: statistical/demographic parity
:class:`DemographicParity`; minimum coverage :class:`MinimumCoverage`;
coverage budget :class:`CoverageBudget`; no lost benefits
:class:`NoLostBenefits`; accurate coverage :class:`AccurateCoverage`; equal
opportunity :class:`EqualOpportunity`; equalized odds
:class:`EqualizedOdds`; equal accuracy :class:`EqualAccuracy`; minimum
accuracy :class:`MinimumAccuracy`; not worse off :class:`NotWorseOff`; recall
floor :class:`RecallFloor`; precision floor (Cotter et al., 2018, Eq. 9)
:class:`PrecisionFloor`; win-loss ratio floor (Eq. 11)
:class:`WinLossRatioFloor`; churn cap (Eq. 12) :class:`ChurnCap`; loss-only
churn cap (Eq. 13) :class:`LossOnlyChurnCap`; steering/egregious examples
:class:`SteeringAccuracy`; decision-rule prior :class:`DecisionRulePrior`.

Modules: :mod:`._base` (:class:`Goal`, the checks and the fields recipes
share), :mod:`._parity` (parity and relative goals), :mod:`._bounds` (floors
and caps), :mod:`._metric` (goals on non-linear metrics and ROC-AUC) and
:mod:`._objectives` (:data:`OBJECTIVES` and :data:`MULTICLASS_OBJECTIVES`, the
objective names of two-class and K-class data, and :func:`objective`);
:mod:`._multiclass` holds the K-class goals (multiclass demographic parity,
equal opportunity and equalized odds, class-prior matching, per-class recall
and precision floors), which bind to a :class:`~rateopt.ClassDataset`.
"""

from __future__ import annotations

from rateopt.goals._base import Goal
from rateopt.goals._bounds import (
    ChurnCap,
    CoverageBudget,
    DecisionRulePrior,
    LossOnlyChurnCap,
    MinimumAccuracy,
    MinimumCoverage,
    PrecisionFloor,
    RecallFloor,
    SteeringAccuracy,
    WinChangeRatioFloor,
    WinLossRatioFloor,
    churn_cap,
    coverage_budget,
    decision_rule_prior,
    loss_only_churn_cap,
    minimum_accuracy,
    minimum_coverage,
    precision_floor,
    recall_floor,
    steering_accuracy,
    win_change_ratio_floor,
    win_loss_ratio_floor,
)
from rateopt.goals._metric import (
    FMeasureFloor,
    FMeasureParity,
    GMeanFloor,
    KLDivergenceCap,
    PredictiveParity,
    RocAucFloor,
    f_measure_floor,
    f_measure_parity,
    g_mean_floor,
    kl_divergence_cap,
    predictive_parity,
    roc_auc_floor,
)
from rateopt.goals._multiclass import (
    ClassPrecisionFloor,
    ClassPriorMatching,
    ClassRecallFloor,
    MulticlassDemographicParity,
    MulticlassEqualizedOdds,
    MulticlassEqualOpportunity,
    class_precision_floor,
    class_prior_matching,
    class_recall_floor,
    multiclass_demographic_parity,
    multiclass_equal_opportunity,
    multiclass_equalized_odds,
)
from rateopt.goals._objectives import MULTICLASS_OBJECTIVES, OBJECTIVES, objective
from rateopt.goals._parity import (
    AccurateCoverage,
    DemographicParity,
    EqualAccuracy,
    EqualizedOdds,
    EqualOpportunity,
    NoLostBenefits,
    NotWorseOff,
    accurate_coverage,
    demographic_parity,
    equal_accuracy,
    equal_opportunity,
    equalized_odds,
    no_lost_benefits,
    not_worse_off,
    statistical_parity,
)

# The order matters: a goals file names a recipe by its first lower-case spelling here
# (rateopt._compiler._toml), e.g. demographic_parity rather than statistical_parity.
__all__ = [
    "Goal",
    "DemographicParity",
    "MinimumCoverage",
    "CoverageBudget",
    "NoLostBenefits",
    "AccurateCoverage",
    "EqualOpportunity",
    "EqualizedOdds",
    "EqualAccuracy",
    "MinimumAccuracy",
    "NotWorseOff",
    "RecallFloor",
    "PrecisionFloor",
    "WinLossRatioFloor",
    "ChurnCap",
    "LossOnlyChurnCap",
    "SteeringAccuracy",
    "DecisionRulePrior",
    "demographic_parity",
    "statistical_parity",
    "minimum_coverage",
    "coverage_budget",
    "no_lost_benefits",
    "accurate_coverage",
    "equal_opportunity",
    "equalized_odds",
    "equal_accuracy",
    "minimum_accuracy",
    "not_worse_off",
    "recall_floor",
    "precision_floor",
    "win_loss_ratio_floor",
    "churn_cap",
    "loss_only_churn_cap",
    "steering_accuracy",
    "decision_rule_prior",
    "FMeasureParity",
    "PredictiveParity",
    "KLDivergenceCap",
    "GMeanFloor",
    "FMeasureFloor",
    "f_measure_parity",
    "predictive_parity",
    "kl_divergence_cap",
    "g_mean_floor",
    "f_measure_floor",
    "OBJECTIVES",
    "objective",
    "RocAucFloor",
    "roc_auc_floor",
    "WinChangeRatioFloor",
    "win_change_ratio_floor",
    # K-class goals (bind to a ClassDataset)
    "MulticlassDemographicParity",
    "MulticlassEqualOpportunity",
    "MulticlassEqualizedOdds",
    "ClassPriorMatching",
    "ClassRecallFloor",
    "ClassPrecisionFloor",
    "multiclass_demographic_parity",
    "multiclass_equal_opportunity",
    "multiclass_equalized_odds",
    "class_prior_matching",
    "class_recall_floor",
    "class_precision_floor",
    "MULTICLASS_OBJECTIVES",
]
