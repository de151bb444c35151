"""Type stub of the compiled core (private: use rateopt.core)."""

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

def openmp_enabled() -> bool: ...
def default_threads() -> int: ...
def available_cores() -> int: ...
def build_info() -> dict[str, Any]: ...
def rate_kernel_dense(
    X: NDArray[np.floating], theta: NDArray[np.float64], bias: float, atom_indptr: NDArray[np.int32 | np.int64],
    atom_indices: NDArray[np.uint8 | np.uint16 | np.int32], atom_weights: NDArray[np.float64], n_atoms: int,
    coef: NDArray[np.float64],
    proxies: NDArray[np.int32], grad_weights: NDArray[np.float64], separate_gradients: bool,
    margin: float, rows: NDArray[np.int64] | None, n_threads: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
           NDArray[np.float64], NDArray[np.float64], int]: ...
def rate_kernel_csr(
    data: NDArray[np.floating], indices: NDArray[np.integer], indptr: NDArray[np.integer], n_samples: int,
    n_features: int, theta: NDArray[np.float64], bias: float, atom_indptr: NDArray[np.int32 | np.int64],
    atom_indices: NDArray[np.uint8 | np.uint16 | np.int32], atom_weights: NDArray[np.float64], n_atoms: int,
    coef: NDArray[np.float64],
    proxies: NDArray[np.int32], grad_weights: NDArray[np.float64], separate_gradients: bool,
    margin: float, rows: NDArray[np.int64] | None, n_threads: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
           NDArray[np.float64], NDArray[np.float64], int]: ...
def first_nonfinite(array: NDArray[np.floating], n_threads: int) -> int: ...
def first_out_of_range(array: NDArray[np.integer], bound: int, n_threads: int) -> int: ...
def first_decrease(array: NDArray[np.integer], n_threads: int) -> int: ...
def first_negative(array: NDArray[np.float64], n_threads: int) -> int: ...
def memory_floor(array: NDArray[Any], n_threads: int) -> int: ...
def swap_update_multiplicative(
    log_M: NDArray[np.float64], delta: NDArray[np.float64], lam: NDArray[np.float64], eta: float, floor: float = 0.0
) -> NDArray[np.float64]: ...
def swap_update_additive(
    M: NDArray[np.float64], delta: NDArray[np.float64], lam: NDArray[np.float64], eta: float
) -> NDArray[np.float64]: ...
def stationary_distribution(
    M: NDArray[np.float64], lam0: NDArray[np.float64], tol: float, max_iter: int
) -> tuple[NDArray[np.float64], int, bool, float]: ...
def external_update_multiplicative(
    log_lam: NDArray[np.float64], delta: NDArray[np.float64], eta: float
) -> NDArray[np.float64]: ...
def external_update_additive(
    lam: NDArray[np.float64], delta: NDArray[np.float64], eta: float, simplex: bool, radius: float
) -> NDArray[np.float64]: ...
def project_simplex(v: NDArray[np.float64], radius: float) -> NDArray[np.float64]: ...
def project_l1_ball_nonneg(v: NDArray[np.float64], radius: float) -> NDArray[np.float64]: ...
def kernel_block_dense(
    X: NDArray[np.floating], landmarks: NDArray[np.float64], kind: int, gamma: float, coef0: float, degree: float,
    out_f32: bool, n_threads: int,
) -> NDArray[np.floating]: ...
def kernel_block_csr(
    data: NDArray[np.floating], indices: NDArray[np.integer], indptr: NDArray[np.integer], n_samples: int,
    n_features: int, landmarks: NDArray[np.float64], kind: int, gamma: float, coef0: float, degree: float,
    out_f32: bool, n_threads: int,
) -> NDArray[np.floating]: ...
def gram_transform(
    G: NDArray[np.floating], xsq: NDArray[np.float64] | None, bsq: NDArray[np.float64] | None, kind: int,
    gamma: float, coef0: float, degree: float, n_threads: int,
) -> None: ...
def _call_in_parallel_region(fn: Any, n_outer: int) -> int: ...
# --- offset-atom kernel (AUC, issue 11)
def offset_kernel_dense(
    X: NDArray[np.floating], theta: NDArray[np.float64], bias: float, atom_indptr: NDArray[np.int32 | np.int64],
    atom_indices: NDArray[np.uint8 | np.uint16 | np.int32], atom_weights: NDArray[np.float64], n_atoms: int,
    offset_ids: NDArray[np.int32],
    offsets: NDArray[np.float64], coef: NDArray[np.float64], proxies: NDArray[np.int32],
    grad_weights: NDArray[np.float64], separate_gradients: bool, margin: float, rows: NDArray[np.int64] | None,
    n_threads: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
           NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], int]: ...
def offset_kernel_csr(
    data: NDArray[np.floating], indices: NDArray[np.integer], indptr: NDArray[np.integer], n_samples: int,
    n_features: int, theta: NDArray[np.float64], bias: float, atom_indptr: NDArray[np.int32 | np.int64],
    atom_indices: NDArray[np.uint8 | np.uint16 | np.int32], atom_weights: NDArray[np.float64], n_atoms: int,
    offset_ids: NDArray[np.int32],
    offsets: NDArray[np.float64], coef: NDArray[np.float64], proxies: NDArray[np.int32],
    grad_weights: NDArray[np.float64], separate_gradients: bool, margin: float, rows: NDArray[np.int64] | None,
    n_threads: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
           NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], int]: ...
# --- SDCA solver (issue 12)
def sdca_two_sided_hinge_dense(
    X: NDArray[np.floating], A: NDArray[np.float64], B: NDArray[np.float64], lam: float, tau: float, beta: float,
    regularized_bias: bool, bias_scale: float, theta0: NDArray[np.float64] | None, bias0: float,
    xi0: NDArray[np.float64] | None, tol: float, max_epochs: int, seed: int,
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], float, float, float, int, float, int]: ...
def sdca_two_sided_hinge_csr(
    data: NDArray[np.floating], indices: NDArray[np.integer], indptr: NDArray[np.integer], n_samples: int,
    n_features: int, A: NDArray[np.float64], B: NDArray[np.float64], lam: float, tau: float, beta: float,
    regularized_bias: bool, bias_scale: float, theta0: NDArray[np.float64] | None, bias0: float,
    xi0: NDArray[np.float64] | None, tol: float, max_epochs: int, seed: int,
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], float, float, float, int, float, int]: ...
# --- core training loop (issue 14 item 1) ---
def train_loop(
    blocks: list[tuple[Any, ...]], val_blocks: list[tuple[Any, ...]], game: dict[str, Any], model: dict[str, Any],
    multipliers: dict[str, Any], state: dict[str, NDArray[Any]], schedule: dict[str, Any],
    records: dict[str, Any], callback: Callable[[int, int], bool] | None,
) -> tuple[int, int, int, int]: ...
# --- the fused K-column multiclass pass (issue 26)
def multiclass_pass_dense(
    X: NDArray[np.floating], coef: NDArray[np.float64], intercept: NDArray[np.float64], cells: NDArray[np.int32],
    cell_weights: NDArray[np.float64], n_cells: int, cost_objective: NDArray[np.float64],
    cost_constraints: NDArray[np.float64], objective_proxy: int, constraint_proxy: int, gradient: bool,
    margin: float, rows: NDArray[np.int64] | None, n_threads: int, value: bool = ...,
) -> tuple[NDArray[np.float64], float, float, float, NDArray[np.float64] | None, NDArray[np.float64] | None,
           int]: ...
def multiclass_pass_csr(
    data: NDArray[np.floating], indices: NDArray[np.integer], indptr: NDArray[np.integer], n_samples: int,
    n_features: int, coef: NDArray[np.float64], intercept: NDArray[np.float64], cells: NDArray[np.int32],
    cell_weights: NDArray[np.float64], n_cells: int, cost_objective: NDArray[np.float64],
    cost_constraints: NDArray[np.float64], objective_proxy: int, constraint_proxy: int, gradient: bool,
    margin: float, rows: NDArray[np.int64] | None, n_threads: int, value: bool = ...,
) -> tuple[NDArray[np.float64], float, float, float, NDArray[np.float64] | None, NDArray[np.float64] | None,
           int]: ...
def multiclass_scores_dense(
    X: NDArray[np.floating], coef: NDArray[np.float64], intercept: NDArray[np.float64], n_threads: int
) -> tuple[NDArray[np.float64], int]: ...
def multiclass_scores_csr(
    data: NDArray[np.floating], indices: NDArray[np.integer], indptr: NDArray[np.integer], n_samples: int,
    n_features: int, coef: NDArray[np.float64], intercept: NDArray[np.float64], n_threads: int,
) -> tuple[NDArray[np.float64], int]: ...
# --- the boosting pass (issue 33)
def boosting_pass(
    scores: NDArray[np.floating], atom_indptr: NDArray[np.int32 | np.int64],
    atom_indices: NDArray[np.uint8 | np.uint16 | np.int32],
    atom_weights: NDArray[np.float64], n_atoms: int, coef: NDArray[np.float64], proxy: int, scale: float,
    grad: NDArray[np.floating], hess: NDArray[np.floating], n_threads: int,
    hess_coef: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], int]: ...
def kept_bin_codes(scores: NDArray[np.floating], lows: NDArray[np.floating]) -> NDArray[np.uint8]: ...
def boosting_multiclass_pass(
    scores: NDArray[np.floating], class_major: bool, cells: NDArray[np.int32], cell_weights: NDArray[np.float64],
    n_cells: int, cost: NDArray[np.float64], scale: float, grad: NDArray[np.floating], hess: NDArray[np.floating],
    n_threads: int,
) -> tuple[NDArray[np.float64], int]: ...
