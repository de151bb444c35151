"""fairlearn's ExponentiatedGradient with LightGBM inside, on one split, run by bench/boosting.py --eg.

It runs in a venv with fairlearn and lightgbm (``/work/venv-fl`` here: fairlearn 0.15.0, lightgbm 4.7.0;
any venv with ``fairlearn`` and ``lightgbm==4.7.0``). Usage: ``python bench/_eg_runner.py IN.npz OUT.npz``
where IN holds ``X_tr, y_tr, g_tr, X_te`` (dense) and the scalars ``goal`` (rateopt's name),
``tolerance`` (fairlearn's ``difference_bound``: each group's rate within it of the overall rate, the
same statement as rateopt's slack), ``n_estimators``, ``seed``; OUT gets the expected decisions of the
randomized classifier (``_pmf_predict``, comparable to rateopt's ``predict_proba``) ``d_tr, d_te``,
the process CPU seconds of the fit (``cpu_s``), the number of LightGBM fits (``n_oracle_calls``, fairlearn's
``n_oracle_calls_``), the number of distinct predictors kept (``n_predictors``), the wall seconds spent in those
fits (``oracle_s``) and EG's last iteration (``last_iter``).
"""

import sys
import time

import numpy as np
from fairlearn.reductions import DemographicParity, EqualizedOdds, ExponentiatedGradient, TruePositiveRateParity
from lightgbm import LGBMClassifier

MOMENTS = {"demographic_parity": DemographicParity, "equal_opportunity": TruePositiveRateParity,
           "equalized_odds": EqualizedOdds}


def main(src, dst):
    z = np.load(src, allow_pickle=False)
    est = LGBMClassifier(n_estimators=int(z["n_estimators"]), learning_rate=0.1, max_depth=6, num_leaves=31,
                         min_child_weight=1e-3, n_jobs=1, random_state=int(z["seed"]), deterministic=True,
                         verbosity=-1)
    eg = ExponentiatedGradient(est, constraints=MOMENTS[str(z["goal"])](difference_bound=float(z["tolerance"])))
    t0 = time.process_time()
    eg.fit(z["X_tr"], z["y_tr"], sensitive_features=z["g_tr"])
    cpu = time.process_time() - t0
    np.savez(dst, d_tr=eg._pmf_predict(z["X_tr"])[:, 1], d_te=eg._pmf_predict(z["X_te"])[:, 1], cpu_s=cpu,
             n_oracle_calls=eg.n_oracle_calls_, n_predictors=len(eg.predictors_),
             oracle_s=float(np.sum(eg.oracle_execution_times_)), last_iter=eg.last_iter_)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
