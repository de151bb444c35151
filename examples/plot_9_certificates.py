"""
How many held-out rows does a certificate need?
===============================================
:meth:`rateopt.ThresholdClassifier.certify` bounds every goal's population value from held-out rows
(exact Clopper–Pearson intervals, a union bound over the rates): a goal is certified when its upper
bound is at most 0. The bound tightens as the held-out sample grows. Here a logistic regression's
scores are post-processed under demographic parity with slack 0.02, and the requirement, parity
within 0.05, is certified on held-out samples of 250 to 32,000 rows.
"""

import matplotlib.pyplot as plt
import numpy as np
import rateopt
from sklearn.linear_model import LogisticRegression

Xm, ym, gm = rateopt.make_groups_dataset(4000, random_state=0)  # fits the model
Xf, yf, gf = rateopt.make_groups_dataset(20000, random_state=1)  # fits the thresholds
Xh, yh, gh = rateopt.make_groups_dataset(32000, random_state=2)  # held out
model = LogisticRegression().fit(Xm, ym)
post = rateopt.ThresholdClassifier(
    model, goals=[rateopt.goals.demographic_parity("group", slack=0.02)], prefit=True)
post.fit(Xf, yf, groups={"group": gf})
requirement = [rateopt.goals.demographic_parity("group", slack=0.05)]

sizes = [250, 500, 1000, 2000, 4000, 8000, 16000, 32000]
values, uppers = [], []
for n in sizes:
    cert = post.certify(Xh[:n], yh[:n], groups={"group": gh[:n]}, goals=requirement)
    worst = max(cert.goals, key=lambda g: g.upper)  # the goal closest to failing
    values.append(worst.value)
    uppers.append(worst.upper)
    print(f"{n:>6} held-out rows: {worst.name:<30} g={worst.value:+.4f}  upper bound {worst.upper:+.4f}"
          f"  {'certified' if cert.certified else 'not certified'}")

# %%
# The goal closest to failing, against the held-out sample size: its value on the held-out rows and
# its 95% upper bound. The requirement is certified once the bound drops below 0.
fig, ax = plt.subplots(figsize=(6.4, 3.6))
ax.plot(sizes, values, "o-", label="value on the held-out rows")
ax.plot(sizes, uppers, "s-", label="95% upper bound")
ax.axhline(0.0, color="black", lw=1)
ax.fill_between(sizes, 0, np.maximum(uppers, 0), color="tab:red", alpha=0.1, label="not certified")
ax.set_xscale("log")
ax.set_xlabel("held-out rows")
ax.set_ylabel("g  (goal met when <= 0)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
