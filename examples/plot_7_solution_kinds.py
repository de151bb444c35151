"""
Six ways to turn a training run into a classifier
=================================================
A run of :func:`rateopt.train` records many models; :meth:`rateopt.TrainResult.solution` builds the
final classifier from them in six ways: the randomized mixtures ``"m-stochastic"`` (the default: at
most m+1 models, from the shrinking LP), ``"T-stochastic"`` (every recorded model) and ``"exact"``,
the deterministic single models ``"best"`` and ``"last"``, and ``"thresholded"`` (the mixture's
thresholds re-fitted exactly, here on 100 score bins per model). Each is scored on the training rows
and on fresh rows with :meth:`rateopt.Problem.evaluate`.
"""

import matplotlib.pyplot as plt
import numpy as np
import rateopt

goal = rateopt.goals.equalized_odds("group", slack=0.05)
X, y, group = rateopt.make_groups_dataset(5000, random_state=0)
problem = rateopt.Problem(constraints=[goal], datasets=rateopt.Dataset(X, y, groups={"group": group}))
Xh, yh, gh = rateopt.make_groups_dataset(20000, random_state=1)
held_out = rateopt.Problem(constraints=[goal], datasets=rateopt.Dataset(Xh, yh, groups={"group": gh}))
result = rateopt.train(problem, random_state=0)

kinds = ["m-stochastic", "T-stochastic", "exact", "best", "last", "thresholded"]
points = {}
for kind in kinds:
    clf = result.solution(kind, problem=problem, n_bins=100)  # n_bins: of "thresholded" only
    train_eval = problem.evaluate(clf.predict_proba(X)[:, 1], kind="probabilities")
    held_eval = held_out.evaluate(clf.predict_proba(Xh)[:, 1], kind="probabilities")
    points[kind] = [(e.objective, max(e.max_violation, 0.0)) for e in (train_eval, held_eval)]
    print(f"{kind:<13} training error {train_eval.objective:.3f} violation {max(train_eval.max_violation, 0):.4f}"
          f" | fresh rows error {held_eval.objective:.3f} violation {max(held_eval.max_violation, 0):.4f}")

# %%
# Error and largest violation of the goal (0 = met) per solution, on the training rows and on
# fresh rows. The mixtures meet the goal on the training rows; a single recorded model of the game
# need not (``"last"`` is wherever the game stopped), and every solution loses a little on fresh
# rows, which is what certificates bound (see the post-processing example).
fig, axes = plt.subplots(1, 2, figsize=(8, 3.6), sharey=True)
pos = np.arange(len(kinds))
for ax, j, title in ((axes[0], 0, "error"), (axes[1], 1, "largest violation")):
    ax.barh(pos - 0.2, [points[k][0][j] for k in kinds], height=0.4, label="training rows")
    ax.barh(pos + 0.2, [points[k][1][j] for k in kinds], height=0.4, label="fresh rows")
    ax.set_title(title)
axes[0].set_yticks(pos, kinds)
axes[0].invert_yaxis()
axes[1].legend(loc="lower right")
fig.tight_layout()
plt.show()
