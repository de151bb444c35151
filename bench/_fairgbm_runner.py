"""FairGBM 0.9.14 on one split, run in its own venv (bench/requirements-fairgbm.txt) by bench/boosting.py.

Usage: ``python bench/_fairgbm_runner.py IN.npz OUT.npz`` where IN holds ``X_tr, y_tr, g_tr, X_te`` (a matrix
``M`` is dense, or CSR as ``M_data, M_indices, M_indptr, M_shape``) and the
scalars ``constraint_type`` (FairGBM's: "FNR" for equal opportunity, "FPR,FNR" for equalized odds),
``tolerance``, ``multiplier_learning_rate``, ``n_estimators``, ``seed``; OUT gets the 0/1 decisions
``d_tr, d_te`` and the CPU seconds of the fit (``cpu_s``). FairGBM cannot state demographic parity.
"""

import sys
import time

import numpy as np
import scipy.sparse as sp
from fairgbm import FairGBMClassifier


def _matrix(z, key):
    if key in z:
        return z[key]
    return sp.csr_matrix((z[key + "_data"], z[key + "_indices"], z[key + "_indptr"]), shape=tuple(z[key + "_shape"]))


def main(src, dst):
    z = np.load(src, allow_pickle=False)
    ctype = str(z["constraint_type"])
    tol = float(z["tolerance"])
    params = dict(constraint_type=ctype, multiplier_learning_rate=float(z["multiplier_learning_rate"]),
                  n_estimators=int(z["n_estimators"]), random_state=int(z["seed"]), n_jobs=1,
                  learning_rate=0.1, max_depth=6, num_leaves=31, min_child_weight=1e-3)
    if "FNR" in ctype:
        params["constraint_fnr_tolerance"] = tol
    if "FPR" in ctype:
        params["constraint_fpr_tolerance"] = tol
    clf = FairGBMClassifier(**params)
    t0 = time.process_time()
    clf.fit(_matrix(z, "X_tr"), z["y_tr"], constraint_group=z["g_tr"])
    cpu = time.process_time() - t0
    np.savez(dst, d_tr=clf.predict(_matrix(z, "X_tr")).astype(float),
             d_te=clf.predict(_matrix(z, "X_te")).astype(float), cpu_s=cpu)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
