"""An independent reference for the two-sided hinge problem: HiGHS's QP solver.

``min (1/n) sum A t + B r + lam/2 |theta|^2`` subject to ``t >= tau + beta + X theta``,
``r >= tau - beta - X theta``, ``t, r >= 0``. Used by the SDCA solver's tests
(tests/core/test_sdca.py) and the hinge oracle's (tests/test_oracles.py).
"""

import highspy
import numpy as np
import scipy.sparse as sp


def highs_hinge_qp(X, A, B, lam, tau, beta=0.0, time_limit=30.0):
    """The QP's optimal ``theta`` (HiGHS; asserts an optimal status)."""
    n, d = X.shape
    ia, ib = np.flatnonzero(A > 0), np.flatnonzero(B > 0)
    na, nb = ia.size, ib.size
    nv = d + na + nb
    inf = highspy.kHighsInf
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(time_limit))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = nv, na + nb
    lp.col_cost_ = np.concatenate([np.zeros(d), A[ia] / n, B[ib] / n])
    lp.col_lower_ = np.concatenate([np.full(d, -inf), np.zeros(na + nb)])
    lp.col_upper_ = np.full(nv, inf)
    M = sp.bmat([[sp.csr_matrix(-X[ia]), sp.eye(na), None], [sp.csr_matrix(X[ib]), None, sp.eye(nb)]]).tocsc()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = M.indptr, M.indices, M.data
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = nv, na + nb
    lp.row_lower_ = np.concatenate([np.full(na, tau + beta), np.full(nb, tau - beta)])
    lp.row_upper_ = np.full(na + nb, inf)
    hess = highspy.HighsHessian()
    hess.dim_ = nv
    hess.format_ = highspy.HessianFormat.kTriangular
    # A tiny curvature on the slacks keeps HiGHS's active-set QP from declaring
    # the problem non-convex (the SDCA tests' KKT polish removes its effect).
    hess.start_ = np.arange(nv + 1)
    hess.index_ = np.arange(nv)
    hess.value_ = np.concatenate([np.full(d, lam), np.full(na + nb, 1e-10)])
    model = highspy.HighsModel()
    model.lp_, model.hessian_ = lp, hess
    h.passModel(model)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal, h.modelStatusToString(h.getModelStatus())
    return np.array(h.getSolution().col_value[:d])
