"""Groups that are features: the affine map from features to cells, and offsets folded into linear models.

Every expected value is recounted from the rows by NumPy: the cells' one-hot
indicators, and each row's argmax with the per-cell offsets added.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from rateopt._postprocess._cell_map import cell_indicator_map, fold_cell_offsets


def _rows(seed=0, n=300):
    rng = np.random.default_rng(seed)
    return rng, rng.normal(size=(n, 4))


def _check_exact(X, cells, G):
    cm = cell_indicator_map(X, cells, G)
    assert cm is not None
    A, b = cm
    assert A.shape == (X.shape[1], G) and b.shape == (G,)
    np.testing.assert_allclose(np.asarray(X @ A) + b, np.eye(G)[cells], atol=1e-9)
    return cm


def test_one_indicator_column_gives_both_cells():
    rng, Z = _rows()
    cells = rng.integers(0, 2, Z.shape[0])
    _check_exact(np.column_stack([Z, cells == 1]).astype(float), cells, 2)


@pytest.mark.parametrize("drop_first", [False, True])
def test_one_hot_groups_with_or_without_a_dropped_column(drop_first):
    rng, Z = _rows(1)
    cells = rng.integers(0, 3, Z.shape[0])
    H = np.eye(3)[cells][:, 1:] if drop_first else np.eye(3)[cells]
    X = np.column_stack([H[:, :1], Z, H[:, 1:]])  # the group columns anywhere among the features
    _check_exact(X, cells, 3)
    _check_exact(sp.csr_matrix(X), cells, 3)  # sparse features give the same map


def test_none_when_the_groups_are_not_features():
    rng, Z = _rows(2)
    cells = rng.integers(0, 2, Z.shape[0])
    assert cell_indicator_map(Z, cells, 2) is None
    # a column that is constant within the cells but equal in both does not tell them apart
    assert cell_indicator_map(np.column_stack([Z, np.ones(Z.shape[0])]), cells, 2) is None


def test_none_for_intersections_that_x_does_not_hold():
    # cells = race x sex, X holds the two indicators: the cell (1, 1) is their product, not affine
    rng, Z = _rows(3)
    r, s = rng.integers(0, 2, Z.shape[0]), rng.integers(0, 2, Z.shape[0])
    assert cell_indicator_map(np.column_stack([Z, r, s]).astype(float), 2 * r + s, 4) is None
    # with the product column among the features it is exact
    _check_exact(np.column_stack([Z, r, s, r * s]).astype(float), 2 * r + s, 4)


def test_one_cell_needs_no_columns():
    _, Z = _rows(4)
    A, b = cell_indicator_map(Z, np.zeros(Z.shape[0], dtype=np.int64), 1)
    np.testing.assert_allclose(Z @ A + b, 1.0)


def test_folded_offsets_decide_as_the_per_cell_rule_on_new_rows():
    rng, Z = _rows(5, n=400)
    cells = rng.integers(0, 3, Z.shape[0])
    X = np.column_stack([Z, np.eye(3)[cells][:, 1:]])
    cm = _check_exact(X, cells, 3)
    K = 4
    W, b = rng.normal(size=(K, X.shape[1])), rng.normal(size=K)
    o = rng.normal(scale=2.0, size=(3, K))
    W2, b2 = fold_cell_offsets(W, b, o, cm)
    # fresh rows of the same encoding: the folded model reads the cell from the features
    new_cells = rng.integers(0, 3, 2000)
    Xn = np.column_stack([rng.normal(size=(2000, 4)), np.eye(3)[new_cells][:, 1:]])
    rule = np.argmax(Xn @ W.T + b + o[new_cells], axis=1)
    folded = np.argmax(Xn @ W2.T + b2, axis=1)
    assert np.array_equal(rule, folded)
    np.testing.assert_allclose(Xn @ W2.T + b2, Xn @ W.T + b + o[new_cells], atol=1e-9)


def test_fold_refuses_offsets_of_the_wrong_shape():
    rng, Z = _rows(6)
    cells = rng.integers(0, 2, Z.shape[0])
    cm = _check_exact(np.column_stack([Z, cells]).astype(float), cells, 2)
    with pytest.raises(ValueError, match="offsets must have shape"):
        fold_cell_offsets(np.zeros((3, 5)), np.zeros(3), np.zeros((3, 3)), cm)
