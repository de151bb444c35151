"""FairGBM 0.9.14 on one split, run in its own venv (bench/requirements-fairgbm.txt) by bench/boosting.py.

Usage: ``python bench/_fairgbm_runner.py IN.npz OUT.npz`` where IN holds ``X_tr, y_tr, g_tr, X_te`` (a matrix
``M`` is dense, or CSR as ``M_data, M_indices, M_indptr, M_shape``), ``n_estimators``, ``seed`` and one entry
per fit in the arrays ``constraint_type`` (FairGBM's: "FNR" for equal opportunity, "FPR,FNR" for equalized
odds), ``tolerance`` and ``multiplier_learning_rate`` (one process fits them all, so that its start-up is paid
once per split); OUT gets, for fit ``i``, the 0/1 decisions ``d_tr_i, d_te_i`` and the process CPU seconds of
that fit alone (``cpu_s_i``). FairGBM cannot state demographic parity.
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
    X_tr, X_te = _matrix(z, "X_tr"), _matrix(z, "X_te")
    out = {}
    for i, (ctype, tol, mlr) in enumerate(zip(np.atleast_1d(z["constraint_type"]), np.atleast_1d(z["tolerance"]),
                                              np.atleast_1d(z["multiplier_learning_rate"]))):
        ctype, tol = str(ctype), float(tol)
        params = dict(constraint_type=ctype, multiplier_learning_rate=float(mlr),
                      n_estimators=int(z["n_estimators"]), random_state=int(z["seed"]), n_jobs=1,
                      learning_rate=0.1, max_depth=6, num_leaves=31, min_child_weight=1e-3)
        if "FNR" in ctype:
            params["constraint_fnr_tolerance"] = tol
        if "FPR" in ctype:
            params["constraint_fpr_tolerance"] = tol
        clf = FairGBMClassifier(**params)
        t0 = time.process_time()
        clf.fit(X_tr, z["y_tr"], constraint_group=z["g_tr"])
        out[f"cpu_s_{i}"] = time.process_time() - t0
        out[f"d_tr_{i}"] = clf.predict(X_tr).astype(float)
        out[f"d_te_{i}"] = clf.predict(X_te).astype(float)
    np.savez(dst, **out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
