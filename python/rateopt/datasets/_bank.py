"""UCI Bank Marketing (bank-full), as shipped by fair-trees."""

from __future__ import annotations

from ._cache import cached_dataset
from ._encoding import check_scaling, document_scaling, encoded, require_pandas
from ._packages import locate

__all__ = ["load_bank"]


_BANK_NUM = ("balance", "day", "duration", "campaign", "pdays", "previous")
_BANK_CAT = ("job", "education", "default", "housing", "loan", "contact", "month", "poutcome")


def _build_bank(scaling):
    pd = require_pandas()
    path, source = locate("fair_trees", "bank_marketing.csv", "load_bank()")
    df = pd.read_csv(path)
    n = len(df)
    age = df["__Z__age"].to_numpy(dtype=object)
    marital = df["__Z__marital"].to_numpy(dtype=object)
    columns = [("num", c, df[c].to_numpy()) for c in _BANK_NUM]
    columns += [("cat", c, df[c].to_numpy(dtype=object)) for c in _BANK_CAT]
    columns += [("cat", "age", age, ["<=21", "22-64", ">=65"]), ("cat", "marital", marital)]
    return encoded(columns, n, scaling, {
        "name": "bank", "source": source, "label": "subscribed a term deposit",
        "y": (df["__y__subscription"].to_numpy(dtype=object) == "yes"),
        "groups": {"age": age, "marital": marital},
        "paper_split": (31647, 4521, 9042),
        "notes": ("UCI bank-full as shipped by fair-trees (45,203 of 45,211 rows). Age exists only in 3 "
                  "buckets (<=21 / 22-64 / >=65), not the paper's 5 quintiles; marital only as "
                  "married/non-married. Both stay in X (one-hot)."),
    })


@document_scaling("standard")
def load_bank(*, scaling="standard", as_frame=False):
    """UCI Bank Marketing (bank-full), 45,203 rows: the Cotter et al. (2019) Bank experiment.

    Parameters
    ----------
    {scaling}
    {as_frame}

    Returns
    -------
    BenchmarkDataset
        45,203 x 52 (6 numerics, 46 one-hot columns), 5,287 positives;
        ``groups``: ``age`` (<=21: 168, 22-64: 44,225, >=65: 810) and
        ``marital`` (married 27,206 / non-married 17,997). The default split
        follows the paper's proportions (31,647 / 4,521 / 9,042 of 45,210),
        i.e. 31,642 / 4,520 / 9,041.

    Raises
    ------
    DataPackageNotFoundError
        If ``fair-trees`` (which ships ``bank_marketing.csv``) is not installed.

    Notes
    -----
    The only offline copy (``fair-trees==3.1.9:fair_trees/bank_marketing.csv``)
    has age bucketed into 3 groups, so the paper's 5 age quintiles cannot be
    rebuilt. ``day`` is kept numeric.
    """
    return cached_dataset(_build_bank, check_scaling(scaling), as_frame=as_frame)
