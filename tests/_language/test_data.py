"""Datasets and contexts (rateopt._language._data)."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from _rate_reference import make_data, member_list
from rateopt._language._data import Context, Dataset
from rateopt.exceptions import MissingBaselineError, MissingLabelsError, RateoptError

X4 = np.zeros((4, 2))


# --------------------------------------------------------------------------- X


def test_features_are_kept_as_given():
    X = np.arange(12.0).reshape(6, 2)
    assert Dataset(X).X is X
    Xs = sp.random(6, 5, density=0.3, format="csr", random_state=0)
    ds = Dataset(Xs)
    assert ds.X is Xs and ds.n_samples == 6
    Xf = np.asfortranarray(X.astype(np.float32))
    assert Dataset(Xf).X is Xf
    assert Dataset([[1.0, 2.0], [3.0, 4.0]]).n_samples == 2
    with pytest.raises(RateoptError, match="X must be 2-D"):
        Dataset(np.zeros(3))


# --------------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    "y,kwargs,expected,classes",
    [
        ([0, 1, 1, 0], {}, [0, 1, 1, 0], (0, 1)),
        ([-1, 1, 1, -1], {}, [0, 1, 1, 0], (-1, 1)),
        ([0.0, 1.0, 1.0, 0.0], {}, [0, 1, 1, 0], (0.0, 1.0)),
        ([False, True, True, False], {}, [0, 1, 1, 0], (False, True)),
        (["no", "yes", "yes", "no"], {}, [0, 1, 1, 0], ("no", "yes")),
        (["yes", "no", "no", "yes"], {"positive_label": "no"}, [0, 1, 1, 0], ("yes", "no")),
        ([2, 7, 7, 2], {}, [0, 1, 1, 0], (2, 7)),
        ([2, 7, 7, 2], {"positive_label": 2}, [1, 0, 0, 1], (7, 2)),
        ([1, 1, 1, 1], {}, [1, 1, 1, 1], (None, 1)),
        ([0, 0, 0, 0], {}, [0, 0, 0, 0], (0, 1)),
        (["a", "a", "a", "a"], {"positive_label": "b"}, [0, 0, 0, 0], ("a", "b")),
    ],
)
def test_labels_are_mapped_to_01(y, kwargs, expected, classes):
    ds = Dataset(X4, y, **kwargs)
    assert ds.y.dtype == np.int8
    assert ds.y.tolist() == expected
    assert ds.classes == classes
    assert ds.has_labels


def test_label_errors():
    with pytest.raises(RateoptError, match="two-valued"):
        Dataset(X4, [0, 1, 2, 1])
    with pytest.raises(RateoptError, match="missing values"):
        Dataset(X4, [0, 1, np.nan, 1])
    with pytest.raises(RateoptError, match="missing values"):
        Dataset(X4, np.array(["a", None, "b", "a"], dtype=object))
    with pytest.raises(RateoptError, match="positive_label='z' is not one of"):
        Dataset(X4, ["a", "b", "a", "b"], positive_label="z")
    with pytest.raises(RateoptError, match="pass positive_label"):
        Dataset(X4, ["a", "a", "a", "a"])
    with pytest.raises(RateoptError, match="y has 3 entries but X has 4 rows"):
        Dataset(X4, [0, 1, 1])
    with pytest.raises(RateoptError, match="y must be 1-D"):
        Dataset(X4, np.zeros((4, 1)))
    with pytest.raises(RateoptError, match="positive_label was given but y is None"):
        Dataset(X4, positive_label=1)
    ds = Dataset(X4)
    assert ds.y is None and ds.classes is None and not ds.has_labels


# --------------------------------------------------------------------------- weights


def test_weights():
    ds = Dataset(X4)
    assert ds.weights.tolist() == [1.0] * 4 and ds.total_weight == 4.0
    w = np.array([1.0, 2.0, 0.0, 0.5])
    ds = Dataset(X4, weights=w)
    w[0] = 100.0  # the dataset keeps its own copy
    assert ds.weights.tolist() == [1.0, 2.0, 0.0, 0.5]
    assert not ds.weights.flags.writeable
    with pytest.raises(RateoptError, match="non-negative"):
        Dataset(X4, weights=[1, -1, 1, 1])
    with pytest.raises(RateoptError, match="finite"):
        Dataset(X4, weights=[1, np.inf, 1, 1])
    with pytest.raises(RateoptError, match="weights has 2 entries"):
        Dataset(X4, weights=[1, 1])


# --------------------------------------------------------------------------- groups


class FakeFrame:
    """Duck-typed DataFrame: ``.columns`` and column access, nothing else."""

    def __init__(self, data):
        self._data = data
        self.columns = list(data)

    def __getitem__(self, key):
        return self._data[key]


def test_groups_from_every_form():
    sex = ["F", "M", "F", "M"]
    race = [1, 2, 2, 1]
    forms = [
        ({"sex": sex, "race": race}, {}),
        (FakeFrame({"sex": sex, "race": race}), {}),
        (np.array([sex, race], dtype=object).T, {"group_names": ["sex", "race"]}),
        (np.array(list(zip(sex, race)), dtype=[("sex", "U1"), ("race", int)]), {}),
    ]
    for groups, kw in forms:
        ds = Dataset(X4, groups=groups, **kw)
        assert ds.group_names == ("sex", "race")
        assert ds.groups["sex"].tolist() == sex
        assert [int(v) for v in ds.groups["race"]] == race
        with pytest.raises(TypeError):
            ds.groups["new"] = sex
        assert not ds.groups["sex"].flags.writeable
    assert Dataset(X4, groups=np.array([[1, 2], [3, 4], [5, 6], [7, 8]])).group_names == (
        "group0",
        "group1",
    )
    assert Dataset(X4, groups=np.array(sex)).group_names == ("group",)
    assert Dataset(X4, groups=np.array(sex), group_names=["sex"]).group_names == ("sex",)


def test_groups_from_pandas():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"sex": ["F", "M", "F", "M"], "race": pd.Categorical(["a", "b", "b", "a"])})
    ds = Dataset(X4, groups=df)
    assert ds.group_names == ("sex", "race")
    assert ds.context().subset(group="race", value="b").mask().tolist() == [False, True, True, False]
    ds = Dataset(X4, groups=df["sex"])
    assert ds.group_names == ("sex",)
    ds = Dataset(pd.DataFrame(X4), y=pd.Series([0, 1, 1, 0]), groups=df[["sex"]])
    assert ds.n_samples == 4 and ds.y.tolist() == [0, 1, 1, 0]


def test_group_errors_and_values():
    with pytest.raises(RateoptError, match="group column 'sex' has 3 entries"):
        Dataset(X4, groups={"sex": ["F", "M", "F"]})
    with pytest.raises(RateoptError, match="2 columns but 1 group_names"):
        Dataset(X4, groups=np.zeros((4, 2)), group_names=["a"])
    with pytest.raises(RateoptError, match="group_names applies to array groups"):
        Dataset(X4, groups={"a": [1, 2, 3, 4]}, group_names=["a"])
    ds = Dataset(X4, groups={"g": np.array(["b", None, "a", "b"], dtype=object),
                             "h": [1.0, np.nan, 2.0, 1.0]})
    assert ds.group_values("g").tolist() == ["a", "b"]
    assert ds.group_values("h").tolist() == [1.0, 2.0]
    with pytest.raises(RateoptError, match="has no group column 'zz'"):
        ds.group_values("zz")


# --------------------------------------------------------------------------- baseline


@pytest.mark.parametrize(
    "baseline,kind,expected",
    [
        ([True, False, True, False], "auto", [1, 0, 1, 0]),
        ([1, 0, 1, 0], "auto", [1, 0, 1, 0]),
        ([1.0, 0.0, 0.0, 1.0], "auto", [1, 0, 0, 1]),
        ([0.5, -0.2, 0.0, -3.0], "auto", [1, 0, 1, 0]),  # scores: positive iff >= 0
        ([1, -1, -1, 1], "auto", [1, 0, 0, 1]),  # {-1, +1} read as scores
        ([1, 0, 1, 0], "scores", [1, 1, 1, 1]),
        ([1, 0, 0, 1], "decisions", [1, 0, 0, 1]),
    ],
)
def test_baseline(baseline, kind, expected):
    ds = Dataset(X4, baseline=baseline, baseline_kind=kind)
    assert ds.baseline.dtype == bool and ds.baseline.astype(int).tolist() == expected
    assert ds.has_baseline


@pytest.mark.parametrize(
    "y,baseline,kind,expected",
    [
        (["no", "yes", "yes", "no"], ["yes", "yes", "no", "no"], "auto", [1, 1, 0, 0]),
        ([1, 2, 2, 1], [2, 1, 1, 1], "labels", [1, 0, 0, 0]),
        ([1, 2, 2, 1], [2, 2, 2, 2], "auto", [1, 1, 1, 1]),  # both readings agree
        ([1, 2, 2, 1], [1, 1, 1, 1], "decisions", [1, 1, 1, 1]),
        ([-1, 1, 1, -1], [-1, 1, 1, 1], "auto", [0, 1, 1, 1]),
        ([0, 1, 1, 0], [0, 1, 1, 1], "auto", [0, 1, 1, 1]),
    ],
)
def test_baseline_in_label_values(y, baseline, kind, expected):
    ds = Dataset(X4, y=y, baseline=baseline, baseline_kind=kind)
    assert ds.baseline.dtype == bool and ds.baseline.astype(int).tolist() == expected
    assert ds.has_baseline


def test_baseline_errors():
    with pytest.raises(RateoptError, match="values other than 0/1"):
        Dataset(X4, baseline=[0.5, 0, 1, 0], baseline_kind="decisions")
    with pytest.raises(RateoptError, match="finite"):
        Dataset(X4, baseline=[np.nan, 0, 1, 0])
    with pytest.raises(RateoptError, match="decisions, real scores or the label values"):
        Dataset(X4, baseline=["a", "b", "a", "b"])
    with pytest.raises(RateoptError, match="decisions, real scores or the label values"):
        Dataset(X4, y=["no", "yes", "no", "yes"], baseline=["a", "b", "a", "b"])
    with pytest.raises(RateoptError, match="baseline is ambiguous"):
        Dataset(X4, y=[1, 2, 2, 1], baseline=[2, 1, 1, 1])
    with pytest.raises(RateoptError, match="not all among the label values"):
        Dataset(X4, y=[1, 2, 2, 1], baseline=[0, 1, 1, 1], baseline_kind="labels")
    with pytest.raises(RateoptError, match="y is None"):
        Dataset(X4, baseline=[0, 1, 1, 1], baseline_kind="labels")
    with pytest.raises(RateoptError, match="baseline_kind must be"):
        Dataset(X4, baseline=[1, 0, 1, 0], baseline_kind="bogus")
    with pytest.raises(RateoptError, match="baseline has 3 entries"):
        Dataset(X4, baseline=[1, 0, 1])
    with pytest.raises(RateoptError, match="is boolean"):
        Dataset(X4, baseline=[True, False, True, False], baseline_kind="scores")


# --------------------------------------------------------------------------- contexts


def test_context_masks_match_brute_force():
    ds, rec = make_data(1)
    ctx = ds.context()
    old = ds.groups["age"] > 50
    women = ctx.subset(group="sex", value="F")
    cases = [
        (ctx, lambda r, j: True, "all"),
        (women, lambda r, j: r["sex"][j] == "F", "sex=F"),
        (ctx.subset(old), lambda r, j: r["age"][j] > 50, "mask"),
        (ctx.subset(old, name="old"), lambda r, j: r["age"][j] > 50, "old"),
        (ctx.subset(group="race", value=("a", "b")), lambda r, j: r["race"][j] in "ab",
         "race in {a, b}"),
        (ctx.positive(), lambda r, j: r["y"][j] == 1, "y=1"),
        (ctx.negative(), lambda r, j: r["y"][j] == 0, "y=0"),
        (ctx.baseline_positive(), lambda r, j: r["b"][j] == 1, "baseline=1"),
        (ctx.baseline_negative(), lambda r, j: r["b"][j] == 0, "baseline=0"),
        (women.positive(), lambda r, j: r["sex"][j] == "F" and r["y"][j] == 1, "sex=F & y=1"),
        (women.subset(old), lambda r, j: r["sex"][j] == "F" and r["age"][j] > 50, "sex=F & mask"),
        (women | ctx.baseline_positive(), lambda r, j: r["sex"][j] == "F" or r["b"][j] == 1,
         "sex=F | baseline=1"),
        ((women | ctx.negative()) & ctx.subset(group="race", value="c"),
         lambda r, j: (r["sex"][j] == "F" or r["y"][j] == 0) and r["race"][j] == "c",
         "(sex=F | y=0) & race=c"),
        (~women, lambda r, j: r["sex"][j] != "F", "not(sex=F)"),
        (~~women, lambda r, j: r["sex"][j] == "F", "sex=F"),
        (women & ctx, lambda r, j: r["sex"][j] == "F", "sex=F"),
        (women | ctx, lambda r, j: True, "all"),
        (women.named("women").positive(), lambda r, j: r["sex"][j] == "F" and r["y"][j] == 1,
         "women & y=1"),
        (women.named("women") & ctx.subset(old, name="old"),
         lambda r, j: r["sex"][j] == "F" and r["age"][j] > 50, "women & old"),
    ]
    for c, cond, name in cases:
        m = c.mask()
        assert m.dtype == bool and m.tolist() == member_list(rec, cond), name
        assert c.name == name
        assert c.dataset is ds


def test_context_equality_and_repr():
    ds, _ = make_data(2)
    ctx = ds.context()
    a = ctx.subset(group="sex", value="F").positive()
    b = ctx.positive().subset(group="sex", value="F")
    assert a == b and hash(a) == hash(b)
    assert a != ctx
    assert repr(ctx) == "Context(dataset='train', subset='all')"
    assert ctx.label == "all"
    other, _ = make_data(2, name="unlabeled", labels=False)
    assert other.context().subset(group="sex", value="M").label == "unlabeled:sex=M"
    assert ctx.is_all and not a.is_all
    assert isinstance(a, Context)


def test_context_errors():
    ds, _ = make_data(3)
    ctx = ds.context()
    with pytest.raises(TypeError, match="mask must be boolean"):
        ctx.subset(np.ones(ds.n_samples, dtype=int))
    with pytest.raises(RateoptError, match="mask has 3 entries"):
        ctx.subset(np.ones(3, dtype=bool))
    with pytest.raises(RateoptError, match="exactly one of mask or group"):
        ctx.subset()
    with pytest.raises(RateoptError, match="exactly one of mask or group"):
        ctx.subset(np.ones(ds.n_samples, dtype=bool), group="sex", value="F")
    with pytest.raises(RateoptError, match="needs value="):
        ctx.subset(group="sex")
    with pytest.raises(RateoptError, match="has no group column 'zip'"):
        ctx.subset(group="zip", value=1)
    unl, _ = make_data(3, labels=False, baseline=False, name="unlabeled")
    with pytest.raises(MissingLabelsError, match=r"positive\(\) of subset 'unlabeled:all' needs labels"):
        unl.context().positive()
    with pytest.raises(MissingLabelsError, match="needs labels"):
        unl.context().negative()
    with pytest.raises(MissingBaselineError, match="needs baseline decisions"):
        unl.context().baseline_positive()
    with pytest.raises(MissingBaselineError, match="needs baseline decisions"):
        unl.context().baseline_negative()
    with pytest.raises(RateoptError, match="different datasets"):
        ctx & unl.context()  # noqa: B018
    with pytest.raises(RateoptError, match="different datasets"):
        ctx | unl.context()  # noqa: B018
    with pytest.raises(TypeError):
        ctx & np.ones(ds.n_samples, dtype=bool)  # noqa: B018
    with pytest.raises(RateoptError, match="non-empty string"):
        ctx.named("")
    with pytest.raises(TypeError, match="must be a rateopt Dataset"):
        Context(np.zeros(3))


def test_mask_is_copied():
    ds, rec = make_data(4)
    m = np.zeros(ds.n_samples, dtype=bool)
    m[:5] = True
    c = ds.context().subset(m)
    m[:] = True
    assert c.mask().sum() == 5


def test_dataset_repr_and_pickle():
    ds, _ = make_data(5)
    assert repr(ds) == "Dataset(name='train', n_samples=90, labeled, groups=['sex', 'race', 'age'], baseline)"
    back = pickle.loads(pickle.dumps(ds))
    assert back.groups["sex"].tolist() == ds.groups["sex"].tolist()
    assert back.y.tolist() == ds.y.tolist() and back.name == "train"
    with pytest.raises(RateoptError, match="name must be a non-empty string"):
        Dataset(X4, name="")


# --------------------------------------------------------------------------- pandas missing values


@pytest.mark.parametrize("dtype,values", [
    ("Int64", [1, None, 2, 1, 2, None]),
    ("boolean", [True, None, False, True, False, None]),
    ("string", ["a", None, "b", "a", "b", None]),
    ("object", ["a", None, "b", "a", "b", None]),
    ("category", ["a", None, "b", "a", "b", None]),
])
def test_pandas_na_in_a_group_column_belongs_to_no_group(dtype, values):
    # Regression: pd.NA raised "boolean value of NA is ambiguous".
    pd = pytest.importorskip("pandas")
    col = pd.Series(values, dtype=dtype)
    if dtype == "object":
        col[1] = pd.NA  # an explicit pd.NA among plain objects
    assert col.isna().tolist() == [False, True, False, False, False, True]
    X = np.zeros((6, 1))
    y = np.array([1, 1, 0, 1, 0, 1])
    for groups in (pd.DataFrame({"g": col}), {"g": col}, col.rename("g")):
        ds = Dataset(X, y, groups=groups)
        present = [v for v in values if v is not None]
        expected = sorted(set(present), key=present.index) if dtype == "boolean" else sorted(set(present))
        assert sorted(ds.group_values("g").tolist(), key=str) == sorted(expected, key=str)
        masks = {}
        for v in expected:
            masks[v] = ds.context().subset(group="g", value=v).mask()
            # NumPy reference from the plain Python values: missing rows are in no group.
            np.testing.assert_array_equal(masks[v], [x is not None and x == v for x in values])
        union = np.logical_or.reduce(list(masks.values()))
        np.testing.assert_array_equal(union, [x is not None for x in values])
        # The same as with None / NaN (documented: missing values belong to no group).
        ref = Dataset(X, y, groups={"g": np.array(values, dtype=object)})
        for v in expected:
            np.testing.assert_array_equal(masks[v], ref.context().subset(group="g", value=v).mask())
    # Complements and positive subsets work on such columns, and a goal can use them.
    ds = Dataset(X, y, groups={"g": col})
    first = expected[0]
    sub = ds.context().subset(group="g", value=first)
    np.testing.assert_array_equal((~sub).mask(), [not (x is not None and x == first) for x in values])
    from rateopt import Problem
    from rateopt.goals import demographic_parity

    problem = Problem(constraints=[demographic_parity("g", slack=0.1)], datasets=ds)
    assert problem.n_constraints == 2 * len(expected)


def test_pandas_na_in_labels_is_a_missing_label():
    pd = pytest.importorskip("pandas")
    with pytest.raises(RateoptError, match="y contains missing values"):
        Dataset(X4, pd.Series([1, pd.NA, 0, 1], dtype="Int64"))
    with pytest.raises(RateoptError, match="y contains missing values"):
        Dataset(X4, pd.Series(["a", pd.NA, "b", "a"], dtype="string"))


def test_pandas_na_in_the_baseline_is_a_clear_error():
    pd = pytest.importorskip("pandas")
    for b in (pd.Series([True, pd.NA, False, True], dtype="boolean"),
              pd.Series(["a", pd.NA, "b", "a"], dtype="string"),
              np.array([1, None, 0, 1], dtype=object)):
        with pytest.raises(RateoptError, match="baseline contains missing values"):
            Dataset(X4, ["a", "b", "a", "b"], baseline=b)


def test_nullable_numeric_columns_are_read_as_float64_and_pd_na_is_refused():
    import pandas as pd

    X = pd.DataFrame({"a": pd.array([0.5, 1.5, -2.0], dtype="Float64"), "b": pd.array([1, 2, 3], dtype="Int64"),
                      "c": pd.array([True, False, True], dtype="boolean"), "d": [1.0, 2.0, 3.0]})
    ds = Dataset(X, [0, 1, 0])
    assert ds.X.dtype == np.float64 and ds.X.flags.c_contiguous
    np.testing.assert_array_equal(ds.X, [[0.5, 1, 1, 1], [1.5, 2, 0, 2], [-2, 3, 1, 3]])
    X.loc[1, "b"] = pd.NA
    with pytest.raises(RateoptError, match=r"^X column 'b' holds a missing value \(pd.NA\) at row 1 \(1 missing\): "
                                           r"impute or drop it$"):
        Dataset(X, [0, 1, 0])
    plain = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    assert Dataset(plain, [0, 1, 0]).X is plain  # numpy dtypes: kept as given


# --------------------------------------------------------------------------- memory: what a dataset keeps per row


def test_default_weights_hold_no_memory_per_row():
    ds = Dataset(np.zeros((1000, 2)))
    assert ds.weights.shape == (1000,) and ds.weights.dtype == np.float64 and np.all(ds.weights == 1.0)
    assert not ds.weights.flags.writeable
    assert ds.weights.strides == (0,)  # one float64 for every row
    assert ds.total_weight == 1000.0
    back = pickle.loads(pickle.dumps(ds))
    assert back.weights.tolist() == [1.0] * 1000


@pytest.mark.parametrize("column", [
    np.array(["Female", "Male", "Male", "Female", "Other"] * 60),  # fixed-width strings
    np.array([3, -1, 7, 3, 7] * 60),                                # integers
    np.array([True, False, False, True, True] * 60),                # booleans
    np.arange(300) % 300,                                           # 300 groups: uint16 codes
])
def test_string_int_and_bool_group_columns_are_kept_as_values_and_narrow_codes(column):
    """The column reads back bit for bit; the factorization equals a fresh one of the user's array
    (rateopt._language._validation.factorize); the codes take one byte per row up to 256 groups."""
    from rateopt._language._validation import factorize

    user = column.copy()
    ds = Dataset(np.zeros((column.size, 1)), groups={"g": column})
    column[:] = column[::-1]  # the user's array changes afterwards: the dataset kept its own values
    got = ds.groups["g"]
    assert got.dtype == user.dtype and np.array_equal(got, user) and not got.flags.writeable
    stored = ds.groups.factorized("g")
    assert stored is not None
    assert stored.codes.dtype == (np.uint8 if np.unique(user).size <= 256 else np.uint16)
    values, codes = ds.group_factorization("g")
    want_values, want_codes = factorize(user)
    assert np.array_equal(values, want_values) and codes.dtype == np.int64 and np.array_equal(codes, want_codes)
    assert np.array_equal(ds.group_values("g"), want_values)
    for v in want_values[:3].tolist():  # subsets by group: the brute-force mask
        assert np.array_equal(ds.context().subset(group="g", value=v).mask(), user == v)
    back = pickle.loads(pickle.dumps(ds))
    assert back.groups.factorized("g") is not None and np.array_equal(back.groups["g"], user)


@pytest.mark.parametrize("column", [
    np.array(["h1", "h0", "h1", "h10", "Ünï"] * 60, dtype=object),   # objects, all str
    np.array([f"g{i}" for i in range(300)], dtype=object),          # 300 groups: uint16 codes
])
def test_object_columns_of_str_are_kept_as_values_and_narrow_codes(column):
    """An object column of Python strings is stored factorized: it reads back equal value for value (an object
    array), its factorization equals a fresh one of the user's array, and membership tests read no row."""
    from rateopt._language._validation import factorize

    user = column.copy()
    ds = Dataset(np.zeros((column.size, 1)), groups={"g": column})
    column[:] = column[::-1]
    got = ds.groups["g"]
    assert got.dtype == object and got.tolist() == user.tolist() and not got.flags.writeable
    stored = ds.groups.factorized("g")
    assert stored is not None and stored.values.dtype == object
    assert stored.codes.dtype == (np.uint8 if len(set(user.tolist())) <= 256 else np.uint16)
    values, codes = ds.group_factorization("g")
    want_values, want_codes = factorize(user)
    assert values.tolist() == sorted(set(user.tolist())) == want_values.tolist()
    assert np.array_equal(codes, want_codes)
    for v in want_values[:3].tolist():
        assert np.array_equal(ds.context().subset(group="g", value=v).mask(), user == v)
    assert "g" in ds.groups and "h" not in ds.groups and [] not in ds.groups
    back = pickle.loads(pickle.dumps(ds))
    assert back.groups.factorized("g") is not None and back.groups["g"].tolist() == user.tolist()


@pytest.mark.parametrize("column", [
    np.array(["a", None, "b", "a"], dtype=object),           # a missing value
    np.array(["a", float("nan"), "b", "a"], dtype=object),
    np.array(["a", 1, "b", "a"], dtype=object),              # a number among strings
    np.array(["a", np.str_("b"), "b", "a"], dtype=object),   # a str subclass
    np.array([1, 1.0, True, 2], dtype=object),               # equal under == with different types
])
def test_object_columns_with_anything_but_str_stay_arrays(column):
    def missing(v):
        return v is None or v != v

    ds = Dataset(X4, groups={"o": column})
    assert ds.groups.factorized("o") is None
    got = ds.groups["o"].tolist()
    assert [missing(v) for v in got] == [missing(v) for v in column.tolist()]
    assert [(type(v), v) for v in got if not missing(v)] == [(type(v), v) for v in column.tolist() if not missing(v)]


def test_object_and_float_group_columns_stay_arrays():
    """Columns whose values can be missing or equal under == with different bits are kept as given (copied)."""
    obj = np.array(["a", None, "b", "a"], dtype=object)
    flt = np.array([0.5, np.nan, 1.5, 0.5])
    ds = Dataset(X4, groups={"o": obj, "f": flt})
    assert ds.groups.factorized("o") is None and ds.groups.factorized("f") is None
    assert ds.groups["o"].tolist() == ["a", None, "b", "a"]
    assert np.array_equal(ds.groups["f"], flt, equal_nan=True)
