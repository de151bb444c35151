"""The one arity object: what the estimator, ThresholdClassifier and the CLI build for two and K classes.

Each contract is checked against an independent construction: the dataset built by hand, the decision
columns sliced by hand, a constant rule's decisions counted, and the arity each entry point finds.
"""

from __future__ import annotations

import numpy as np
import pytest

import rateopt as ro
from rateopt._training._arity import TWO_CLASSES, KClasses, arity_of, arity_of_classes, arity_of_labels
from rateopt._training._model_kind import BOOSTED, ESTIMATORS, WEIGHTS, model_kind_of


def _rows(K, n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    labels = np.array(["lo", "mid", "hi"][:K] if K > 2 else ["no", "yes"])
    y = labels[rng.integers(0, K, n)]
    return X, y, labels, rng.choice(["a", "b"], n), rng.uniform(0.5, 2.0, n)


def test_the_entry_points_find_the_arity_of_their_labels_once():
    assert arity_of_labels(["no", "yes"]) is TWO_CLASSES and arity_of_labels(None) is TWO_CLASSES
    three = arity_of_labels(["hi", "lo", "mid"])
    assert isinstance(three, KClasses) and three.classes.tolist() == ["hi", "lo", "mid"] and three.n_outputs == 3
    assert arity_of_classes(None) is TWO_CLASSES
    assert isinstance(arity_of_classes([0, 1]), KClasses)  # a K-class result of two classes stays K-class
    for K in (2, 3):
        X, y, labels, g, _ = _rows(K)
        est = ro.RateConstrainedClassifier(n_iter=5).fit(X, y)
        assert est.multiclass_ == (K > 2)
        problem = est.problem_
        assert type(arity_of(problem)) is type(arity_of_labels(est.classes_))


@pytest.mark.parametrize("K", [2, 3])
def test_labelled_dataset_is_the_dataset_built_by_hand(K):
    X, y, labels, g, w = _rows(K)
    labels = np.unique(y)
    arity = arity_of_labels(labels)
    ds = arity.labelled_dataset(X, y, labels=labels, weights=w, groups={"g": g})
    if K == 2:
        ref = ro.Dataset(X, (y == labels[1]).astype(int), weights=w, groups={"g": g})
        np.testing.assert_array_equal(ds.y, ref.y)
    else:
        ref = ro.ClassDataset(X, y, weights=w, groups={"g": g}, classes=labels)
        np.testing.assert_array_equal(ds.label_index, ref.label_index)
        np.testing.assert_array_equal(ds.classes, ref.classes)
    assert type(ds) is type(ref)
    np.testing.assert_array_equal(ds.weights, ref.weights)
    scores = arity.labelled_dataset(X[:, 0], y, labels=labels) if K == 2 else None  # one score per row
    if scores is not None:
        np.testing.assert_array_equal(scores.X, X[:, :1])


@pytest.mark.parametrize("K", [2, 3])
def test_decisions_are_the_positive_column_or_every_class(K):
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(K), size=7)
    arity = arity_of_labels(list(range(K)))
    expected = P[:, 1] if K == 2 else P
    np.testing.assert_array_equal(arity.decisions(P), expected)
    names = arity.probability_header(list(range(K)), True)
    cols = arity.probability_columns(P, list(range(K)))
    assert list(cols) == names
    np.testing.assert_array_equal(np.column_stack([cols[c] for c in names]), P[:, 1:] if K == 2 else P)


@pytest.mark.parametrize("K", [2, 3])
def test_each_constant_bias_decides_one_constant_class(K):
    arity = TWO_CLASSES if K == 2 else KClasses(np.arange(K))
    X = np.random.default_rng(2).normal(size=(50, 3))
    decided = []
    for b in arity.constant_biases():
        clf = arity.iterate(np.zeros(arity.weight_shape(3)), b)
        labels = np.unique(clf.predict(X, random_state=0))
        assert labels.size == 1  # every row gets the same class
        decided.append(int(labels[0]))
    assert decided == list(range(K))  # two classes: negative, then positive; K: class k by the k-th bias


def test_model_kinds_are_found_from_the_model_spec_and_refused_by_the_arity():
    assert model_kind_of(ro.LinearModel()) is WEIGHTS and model_kind_of(ro.KernelModel()) is WEIGHTS
    assert model_kind_of(ro.BoostingModel()) is BOOSTED
    assert model_kind_of(ro.LinearModel(), estimator_iterates=True) is ESTIMATORS
    with pytest.raises(TypeError, match="model must be a LinearModel, a KernelModel or a BoostingModel, got str"):
        model_kind_of("linear")
    assert TWO_CLASSES.model_kind_refusal(BOOSTED) is None
    assert KClasses([0, 1, 2]).model_kind_refusal(WEIGHTS) is None
    assert KClasses([0, 1, 2]).model_kind_refusal(BOOSTED) is None  # K classes through LightGBM's multiclass

    class TwoClassKind(type(BOOSTED)):
        trains_k_classes = False

    refusal = KClasses([0, 1, 2]).model_kind_refusal(TwoClassKind())
    assert refusal.startswith("Only binary classification is supported with BoostingModel")


@pytest.mark.parametrize("K", [2, 3])
def test_the_game_spec_is_the_spec_modules_build_of_the_problem(K):
    from rateopt._train import _as_spec
    from rateopt._training._class_spec import ClassGameSpec, class_spec_from_problem
    from rateopt._training._spec import GameSpec, spec_from_problem

    X, y, labels, g, w = _rows(K)
    ds = (ro.Dataset(X, (y == labels[1]).astype(int), weights=w, groups={"g": g}) if K == 2
          else ro.ClassDataset(X, y, weights=w, groups={"g": g}))
    goal = (ro.goals.demographic_parity("g", slack=0.05) if K == 2
            else ro.goals.multiclass_demographic_parity("g", slack=0.05))
    problem = ro.Problem(constraints=[goal], datasets=ds)
    arity = arity_of(problem)
    spec = arity.game_spec(problem)
    builder, kind = (spec_from_problem, GameSpec) if K == 2 else (class_spec_from_problem, ClassGameSpec)
    reference = builder(problem)
    assert type(spec) is kind and type(spec.arity) is type(arity)
    assert spec.constraint_names == reference.constraint_names and spec.n_atoms == reference.n_atoms
    np.testing.assert_array_equal(spec.C.toarray(), reference.C.toarray())
    np.testing.assert_array_equal(spec.kappa, reference.kappa)
    assert type(_as_spec(problem)) is kind  # the driver's spec is the arity's
