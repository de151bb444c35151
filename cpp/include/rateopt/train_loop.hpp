// Design
// ------
// Layer: core (no Python types). The whole training loop of the built-in
// two-player games with a linear model (issue 14 item 1): T iterations of
//   1. the fused kernel pass (rate_kernel.hpp) over every dataset, for the
//      combinations the game asks for at its current multipliers;
//   2. the model player's step: sgd / adagrad / adam on (theta, bias), L2 on
//      theta, projection onto ||theta||_2 <= radius;
//   3. the multiplier player's step: swap regret on the (m+1)-simplex
//      (multiplicative in log space or additive, then the stationary
//      distribution; lambda_player.hpp), or projected Lagrangian ascent;
//   4. every `record_every` iterations (and at the last), the record: model,
//      multipliers, full-data atom rates (training and validation datasets).
// Minibatch rows may come unsorted (sort_rows): the loop sorts them, in
// O(batch) per pass of a radix sort, cheaper than the caller's comparison sort.
// The games are those of python/rateopt/games: "proxy-swap" (seed 001,
// Algorithm 3), "proxy-external" (Algorithm 4), "lagrangian-hinge"
// (Algorithm 5) and "unconstrained". Every step is the Python players'
// arithmetic operation for operation (rateopt._players, games/*.py), so the
// core loop and the Python driver agree to round-off; the Python driver stays
// the reference and runs everything else (user-defined games, oracles, the
// three-player game, offset atoms).
//
// Resumable: the players' state lives in caller-owned buffers (LoopState) and
// a call runs iterations [t_begin, t_end), so a caller can run a long loop in
// segments (the minibatch rows of each segment are drawn by the caller, with
// its generator). A callback, called between iterations only (never inside a
// parallel region), gets the progress and may stop the loop; an exception it
// throws propagates to the caller.
//
// Numerical failures are statuses, not exceptions: a non-finite score or
// kernel output, or a multiplier update leaving the float64 range, stops the
// loop and is reported with the iteration (the caller raises).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

#include "lambda_player.hpp"
#include "matrix_view.hpp"
#include "proxy.hpp"
#include "rate_kernel.hpp"

namespace rateopt {

enum class LoopGame : std::int32_t { proxy_swap = 0, proxy_external = 1, lagrangian_hinge = 2, unconstrained = 3 };
enum class LoopOptimizer : std::int32_t { sgd = 0, adagrad = 1, adam = 2 };

inline bool valid_loop_game(std::int32_t g) { return g >= 0 && g <= 3; }
inline bool valid_loop_optimizer(std::int32_t o) { return o >= 0 && o <= 2; }

// One dataset: its atom table, the global ids of its atoms, and the fused
// kernel over its rows (type-erased over the matrix layout).
class LoopBlock {
  public:
    LoopBlock(AtomView atoms, const std::int64_t* atom_ids) : atoms_(atoms), atom_ids_(atom_ids) {}
    virtual ~LoopBlock() = default;
    virtual void pass(const double* theta, double bias, const Combinations& cb, double margin,
                      const std::int64_t* rows, std::int64_t n_batch, int n_threads,
                      RateKernelOutput& out) const = 0;
    virtual std::int64_t n_rows() const = 0;
    virtual std::int64_t n_features() const = 0;
    const AtomView& atoms() const { return atoms_; }
    const std::int64_t* atom_ids() const { return atom_ids_; }  // (atoms().n_atoms,)

  private:
    AtomView atoms_;
    const std::int64_t* atom_ids_;
};

template <class Matrix>
class MatrixBlock final : public LoopBlock {
  public:
    MatrixBlock(const Matrix& X, AtomView atoms, const std::int64_t* atom_ids) : LoopBlock(atoms, atom_ids), X_(X) {}
    void pass(const double* theta, double bias, const Combinations& cb, double margin, const std::int64_t* rows,
              std::int64_t n_batch, int n_threads, RateKernelOutput& out) const override {
        rate_kernel(X_, theta, bias, atoms(), cb, margin, rows, n_batch, n_threads, out);
    }
    std::int64_t n_rows() const override { return X_.n_rows; }
    std::int64_t n_features() const override { return X_.n_cols; }

  private:
    Matrix X_;
};

// The game: its kind and rate maps g0 = c0 . rates, g = C rates - kappa (the
// players' view: GameSpec.for_players()).
struct LoopGameSpec {
    LoopGame game = LoopGame::proxy_swap;
    std::int64_t n_atoms = 0;
    std::int64_t n_features = 0;
    std::int64_t n_constraints = 0;
    const double* C = nullptr;      // (n_constraints, n_atoms), row-major
    const double* kappa = nullptr;  // (n_constraints,)
    const double* c0 = nullptr;     // (n_atoms,)
    ProxyKind objective_proxy = ProxyKind::hinge;  // hinge or logistic; constraints keep the hinge
    double margin = 1.0;
};

struct ModelStepSettings {
    LoopOptimizer optimizer = LoopOptimizer::adam;
    double learning_rate = 0.01;
    double l2 = 0.0;
    bool has_radius = false;
    double radius = 0.0;
    bool fit_intercept = true;
};

struct MultiplierSettings {
    double eta = 0.0;
    bool multiplicative = true;                               // proxy-swap's update
    double log_floor = -std::numeric_limits<double>::infinity();  // multiplicative: entries of M >= e^log_floor
    double lambda_radius = std::numeric_limits<double>::infinity();  // Lagrangian L1 cap (inf: none)
};

// The players' state, read and written in place (caller-owned).
struct LoopState {
    double* theta;        // (n_features,)
    double* bias;         // (1,)
    double* opt_m;        // (n_features + 1,) adam's first moment
    double* opt_v;        // (n_features + 1,) adam's / adagrad's second moment
    std::int64_t* opt_t;  // (1,) steps taken
    double* matrix;       // proxy-swap: (k, k) log M (multiplicative) or M (additive), k = m + 1
    double* lam;          // proxy-swap: (k,) stationary lambda; Lagrangian games: (m,) lambda >= 0
};

// Record buffers (caller-owned, `capacity` rows); `count` rows are filled.
struct LoopRecords {
    std::int64_t capacity = 0;
    std::int64_t count = 0;
    double* weights = nullptr;       // (capacity, n_features)
    double* biases = nullptr;        // (capacity,)
    std::int64_t* iterations = nullptr;  // (capacity,)
    double* multipliers = nullptr;   // (capacity, m + 1), objective weight first
    double* rates = nullptr;         // (capacity, n_atoms)
    double* val_rates = nullptr;     // (capacity, n_val_atoms) or null without validation
    std::int64_t n_val_atoms = 0;
};

struct LoopSchedule {
    std::int64_t t_begin = 0;
    std::int64_t t_end = 0;     // this call runs [t_begin, t_end)
    std::int64_t n_iter = 0;    // T of the whole run (the last iterate is always recorded)
    std::int64_t record_every = 1;
    int n_threads = 1;
    // Minibatch: rows[(t - t_begin) * n_sampled * batch + s * batch + r] is row r of
    // the s-th sampled block at iteration t; sampled[b] marks the blocks sampled
    // (the others are read in full). Null rows: full batch.
    const std::int64_t* rows = nullptr;
    const std::uint8_t* sampled = nullptr;
    std::int64_t batch = 0;
    // Visit each block's minibatch rows in increasing order: the caller drew them
    // unsorted and the loop sorts them (sort_row_ids), so the kernel reads X in
    // memory order. The same rows in the same order as the caller's sorted draw.
    bool sort_rows = false;
    // The callback runs after every record and every `progress_every` iterations (0: records only).
    std::int64_t progress_every = 0;
};

// Row ids in [0, n_rows), ascending, into `out` (LSD radix sort, one byte per
// pass, as many passes as n_rows - 1 has bytes: two for up to 65,536 rows).
// Equal ids are interchangeable, so this is the sorted array numpy's sort gives.
inline void sort_row_ids(const std::int64_t* ids, std::int64_t n, std::int64_t n_rows,
                         std::vector<std::int64_t>& out, std::vector<std::int64_t>& tmp) {
    out.assign(ids, ids + n);
    tmp.resize(static_cast<std::size_t>(n));
    std::uint64_t top = n_rows > 0 ? static_cast<std::uint64_t>(n_rows - 1) : 0;
    for (int shift = 0; top; shift += 8, top >>= 8) {
        std::int64_t count[257] = {0};
        for (std::int64_t i = 0; i < n; ++i) ++count[((static_cast<std::uint64_t>(out[i]) >> shift) & 0xff) + 1];
        for (int b = 0; b < 256; ++b) count[b + 1] += count[b];
        for (std::int64_t i = 0; i < n; ++i) tmp[count[(static_cast<std::uint64_t>(out[i]) >> shift) & 0xff]++] = out[i];
        out.swap(tmp);
    }
}

// Whether iteration t is recorded: every `record_every`-th and the last of the run.
inline bool is_record_iteration(const LoopSchedule& sch, std::int64_t t) {
    return t % sch.record_every == 0 || t == sch.n_iter - 1;
}

// The records a call adds: the recorded iterations in [t_begin, t_end).
inline std::int64_t records_in_call(const LoopSchedule& sch) {
    std::int64_t n = 0;
    for (std::int64_t t = sch.t_begin; t < sch.t_end; ++t) n += is_record_iteration(sch, t);
    return n;
}

enum class LoopStatus : std::int32_t {
    done = 0,                 // t_end reached
    stopped = 1,              // the callback asked to stop
    nonfinite_scores = 2,     // `detail` rows have a non-finite score
    nonfinite_outputs = 3,    // a proxy value, hinge rate or gradient overflowed
    multiplier_overflow = 4,  // eta * delta * lambda left the float64 range
};

struct LoopOutcome {
    LoopStatus status = LoopStatus::done;
    std::int64_t t = 0;       // the iteration at which the loop ended (t_end when done)
    std::int64_t detail = 0;  // status-specific count
};

// callback(t, n_records) -> true to stop; runs on the calling thread between iterations.
using LoopCallback = std::function<bool(std::int64_t, std::int64_t)>;

namespace detail {

inline bool all_finite(const double* x, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i)
        if (!std::isfinite(x[i])) return false;
    return true;
}

// The combinations the game's kernel pass evaluates (games/_base.py
// model_combinations, and the Lagrangian-hinge's constraint rows): the model's
// proxy Lagrangian lam0 g~0 + sum_i lam_i g~i as one hinge combination, or as
// the objective's proxy plus the constraints' hinge; for lagrangian-hinge, also
// the m constraint rows with gradient weight 0.
struct GameCombinations {
    std::int64_t k = 1;
    std::vector<double> coef;           // (k, n_atoms)
    std::vector<std::int32_t> kinds;    // (k,)
    std::vector<double> grad_weights;   // (k,)
    std::vector<double> block_coef;     // (k, n_block_atoms) scratch
    std::vector<std::uint8_t> slope_only;  // (k,): the logistic objective's value is not read

    void init(const LoopGameSpec& g) {
        const std::int64_t m = g.n_constraints;
        const bool hinge = g.objective_proxy == ProxyKind::hinge;
        k = (hinge ? 1 : 2) + (g.game == LoopGame::lagrangian_hinge ? m : 0);
        coef.assign(static_cast<std::size_t>(k * g.n_atoms), 0.0);
        kinds.assign(static_cast<std::size_t>(k), static_cast<std::int32_t>(ProxyKind::hinge));
        grad_weights.assign(static_cast<std::size_t>(k), 1.0);
        if (!hinge) kinds[0] = static_cast<std::int32_t>(g.objective_proxy);
        slope_only.assign(static_cast<std::size_t>(k), 0);
        if (!hinge) slope_only[0] = 1;  // the players read the constraints' values only
        if (g.game == LoopGame::lagrangian_hinge) {
            const std::int64_t first = hinge ? 1 : 2;
            for (std::int64_t i = 0; i < m; ++i) {
                grad_weights[first + i] = 0.0;
                for (std::int64_t a = 0; a < g.n_atoms; ++a)
                    coef[(first + i) * g.n_atoms + a] = g.C[i * g.n_atoms + a];
            }
        }
    }

    // Rows 0 (and 1) at the weights (lam0, lam): cons = lam @ C, then lam0 c0 + cons
    // (hinge) or the two rows [lam0 c0; cons].
    void set_weights(const LoopGameSpec& g, double lam0, const double* lam) {
        const std::int64_t A = g.n_atoms, m = g.n_constraints;
        const bool hinge = g.objective_proxy == ProxyKind::hinge;
        double* cons = hinge ? coef.data() : coef.data() + A;
        for (std::int64_t a = 0; a < A; ++a) {
            double s = 0.0;
            if (lam)  // null: the unconstrained game's zero multipliers
                for (std::int64_t i = 0; i < m; ++i) s += lam[i] * g.C[i * A + a];
            cons[a] = s;
        }
        if (hinge) {
            for (std::int64_t a = 0; a < A; ++a) coef[a] = lam0 * g.c0[a] + cons[a];
        } else {
            for (std::int64_t a = 0; a < A; ++a) coef[a] = lam0 * g.c0[a];
        }
    }
};

// One kernel pass over every block, accumulated as _game.kernel_pass does.
struct PassBuffers {
    std::vector<double> rates, ppos, pneg, grad, pv;  // totals
    double grad_bias = 0.0;
    std::vector<double> b_rates, b_ppos, b_pneg, b_pv, b_values, b_grad;  // one block's output
    double b_grad_bias = 0.0;

    void init(std::int64_t n_atoms, std::int64_t n_features, std::int64_t k, std::int64_t max_block_atoms) {
        rates.assign(static_cast<std::size_t>(n_atoms), 0.0);
        ppos = pneg = rates;
        grad.assign(static_cast<std::size_t>(n_features), 0.0);
        pv.assign(static_cast<std::size_t>(k), 0.0);
        b_rates.assign(static_cast<std::size_t>(max_block_atoms), 0.0);
        b_ppos = b_pneg = b_rates;
        b_pv.assign(static_cast<std::size_t>(k), 0.0);
        b_values = b_pv;
        b_grad.assign(static_cast<std::size_t>(n_features), 0.0);
    }
};

// Runs the pass; returns the status (done when every output is finite).
inline LoopStatus game_pass(const std::vector<const LoopBlock*>& blocks, const double* theta, double bias,
                            GameCombinations& gc, std::int64_t n_atoms, double margin,
                            const std::int64_t* const* block_rows, std::int64_t n_batch, int n_threads,
                            PassBuffers& pb, std::int64_t& n_bad) {
    const std::int64_t k = gc.k;
    const std::int64_t d = static_cast<std::int64_t>(pb.grad.size());
    std::fill(pb.rates.begin(), pb.rates.end(), 0.0);
    std::fill(pb.ppos.begin(), pb.ppos.end(), 0.0);
    std::fill(pb.pneg.begin(), pb.pneg.end(), 0.0);
    std::fill(pb.grad.begin(), pb.grad.end(), 0.0);
    std::fill(pb.pv.begin(), pb.pv.end(), 0.0);
    pb.grad_bias = 0.0;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const LoopBlock& blk = *blocks[b];
        const std::int64_t nb = blk.atoms().n_atoms;
        const std::int64_t* ids = blk.atom_ids();
        gc.block_coef.resize(static_cast<std::size_t>(k * nb));
        for (std::int64_t c = 0; c < k; ++c)
            for (std::int64_t a = 0; a < nb; ++a) gc.block_coef[c * nb + a] = gc.coef[c * n_atoms + ids[a]];
        Combinations cb{k, gc.block_coef.data(), gc.kinds.data(), gc.grad_weights.data(), false,
                        gc.slope_only.data()};
        RateKernelOutput out{pb.b_rates.data(), pb.b_ppos.data(), pb.b_pneg.data(), pb.b_pv.data(),
                             pb.b_values.data(), pb.b_grad.data(), &pb.b_grad_bias};
        const std::int64_t* rows = block_rows ? block_rows[b] : nullptr;
        blk.pass(theta, bias, cb, margin, rows, rows ? n_batch : 0, n_threads, out);
        if (out.n_nonfinite_scores) {
            n_bad = out.n_nonfinite_scores;
            return LoopStatus::nonfinite_scores;
        }
        if (!(all_finite(pb.b_pv.data(), k) && all_finite(pb.b_values.data(), k) && std::isfinite(pb.b_grad_bias) &&
              all_finite(pb.b_grad.data(), d) && all_finite(pb.b_ppos.data(), nb) && all_finite(pb.b_pneg.data(), nb)))
            return LoopStatus::nonfinite_outputs;
        for (std::int64_t a = 0; a < nb; ++a) {
            pb.rates[ids[a]] = pb.b_rates[a];
            pb.ppos[ids[a]] = pb.b_ppos[a];
            pb.pneg[ids[a]] = pb.b_pneg[a];
        }
        for (std::int64_t j = 0; j < d; ++j) pb.grad[j] += pb.b_grad[j];
        pb.grad_bias += pb.b_grad_bias;
        for (std::int64_t c = 0; c < k; ++c) pb.pv[c] += pb.b_pv[c];
    }
    return LoopStatus::done;
}

// The model player's step (rateopt._players.ModelPlayer.step), operation for operation.
inline void model_step(const ModelStepSettings& s, std::int64_t d, const double* grad, double grad_bias,
                       LoopState& st, std::vector<double>& g, std::vector<double>& delta) {
    for (std::int64_t i = 0; i < d; ++i) g[i] = grad[i] + s.l2 * st.theta[i];
    g[d] = s.fit_intercept ? grad_bias : 0.0;
    const std::int64_t n = d + 1;
    const std::int64_t t = ++*st.opt_t;
    const double lr = s.learning_rate;
    switch (s.optimizer) {
        case LoopOptimizer::sgd:
            for (std::int64_t i = 0; i < n; ++i) delta[i] = lr * g[i];
            break;
        case LoopOptimizer::adagrad:
            for (std::int64_t i = 0; i < n; ++i) {
                st.opt_v[i] += g[i] * g[i];
                delta[i] = lr * g[i] / (std::sqrt(st.opt_v[i]) + 1e-10);
            }
            break;
        case LoopOptimizer::adam:
        default: {
            const double b1 = 0.9, b2 = 0.999;
            const double c1 = 1.0 - std::pow(b1, static_cast<double>(t));
            const double c2 = 1.0 - std::pow(b2, static_cast<double>(t));
            for (std::int64_t i = 0; i < n; ++i) {
                st.opt_m[i] = b1 * st.opt_m[i] + (1.0 - b1) * g[i];
                st.opt_v[i] = b2 * st.opt_v[i] + (1.0 - b2) * g[i] * g[i];
                const double m_hat = st.opt_m[i] / c1;
                const double v_hat = st.opt_v[i] / c2;
                delta[i] = lr * m_hat / (std::sqrt(v_hat) + 1e-8);
            }
        }
    }
    for (std::int64_t i = 0; i < d; ++i) st.theta[i] -= delta[i];
    *st.bias -= delta[d];
    if (s.has_radius) {
        double sq = 0.0;
        for (std::int64_t i = 0; i < d; ++i) sq += st.theta[i] * st.theta[i];
        const double norm = std::sqrt(sq);
        if (norm > s.radius) {
            const double f = s.radius / norm;
            for (std::int64_t i = 0; i < d; ++i) st.theta[i] *= f;
        }
    }
}

// The multiplier player's step on the constraint values g (m,): the swap-regret
// update (SwapRegretPlayer.update) or projected ascent (LagrangePlayer.update).
inline LoopStatus multiplier_step(const LoopGameSpec& spec, const MultiplierSettings& s, const double* g,
                                  LoopState& st, std::vector<double>& work) {
    const std::int64_t m = spec.n_constraints;
    if (m == 0 || spec.game == LoopGame::unconstrained) return LoopStatus::done;
    if (spec.game == LoopGame::proxy_swap) {
        const std::int64_t k = m + 1;
        double* delta = work.data();  // (k,), then M = exp(log M) (k * k)
        delta[0] = 0.0;
        for (std::int64_t i = 0; i < m; ++i) delta[i + 1] = g[i];
        if (s.multiplicative) {
            swap_update_multiplicative(st.matrix, delta, st.lam, k, s.eta, s.log_floor);
            double* M = work.data() + k;
            for (std::int64_t q = 0; q < k * k; ++q) M[q] = std::exp(st.matrix[q]);
            stationary_distribution(M, k, st.lam, 1e-12, 100);
        } else {
            swap_update_additive(st.matrix, delta, st.lam, k, s.eta);
            stationary_distribution(st.matrix, k, st.lam, 1e-12, 100);
        }
        return LoopStatus::done;
    }
    // core.external_update_additive refuses a step leaving the float64 range.
    for (std::int64_t i = 0; i < m; ++i)
        if (!std::isfinite(st.lam[i] + s.eta * g[i])) return LoopStatus::multiplier_overflow;
    external_update_additive(st.lam, g, m, s.eta, false, s.lambda_radius);
    return LoopStatus::done;
}

// (lam0, lam) the model player weighs the objective and constraints with.
inline double model_weights(const LoopGameSpec& spec, const LoopState& st, const double*& lam) {
    switch (spec.game) {
        case LoopGame::proxy_swap:
            lam = st.lam + 1;
            return st.lam[0];
        case LoopGame::unconstrained:
            lam = nullptr;
            return 1.0;
        default:
            lam = st.lam;
            return 1.0;
    }
}

}  // namespace detail

// Runs iterations [schedule.t_begin, schedule.t_end) of the game (see the header comment).
inline LoopOutcome run_train_loop(const std::vector<const LoopBlock*>& blocks,
                                  const std::vector<const LoopBlock*>& val_blocks, const LoopGameSpec& spec,
                                  const ModelStepSettings& model, const MultiplierSettings& mult, LoopState& st,
                                  const LoopSchedule& sch, LoopRecords& rec, const LoopCallback& callback) {
    const std::int64_t A = spec.n_atoms, d = spec.n_features, m = spec.n_constraints;
    detail::GameCombinations gc;
    gc.init(spec);
    std::int64_t max_atoms = 1;
    for (const auto* b : blocks) max_atoms = std::max(max_atoms, b->atoms().n_atoms);
    detail::PassBuffers pb;
    pb.init(A, d, gc.k, max_atoms);

    // Full-data rates of a recorded iterate: the zero combination (_Recorder._rates).
    detail::GameCombinations zero;
    zero.k = 1;
    zero.coef.assign(static_cast<std::size_t>(std::max<std::int64_t>(A, rec.n_val_atoms)), 0.0);
    zero.kinds.assign(1, static_cast<std::int32_t>(ProxyKind::hinge));
    zero.grad_weights.assign(1, 1.0);
    std::int64_t max_val_atoms = 1;
    for (const auto* b : val_blocks) max_val_atoms = std::max(max_val_atoms, b->atoms().n_atoms);
    detail::PassBuffers rec_pb, val_pb;
    if (sch.rows) rec_pb.init(A, d, 1, max_atoms);
    if (!val_blocks.empty()) val_pb.init(rec.n_val_atoms, d, 1, max_val_atoms);

    std::vector<double> g(static_cast<std::size_t>(d + 1)), delta(static_cast<std::size_t>(d + 1));
    std::vector<double> cvals(static_cast<std::size_t>(m));
    std::vector<double> work(static_cast<std::size_t>((m + 1) + (m + 1) * (m + 1)));
    std::vector<const std::int64_t*> block_rows(blocks.size(), nullptr);
    std::vector<std::vector<std::int64_t>> sorted_rows(sch.sort_rows ? blocks.size() : 0);
    std::vector<std::int64_t> sort_tmp;
    std::int64_t n_sampled = 0;
    if (sch.rows)
        for (std::size_t b = 0; b < blocks.size(); ++b) n_sampled += sch.sampled[b] ? 1 : 0;

    LoopOutcome outcome;
    for (std::int64_t t = sch.t_begin; t < sch.t_end; ++t) {
        outcome.t = t;
        const double* lam = nullptr;
        const double lam0 = detail::model_weights(spec, st, lam);
        gc.set_weights(spec, lam0, lam);
        if (sch.rows) {
            const std::int64_t* base = sch.rows + (t - sch.t_begin) * n_sampled * sch.batch;
            std::int64_t s = 0;
            for (std::size_t b = 0; b < blocks.size(); ++b) {
                block_rows[b] = sch.sampled[b] ? base + (s++) * sch.batch : nullptr;
                if (block_rows[b] && sch.sort_rows) {
                    sort_row_ids(block_rows[b], sch.batch, blocks[b]->n_rows(), sorted_rows[b], sort_tmp);
                    block_rows[b] = sorted_rows[b].data();
                }
            }
        }
        LoopStatus status = detail::game_pass(blocks, st.theta, *st.bias, gc, A, spec.margin,
                                              sch.rows ? block_rows.data() : nullptr, sch.batch, sch.n_threads, pb,
                                              outcome.detail);
        if (status != LoopStatus::done) {
            outcome.status = status;
            return outcome;
        }
        const bool record = is_record_iteration(sch, t);
        if (record) {
            const double* rates = pb.rates.data();
            if (sch.rows) {
                status = detail::game_pass(blocks, st.theta, *st.bias, zero, A, spec.margin, nullptr, 0,
                                           sch.n_threads, rec_pb, outcome.detail);
                rates = rec_pb.rates.data();
            }
            if (status == LoopStatus::done && !val_blocks.empty())
                status = detail::game_pass(val_blocks, st.theta, *st.bias, zero, rec.n_val_atoms, spec.margin,
                                           nullptr, 0, sch.n_threads, val_pb, outcome.detail);
            if (status != LoopStatus::done) {
                outcome.status = status;
                return outcome;
            }
            if (rec.count >= rec.capacity) throw std::logic_error("run_train_loop: the record buffers are full");
            const std::int64_t r = rec.count++;
            std::copy(st.theta, st.theta + d, rec.weights + r * d);
            rec.biases[r] = *st.bias;
            rec.iterations[r] = t;
            double* mu = rec.multipliers + r * (m + 1);
            if (spec.game == LoopGame::proxy_swap) {
                std::copy(st.lam, st.lam + m + 1, mu);
            } else {
                mu[0] = 1.0;
                for (std::int64_t i = 0; i < m; ++i) mu[i + 1] = spec.game == LoopGame::unconstrained ? 0.0 : st.lam[i];
            }
            std::copy(rates, rates + A, rec.rates + r * A);
            if (!val_blocks.empty())
                std::copy(val_pb.rates.begin(), val_pb.rates.end(), rec.val_rates + r * rec.n_val_atoms);
        }
        const bool progress = sch.progress_every > 0 && (t + 1) % sch.progress_every == 0;
        if (callback && (record || progress) && callback(t, rec.count)) {
            outcome.status = LoopStatus::stopped;
            return outcome;
        }
        detail::model_step(model, d, pb.grad.data(), pb.grad_bias, st, g, delta);
        if (m && spec.game != LoopGame::unconstrained) {
            if (spec.game == LoopGame::lagrangian_hinge) {
                const double* pv = pb.pv.data() + (gc.k - m);
                for (std::int64_t i = 0; i < m; ++i) cvals[i] = pv[i] - spec.kappa[i];
            } else {
                // g = C rates - kappa
                for (std::int64_t i = 0; i < m; ++i) {
                    double s = 0.0;
                    for (std::int64_t a = 0; a < A; ++a) s += spec.C[i * A + a] * pb.rates[a];
                    cvals[i] = s - spec.kappa[i];
                }
            }
            status = detail::multiplier_step(spec, mult, cvals.data(), st, work);
            if (status != LoopStatus::done) {
                outcome.status = status;
                return outcome;
            }
        }
    }
    outcome.t = sch.t_end;
    return outcome;
}

}  // namespace rateopt
