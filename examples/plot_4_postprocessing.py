"""
Post-processing boosted trees, certified on held-out data
=========================================================

Fit a :class:`~sklearn.ensemble.HistGradientBoostingClassifier` on one sample, then the exact best
randomized per-group threshold rule under equalized odds on a second sample
(:class:`rateopt.ThresholdClassifier`), and certify the goal on a third, held-out sample
(:meth:`rateopt.ThresholdClassifier.certify`).
"""

import matplotlib.pyplot as plt
import numpy as np
import rateopt
from sklearn.ensemble import HistGradientBoostingClassifier

Xm, ym, gm = rateopt.make_groups_dataset(4000, random_state=2)    # fits the model
Xa, ya, ga = rateopt.make_groups_dataset(30000, random_state=4)   # fits the thresholds
Xv, yv, gv = rateopt.make_groups_dataset(50000, random_state=3)   # held out, certifies
model = HistGradientBoostingClassifier(max_iter=50).fit(Xm, ym)
post = rateopt.ThresholdClassifier(      # fitted with a margin under the requirement below
    model, goals=[rateopt.goals.equalized_odds("group", slack=0.01)], prefit=True)
post.fit(Xa, ya, groups={"group": ga})
requirement = [rateopt.goals.equalized_odds("group", slack=0.05)]
certificate = post.certify(Xv, yv, groups={"group": gv}, confidence=0.95, goals=requirement)
print(certificate)

# %%
# Each group's true and false positive rates on the held-out sample: the model's own decisions
# (its 0.5 threshold) against the post-processed rule's expected decisions.
p_model = model.predict(Xv).astype(float)
p_post = post.predict_proba(Xv, groups={"group": gv})[:, 1]
fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
for ax, label, name in ((axes[0], 1, "true positive rate"), (axes[1], 0, "false positive rate")):
    for k, (p, system) in enumerate(((p_model, "boosted trees"), (p_post, "post-processed"))):
        rates = [p[(gv == g) & (yv == label)].mean() for g in ("A", "B")]
        ax.bar(np.arange(2) + 0.38 * k, rates, width=0.38, label=system)
    ax.set_xticks(np.arange(2) + 0.19, ["group A", "group B"])
    ax.set_title(name)
axes[0].legend()
fig.tight_layout()
plt.show()
