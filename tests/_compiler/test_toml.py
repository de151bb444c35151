"""Goals files (TOML): every recipe by name, errors naming the line and key, Problem.to_toml/from_toml."""

import dataclasses

import numpy as np
import pytest

import rateopt
from rateopt import goals
from rateopt._compiler._toml import RECIPES, GoalsFileError, GoalsSpec, read_goals, write_goals
from rateopt.cli._train_table import check_train_entry


def _dataset(n=400, seed=0):
    X, y, g = rateopt.make_groups_dataset(n, random_state=seed)
    rng = np.random.default_rng(seed + 1000)  # independent of the generator's own draws
    return rateopt.Dataset(X, y, groups={"group": g, "age": rng.choice(["young", "old"], n)},
                           baseline=rng.integers(0, 2, n))


def test_every_goal_class_has_a_recipe_name():
    classes = {getattr(goals, n) for n in goals.__all__
               if isinstance(getattr(goals, n), type) and issubclass(getattr(goals, n), goals.Goal)
               and getattr(goals, n) is not goals.Goal}
    assert classes == set(RECIPES.values())
    for name, cls in RECIPES.items():
        assert getattr(goals, name) is cls


GOALS = [
    goals.equal_opportunity("group", slack=0.05, sides="lower"),
    goals.demographic_parity(("group", "age"), slack=0.2, multiplicative=True, name="80% rule"),
    goals.equalized_odds("group", slack=0.1, values=("A", "B")),
    goals.coverage_budget(0.4),
    goals.recall_floor(0.6, group="age"),
    goals.churn_cap(0.3),
    goals.kl_divergence_cap(0.05, group="group"),
    goals.roc_auc_floor(0.7, L=5),
]


def test_write_then_read_gives_the_same_goals():
    spec = GoalsSpec(objective="balanced_error", goals=GOALS, datasets={"steering": "steer.csv"},
                     train={"n_iter": 300, "learning_rate": 0.05, "solution": "best"}, regularization=0.001)
    back = read_goals(write_goals(spec))
    assert back.goals == GOALS
    assert [type(g) for g in back.goals] == [type(g) for g in GOALS]
    assert (back.objective, back.datasets, back.train, back.regularization) == (
        "balanced_error", {"steering": "steer.csv"}, {"n_iter": 300, "learning_rate": 0.05, "solution": "best"}, 0.001)


def test_problem_to_toml_round_trips_to_the_same_compiled_problem():
    ds = _dataset()
    linear = GOALS[:6]
    p = rateopt.Problem(objective="balanced_error", constraints=linear, datasets=ds)
    q = rateopt.Problem.from_toml(p.to_toml(), ds)
    assert q.constraint_names == p.constraint_names
    np.testing.assert_array_equal(q.compiled.C.toarray() if hasattr(q.compiled.C, "toarray") else q.compiled.C,
                                  p.compiled.C.toarray() if hasattr(p.compiled.C, "toarray") else p.compiled.C)
    np.testing.assert_array_equal(q.compiled.kappa, p.compiled.kappa)
    decisions = np.random.default_rng(1).integers(0, 2, ds.n_samples)
    assert q.evaluate(decisions).constraints == p.evaluate(decisions).constraints
    # A named objective means what it names: balanced error = (FPR + FNR) / 2.
    y = np.asarray(ds.y)
    fpr, fnr = decisions[y == 0].mean(), 1 - decisions[y == 1].mean()
    assert q.evaluate(decisions).objective == pytest.approx((fpr + fnr) / 2)


def test_from_toml_reads_a_file(tmp_path):
    (tmp_path / "g.toml").write_text('[[goals]]\nrecipe = "coverage_budget"\nmax_rate = 0.25\n')
    p = rateopt.Problem.from_toml(tmp_path / "g.toml", _dataset())
    assert p.constraint_names == ("ppr[all] <= 0.25",)


def test_to_toml_refuses_what_a_goals_file_cannot_state():
    ds = _dataset()
    ctx = ds.context()
    with pytest.raises(rateopt.exceptions.RateoptError, match="rate expressions"):
        rateopt.Problem(constraints=[rateopt.positive_prediction_rate(ctx) <= 0.3]).to_toml()
    with pytest.raises(rateopt.exceptions.RateoptError, match="named objective"):
        rateopt.Problem(objective=rateopt.false_positive_rate(ctx), constraints=[goals.coverage_budget(0.3)],
                        datasets=ds).to_toml()


@pytest.mark.parametrize("text, message", [
    ('objective = "error"\n[[goals]\n', r"not valid TOML: .*line 2"),
    ('objective = "accuracy"\n', r"line 1: objective: must be one of"),
    ('objetive = "error"\n', r"line 1: objetive: unknown key"),
    ('\n[[goals]]\nrecipe = "equal_opportunity"\ngroup = "g"\n\n[[goals]]\nrecipe = "recal_floor"\n',
     r"line 7: goals\[1\]\.recipe: unknown goal 'recal_floor' \(did you mean 'recall_floor'\?\)"),
    ('[[goals]]\nrecipe = "coverage_budget"\nmax_rate = 0.3\nslack = 1\n',
     r"line 4: goals\[0\]\.slack: coverage_budget takes no parameter 'slack'"),
    ('[[goals]]\nrecipe = "coverage_budget"\n', r"line 1: goals\[0\]: coverage_budget needs max_rate"),
    ('[[goals]]\nrecipe = "coverage_budget"\nmax_rate = 1.5\n', r"line 1: goals\[0\]: coverage_budget: .*max_rate"),
    ('[[goals]]\ngroup = "g"\n', r"line 1: goals\[0\]: needs recipe"),
    ('[train]\nn_iter = 0\n', r"line 2: train\.n_iter: n_iter must be >= 1"),
    ('[train]\nsteps = 3\n', r"line 2: train\.steps: unknown training parameter"),
    ('[datasets]\ntrain = "a.csv"\n', r"line 2: datasets\.train"),
])
def test_errors_name_the_line_and_key(text, message):
    with pytest.raises(GoalsFileError, match=message):
        read_goals(text, check_train=check_train_entry)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(GoalsFileError, match="nope.toml: cannot read"):
        read_goals(tmp_path / "nope.toml")


_GOALS = '[[goals]]\nrecipe = "coverage_budget"\nmax_rate = 0.25\n'


def test_a_goals_file_with_a_byte_order_mark_reads(tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + _GOALS.encode())
    spec = read_goals(path)
    assert spec.goals == [goals.coverage_budget(0.25)] and spec.path == str(path)
    assert read_goals(str(path)).goals == [goals.coverage_budget(0.25)]
    assert read_goals("\ufeff" + _GOALS).goals == [goals.coverage_budget(0.25)]  # text that kept its mark


@pytest.mark.parametrize("name", ["alpha=0.1", "a = b"])
def test_a_path_holding_an_equals_sign_is_read_as_a_file(tmp_path, name):
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "goals.toml"
    path.write_text(_GOALS)
    spec = read_goals(str(path))
    assert spec.goals == [goals.coverage_budget(0.25)] and spec.path == str(path)
    # The same path with no such file is still a path (a .toml name), so the error names the file.
    with pytest.raises(GoalsFileError, match=r"alpha=0\.1/nope\.toml: cannot read the goals file"):
        read_goals(str(tmp_path / "alpha=0.1" / "nope.toml"))
    # A file whose name does not end in .toml is found too.
    other = folder / "goals=v2.txt"
    other.write_text(_GOALS)
    assert read_goals(str(other)).path == str(other)
    assert rateopt.Problem.from_toml(str(path), _dataset()).constraint_names == ("ppr[all] <= 0.25",)


def test_one_line_toml_text_is_still_text():
    spec = read_goals('objective = "balanced_error"')
    assert spec.path is None and spec.objective == "balanced_error"


def test_recipe_defaults_are_left_out_and_tuples_become_arrays():
    g = goals.equalized_odds("group", slack=0.1, values=("A", "B"))
    text = write_goals(GoalsSpec(goals=[g]))
    assert 'values = ["A", "B"]' in text and "sides" not in text
    assert dataclasses.asdict(read_goals(text).goals[0]) == dataclasses.asdict(g)


def test_a_string_objective_is_a_name_of_OBJECTIVES():
    ds = _dataset()
    with pytest.raises(rateopt.exceptions.RateoptError, match="objective must be one of"):
        rateopt.Problem(objective="accuracy", constraints=[goals.coverage_budget(0.3)], datasets=ds)
    p = rateopt.Problem(objective="error", constraints=[goals.coverage_budget(0.3)], datasets=ds)
    d = np.random.default_rng(2).integers(0, 2, ds.n_samples)
    assert p.evaluate(d).objective == pytest.approx(np.mean(d != np.asarray(ds.y)))


def test_train_table_takes_the_method():
    assert read_goals('[train]\nmethod = "proxy-external"\n', check_train=check_train_entry).train == {
        "method": "proxy-external"}
    with pytest.raises(GoalsFileError, match=r"line 2: train\.method: method must be 'auto' or one of"):
        read_goals('[train]\nmethod = "newton"\n', check_train=check_train_entry)


def test_the_compiler_only_parses_the_train_table():
    # Without the command line's check, [train] is read as written (Problem.from_toml ignores it).
    assert read_goals('[train]\nsteps = 3\nmethod = "newton"\n').train == {"steps": 3, "method": "newton"}
