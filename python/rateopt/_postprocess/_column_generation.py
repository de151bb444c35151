"""The increment-form threshold LP over every bin, solved by column generation on a few of them.

The increment form of :mod:`rateopt._postprocess._lp` has one column ``delta_v``
per bin (the rise of its chain's table there) and a handful of rows. A table
whose increments vanish off a subset of the bins is a table on coarser bins
(each bin joined to the chosen bins below it in its chain), so the LP over a
subset is the same LP on coarser chains. Its row duals ``y`` price every bin
of the full LP at once: ``delta_v``'s reduced cost is ``D_v . y_atoms - y_cap``,
with ``D_v . y_atoms`` the suffix sum of ``M^T y_atoms`` from ``v`` to the end of
its chain. The bins of negative reduced cost join the subset, until none is
left: the subset's optimum is then an optimum of the LP over every bin (LP
duality), found without building its dense increment matrix, which holds a
nonzero per bin and atom and which HiGHS copies several times (for a boosted
run's exact re-fit, 400,000 nonzeros and about 45 MiB of HiGHS's memory; the
subset's LP needs a few thousand columns).

The optimum is the full LP's; where the LP has several optimal vertices, the
one found may differ from the vertex HiGHS returns on the full LP (another
rule of the same objective).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._bins import segment_accumulate
from ._lp import Chains, _bin_matrix, _Builder, _refuse_unsupported, _solution, objective_of, solve_threshold_lp

__all__ = ["solve_threshold_lp_generated"]

#: Bins of every chain in the first subset (evenly spaced over the chain, its first bin included).
INITIAL_BINS = 512
#: The most bins one pricing round adds to a chain (those of most negative reduced cost).
ADD_BINS = 512
#: A bin joins the subset when its reduced cost is below ``-PRICE_TOL`` (HiGHS's dual feasibility tolerance).
PRICE_TOL = 1e-9
#: Pricing rounds before the full LP is solved instead (not reached in practice: a round adds every chain's
#: most improving bins).
MAX_ROUNDS = 100


class _Restricted:
    """The increment-form LP on the chosen bins ``chosen`` (a sorted subset of ``chains``' bins holding every
    chain's first bin), as an LP on coarser chains, and the pricing of every bin from its duals."""

    def __init__(self, compiled, chains, M, chosen):
        self.compiled, self.chains, self.M = compiled, chains, M
        self.chosen = chosen
        n_vars = chains.n_vars
        group = np.cumsum(np.isin(np.arange(n_vars), chosen)) - 1  # every bin's coarse bin (its chosen bin)
        G = sp.csc_matrix((np.ones(n_vars), (np.arange(n_vars), group)), shape=(n_vars, chosen.size))
        Mc = sp.csc_matrix(M @ G)
        start = np.searchsorted(chosen, chains.start).astype(np.int64)
        self.coarse = Chains(start=start, record=chains.record, n_records=chains.n_records, M=Mc)
        self.builder = _Builder(compiled, self.coarse, Mc)

    def solve(self, objective, *, slack, minimize_violation=False):
        """``(status, coarse column values, the bins to add)``: no bin to add when the value is optimal over
        every bin."""
        status, value, y = self.builder.solve(objective, slack=slack, minimize_violation=minimize_violation,
                                              duals=True)
        if status != "optimal":
            return status, value, None
        return status, value, self._improving(y)

    def reduced_costs(self, y):
        """Every bin's reduced cost (``delta_v``'s, shape (n_vars,)) under the row duals ``y``: the suffix sum of
        ``M^T y_atoms`` from the bin to its chain's end, less its chain's cap dual."""
        chains, n_atoms = self.chains, self.compiled.n_atoms
        cap_row = n_atoms + self.builder.n_c  # the increment form has no monotone rows
        w = self.M.T @ y[:n_atoms]
        suffix = segment_accumulate(np.add, w[::-1], (w.size - chains.start)[::-1])[::-1]
        return suffix - np.repeat(y[cap_row:cap_row + chains.start.size - 1], np.diff(chains.start))

    def _improving(self, y):
        """The bins (not chosen) of reduced cost below ``-PRICE_TOL`` under the row duals ``y``, at most
        :data:`ADD_BINS` a chain (the most negative)."""
        chains = self.chains
        reduced = self.reduced_costs(y)
        reduced[self.chosen] = 0.0
        add = []
        for k in range(chains.start.size - 1):
            a, b = chains.start[k], chains.start[k + 1]
            neg = np.flatnonzero(reduced[a:b] < -PRICE_TOL)
            if neg.size > ADD_BINS:
                neg = neg[np.argsort(reduced[a:b][neg], kind="stable")[:ADD_BINS]]
            add.append(a + neg)
        return np.concatenate(add)

    def fine(self, value):
        """A coarse solution's columns as the full LP's (an unchosen bin's increment is 0)."""
        n_sel = self.chosen.size
        out = np.zeros(self.chains.n_vars + value.size - n_sel)
        out[self.chosen] = value[:n_sel]
        out[self.chains.n_vars:] = value[n_sel:]
        return out


class _FineTables:
    """The tables of the full LP's increments (``_Builder.tables`` of the increment form)."""

    def __init__(self, chains):
        self.chains = chains

    def tables(self, sol):
        return segment_accumulate(np.add, sol[: self.chains.n_vars], self.chains.start)


def _initial(chains, n_bins):
    """Every chain's first bin and ``n_bins`` evenly spaced bins of it, sorted."""
    parts = []
    for k in range(chains.start.size - 1):
        a, b = int(chains.start[k]), int(chains.start[k + 1])
        parts.append(np.unique(np.linspace(a, b - 1, min(n_bins, b - a)).astype(np.int64)))
    return np.unique(np.concatenate(parts))


def solve_threshold_lp_generated(compiled, chains, *, epsilon=0.0, initial_bins=INITIAL_BINS):
    """:func:`rateopt._postprocess._lp.solve_threshold_lp`'s LP (the increment form), by column generation.

    The same phases: the LP at ``epsilon``; where no rule meets it, the least
    largest violation over every bin, then the LP at that slack. Each phase is
    solved on a subset of the bins grown by pricing until no bin improves it,
    so its optimum is the LP's over every bin (the rule found may be another
    optimal vertex than HiGHS's on the full LP).

    Parameters
    ----------
    compiled : CompiledProblem
    chains : Chains
        One chain per record (the increment form); ``chains.M`` given.
    epsilon : float, default=0.0
    initial_bins : int, default=INITIAL_BINS
        Bins of each chain in the first subset.

    Returns
    -------
    ThresholdLPSolution
        As ``solve_threshold_lp``'s (``x`` per bin of ``chains``).
    """
    _refuse_unsupported(compiled)
    objective = objective_of(compiled)
    M = _bin_matrix(compiled, chains)
    state = {"lp": _Restricted(compiled, chains, M, _initial(chains, int(initial_bins)))}

    def phase(obj, slack, minimize_violation=False):
        for _ in range(MAX_ROUNDS):
            lp = state["lp"]
            if not lp.builder.increments:  # too dense for the increment form even on the subset
                return None
            status, value, add = lp.solve(obj, slack=slack, minimize_violation=minimize_violation)
            if status != "optimal" or add.size == 0:
                return status, value
            state["lp"] = _Restricted(compiled, chains, M, np.union1d(lp.chosen, add))
        return None

    def full():
        return solve_threshold_lp(compiled, chains, epsilon=epsilon)

    out = phase(objective, epsilon)
    if out is None:
        return full()
    status, sol = out
    slack = 0.0
    if status == "infeasible":  # on the subset: the violation phase over every bin says whether it is at all
        out = phase(None, epsilon, minimize_violation=True)
        if out is None:
            return full()
        status, least = out
        if status != "optimal":  # pragma: no cover - the violation LP is always feasible and bounded
            return full()
        slack = max(float(least), 0.0)
        # the subset now holds a rule of that violation: the LP at that slack is feasible on it
        out = phase(objective, epsilon if slack == 0.0 else epsilon + slack * (1 + 1e-9) + 1e-12)
        if out is not None and out[0] == "infeasible" and slack == 0.0:  # met only to the solver's tolerance
            out = phase(objective, epsilon + 1e-12)
        if out is None:
            return full()
        status, sol = out
    if status != "optimal":
        return full()  # the full LP's own phases and errors
    lp = state["lp"]
    return _solution(_FineTables(chains), lp.fine(sol), compiled, chains, objective, M, slack)
