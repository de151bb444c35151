"""The core training loop (issue 14 item 1): whole runs of the built-in games in one core call.

:func:`run_train_loop` runs iterations of a game of :data:`LOOP_GAMES` with the
GIL released, reading and writing the players' :class:`LoopState` and filling
:class:`LoopRecords` in place; :class:`LoopOutcome` says how the call ended.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._utils._validation import as_finite_scalar, as_float_vector
from ..exceptions import NumericalError
from ._kernel import PROXIES
from ._matrix import AtomTable, FeatureMatrix
from ._runtime import extension as _core
from ._threads import resolve_n_threads

__all__ = ["LOOP_GAMES", "OPTIMIZERS", "UPDATES", "OBJECTIVE_PROXIES", "LoopState", "LoopRecords", "LoopOutcome",
           "run_train_loop"]

LOOP_GAMES = {"proxy-swap": 0, "proxy-external": 1, "lagrangian-hinge": 2, "unconstrained": 3}
"""The games the core loop runs, with their codes in ``_core.train_loop``."""

#: The model player's optimizers, by name, with their codes in the core (the one table of their names).
OPTIMIZERS = {"sgd": 0, "adagrad": 1, "adam": 2}
#: The swap-regret multiplier player's updates.
UPDATES = ("multiplicative", "additive")
#: The objective's proxies: the core's proxies but the ramp (Goh et al. (2016)'s dataset constraints only).
OBJECTIVE_PROXIES = tuple(name for name in PROXIES if name != "ramp")
_LOOP_STATUS = ("done", "stopped", "nonfinite_scores", "nonfinite_outputs", "multiplier_overflow")


@dataclass
class LoopState:
    """The players' state the core loop reads and writes in place.

    Attributes
    ----------
    theta : ndarray of shape (n_features,)
    bias : ndarray of shape (1,)
    opt_m, opt_v : ndarray of shape (n_features + 1,)
        Adam's moments (``opt_v`` is also Adagrad's sum of squares); the bias last.
    opt_t : ndarray of shape (1,) of int64
        Model steps taken.
    matrix : ndarray of shape (m + 1, m + 1)
        ``"proxy-swap"``: ``log M`` (multiplicative update) or ``M`` (additive).
    lam : ndarray
        ``"proxy-swap"``: the stationary distribution (m + 1,); the Lagrangian
        games: ``lambda >= 0`` (m,); unused by ``"unconstrained"``.
    """

    theta: np.ndarray
    bias: np.ndarray
    opt_m: np.ndarray
    opt_v: np.ndarray
    opt_t: np.ndarray
    matrix: np.ndarray
    lam: np.ndarray


@dataclass
class LoopRecords:
    """Record buffers the core loop fills (``count`` rows so far).

    Attributes
    ----------
    weights : ndarray of shape (capacity, n_features)
    biases, iterations : ndarray of shape (capacity,)
    multipliers : ndarray of shape (capacity, m + 1)
        Objective weight first (the driver's layout).
    rates : ndarray of shape (capacity, n_atoms)
        Full-data atom rates of each recorded iterate.
    val_rates : ndarray of shape (capacity, n_val_atoms) or None
    count : int
    """

    weights: np.ndarray
    biases: np.ndarray
    iterations: np.ndarray
    multipliers: np.ndarray
    rates: np.ndarray
    val_rates: object = None
    count: int = 0

    @classmethod
    def allocate(cls, capacity, n_features, n_constraints, n_atoms, n_val_atoms=None):
        """Empty buffers for ``capacity`` records."""
        return cls(np.zeros((capacity, n_features)), np.zeros(capacity), np.zeros(capacity, dtype=np.int64),
                   np.zeros((capacity, n_constraints + 1)), np.zeros((capacity, n_atoms)),
                   None if n_val_atoms is None else np.zeros((capacity, n_val_atoms)))


@dataclass(frozen=True)
class LoopOutcome:
    """How a call of :func:`run_train_loop` ended: ``status`` (``"done"`` or
    ``"stopped"``), the iteration ``t`` it ended at (``t_end`` when done; the
    iteration whose callback asked to stop otherwise) and the records so far."""

    status: str
    t: int
    n_records: int


def _loop_block(block):
    X, atoms, atom_ids = block
    if not isinstance(X, FeatureMatrix):
        raise TypeError(f"each block's features must be a FeatureMatrix, got {type(X).__name__}")
    if not isinstance(atoms, AtomTable):
        raise TypeError(f"each block's atoms must be an AtomTable, got {type(atoms).__name__}")
    if atoms.n_samples != X.n_samples:
        raise ValueError(f"a block's atoms have {atoms.n_samples} rows but its X has {X.n_samples}")
    ids = np.ascontiguousarray(atom_ids, dtype=np.int64)
    table = (atoms.indptr, atoms.indices, atoms.weights, atoms.n_atoms, ids)
    if X.is_sparse:
        return ("csr", *X.csr_arrays, X.n_samples, X.n_features) + table
    return ("dense", X.data) + table


def run_train_loop(blocks, game, C, kappa, c0, state, records, *, n_iter, record_every, optimizer, learning_rate,
                   l2, radius, fit_intercept, eta_lambda, update, lambda_radius, lambda_floor, proxy, margin,
                   t_begin=0, t_end=None, val_blocks=(), rows=None, sampled=None, sort_rows=False, callback=None,
                   progress_every=0, n_threads=None):
    """Run iterations ``[t_begin, t_end)`` of a built-in game in the core, the GIL released.

    Each iteration is one fused kernel pass over every block (for the game's
    combinations at its current multipliers), the model player's step and the
    multiplier player's step, with the arithmetic of ``rateopt._training._players``;
    iterations ``t`` with ``t % record_every == 0`` and the last one
    (``n_iter - 1``) are recorded into ``records`` (model, multipliers,
    full-data atom rates of the blocks and of ``val_blocks``). The players'
    state is read from and written back to ``state``, so a run can continue
    in later calls. :func:`rateopt.train` uses this for its built-in games
    (``loop="auto"``); it is the same game as the Python driver to round-off.

    Parameters
    ----------
    blocks : sequence of (FeatureMatrix, AtomTable, ndarray)
        Each dataset: features, atom table, the global ids of its atoms.
    game : {"proxy-swap", "proxy-external", "lagrangian-hinge", "unconstrained"}
    C : ndarray of shape (m, n_atoms)
    kappa : ndarray of shape (m,)
    c0 : ndarray of shape (n_atoms,)
        The players' rate maps (``GameSpec.for_players()``).
    state : LoopState
        Updated in place.
    records : LoopRecords
        Filled in place from row ``records.count`` on (``count`` is updated).
    n_iter : int
        T of the whole run (its last iterate is always recorded).
    record_every : int
    t_begin, t_end : int
        The iterations this call runs (``t_end=None``: ``n_iter``).
    optimizer, learning_rate, l2, radius, fit_intercept
        The model player (``radius=None``: no projection). These and the
        multiplier player's settings are required: their one default is the
        training parameters' (``rateopt._params.TRAIN_PARAMS``, the game's
        ``Game.defaults``).
    eta_lambda, update, lambda_radius, lambda_floor
        The multiplier player (``eta_lambda=None``: no step, the unconstrained
        game; ``update``: proxy-swap's; ``lambda_radius``: the Lagrangian
        games' L1 cap, None for none; ``lambda_floor``: proxy-swap's
        multiplicative update keeps every entry of its matrix at least
        ``lambda_floor / (m + 1)``, 0 for no floor).
    proxy : {"hinge", "logistic"}
        The objective's proxy (constraints keep the hinge).
    margin : float
    val_blocks : sequence of (FeatureMatrix, AtomTable, ndarray)
        Validation datasets whose atom rates are recorded too.
    rows : ndarray of shape (t_end - t_begin, n_sampled, batch) of int64, default=None
        Minibatch rows of the sampled blocks for each iteration (None: full batch).
    sampled : array-like of shape (len(blocks),) of bool
        Which blocks ``rows`` samples (the others are read in full).
    sort_rows : bool, default=False
        Visit each iteration's rows of a block in increasing order (the loop
        sorts them: a radix sort, cheaper than ``numpy.sort`` per iteration);
        False visits them in the order given.
    callback : callable, default=None
        ``callback(t, n_records) -> bool`` after every record and every
        ``progress_every`` iterations, with the GIL held; True stops the loop
        before iteration ``t``'s step. Its exceptions propagate.
    progress_every : int, default=0
    n_threads : int or None

    Returns
    -------
    LoopOutcome

    Raises
    ------
    ValueError
        On an unknown game, optimizer, update or proxy, or inconsistent shapes.
    rateopt.exceptions.NumericalError
        If a score or a kernel output is not finite, or a multiplier step overflows.
    """
    if game not in LOOP_GAMES:
        raise ValueError(f"game must be one of {tuple(LOOP_GAMES)}, got {game!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {tuple(OPTIMIZERS)}, got {optimizer!r}")
    if update not in UPDATES:
        raise ValueError(f"update must be 'multiplicative' or 'additive', got {update!r}")
    if proxy not in OBJECTIVE_PROXIES:
        raise ValueError(f"proxy must be 'hinge' or 'logistic', got {proxy!r}")
    if not isinstance(state, LoopState):
        raise TypeError(f"state must be a LoopState, got {type(state).__name__}")
    if not isinstance(records, LoopRecords):
        raise TypeError(f"records must be a LoopRecords, got {type(records).__name__}")
    c0 = as_float_vector(c0, "c0")
    C = np.asarray(C, dtype=np.float64)
    C = C.reshape(0, c0.shape[0]) if C.size == 0 else C
    if C.ndim != 2 or C.shape[1] != c0.shape[0]:
        raise ValueError(f"C must have shape (n_constraints, n_atoms = {c0.shape[0]}), got {C.shape}")
    C = np.ascontiguousarray(C)
    written = [(f"state.{n}", getattr(state, n), np.int64 if n == "opt_t" else np.float64)
               for n in ("theta", "bias", "opt_m", "opt_v", "opt_t", "matrix", "lam")]
    written += [(f"records.{n}", getattr(records, n), np.int64 if n == "iterations" else np.float64)
                for n in ("weights", "biases", "iterations", "multipliers", "rates", "val_rates")
                if getattr(records, n) is not None]
    for name, a, dtype in written:
        if not (isinstance(a, np.ndarray) and a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable):
            raise TypeError(f"{name} must be a writeable C-contiguous {np.dtype(dtype)} ndarray "
                            "(the loop writes it in place)")
    kappa = as_float_vector(kappa, "kappa", ("n_constraints", C.shape[0]))
    if not (np.all(np.isfinite(C)) and np.all(np.isfinite(c0))):
        raise ValueError("C and c0 must be finite")
    blocks = [_loop_block(b) for b in blocks]
    val_blocks = [_loop_block(b) for b in val_blocks]
    if not blocks:
        raise ValueError("blocks must hold at least one dataset")
    n_features = int(blocks[0][5] if blocks[0][0] == "csr" else blocks[0][1].shape[1])
    if state.theta.shape != (n_features,):
        raise ValueError(f"state.theta has shape {state.theta.shape}, expected (n_features,) = ({n_features},)")
    if (val_blocks and records.val_rates is None) or (not val_blocks and records.val_rates is not None):
        raise ValueError("records.val_rates must be given exactly when val_blocks are")
    t_end = n_iter if t_end is None else t_end
    schedule = dict(t_begin=int(t_begin), t_end=int(t_end), n_iter=int(n_iter), record_every=int(record_every),
                    n_threads=resolve_n_threads(n_threads), progress_every=int(progress_every), rows=None)
    if rows is not None:
        schedule["rows"] = np.ascontiguousarray(rows, dtype=np.int64)
        if sampled is None:
            raise ValueError("sampled must be given with rows")
        schedule["sampled"] = np.ascontiguousarray(sampled, dtype=np.uint8)
        schedule["sort_rows"] = bool(sort_rows)
    game_d = dict(game=LOOP_GAMES[game], C=C, kappa=kappa, c0=c0, n_features=int(state.theta.shape[0]),
                  objective_proxy=PROXIES[proxy], margin=float(margin))
    model_d = dict(optimizer=OPTIMIZERS[optimizer], learning_rate=float(learning_rate), l2=float(l2),
                   radius=None if radius is None else float(radius), fit_intercept=bool(fit_intercept))
    lambda_floor = as_finite_scalar(lambda_floor, "lambda_floor")
    if not 0.0 <= lambda_floor < 1.0:
        raise ValueError(f"lambda_floor must be in [0, 1), got {lambda_floor!r}")
    mult_d = dict(eta=float(eta_lambda or 0.0), multiplicative=update == "multiplicative",
                  lambda_radius=None if lambda_radius is None else float(lambda_radius),
                  floor=lambda_floor / (C.shape[0] + 1) if update == "multiplicative" else 0.0)
    state_d = {k: getattr(state, k) for k in ("theta", "bias", "opt_m", "opt_v", "opt_t", "matrix", "lam")}
    rec_d = dict(weights=records.weights, biases=records.biases, iterations=records.iterations,
                 multipliers=records.multipliers, rates=records.rates, count=int(records.count))
    if records.val_rates is not None:
        rec_d["val_rates"] = records.val_rates
    status, t, detail, count = _core.train_loop(blocks, val_blocks, game_d, model_d, mult_d, state_d, schedule,
                                                rec_d, callback)
    records.count = count
    name = _LOOP_STATUS[status]
    if name == "nonfinite_scores":
        raise NumericalError(f"the scores x.theta + bias of {detail} row(s) are not finite (overflow, or inf - inf): "
                             f"scale X or reduce theta (iteration {t})")
    if name == "nonfinite_outputs":
        raise NumericalError("the proxies overflowed (a non-finite proxy value, combination value, hinge rate or "
                             f"gradient): scale X or reduce theta, or the coefficients (iteration {t})")
    if name == "multiplier_overflow":
        raise NumericalError(f"the multiplier update overflows: eta * delta * lam leaves the float64 range "
                             f"(eta={eta_lambda!r}); reduce eta or rescale the constraints (iteration {t})")
    return LoopOutcome(name, int(t), int(count))
