// Design
// ------
// Layer: core (no Python types). The fused rate kernel: one pass over the rows
// of X computes everything one iteration of a rate-constrained game needs at the
// current (theta, bias):
//   * every atom's 0-1 positive rate       p+(S_a)  = sum_j v_ja 1[s_j >= 0]
//   * every atom's hinge proxy rates       sum_j v_ja max(0, margin +/- s_j)
//   * for each of k combinations coef_c (rows of a k x n_atoms matrix), the
//     proxy value of sum_a coef_c,a p+(S_a) under the net per-example rule
//     (DESIGN.md §1): u_cj = sum_a coef_c,a v_ja, and the row's term
//     u_cj 1[s_j >= 0] is replaced by the combination's proxy (proxy.hpp:
//     hinge, logistic or ramp, chosen per combination);
//   * either the weighted sum of the combinations' subgradients with respect to
//     theta and the bias (one axpy per row), or each combination's own
//     subgradient (k axpys per row), as the caller asks.
// A game whose players need several combinations at the same model (the
// Lagrangian's per-constraint hinge values next to the model's gradient, the
// three-player game's per-metric proxies) gets them all from this one pass.
// Cost: O(nnz(X) + k nnz(atoms)) per call, plus k axpys per row only when
// separate gradients are asked for. Each row's data is read once: the gradient
// axpy touches the row right after its dot product, while it is still in
// cache, and is skipped when every proxy is flat there.
//
// Parallelism: rows are split into contiguous static chunks, one per requested
// thread (parallel_chunks); each chunk accumulates into private buffers which
// are then reduced in chunk order, so a fixed requested thread count gives
// bit-identical results whatever team OpenMP provides.
//
// Minibatches: with `rows` given, only those rows are visited (repeats allowed)
// and every sum is scaled by n_rows / n_batch. The normalized weights already
// carry the full-data atom sizes, so the scaled sums are unbiased estimates.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "matrix_view.hpp"
#include "parallel.hpp"
#include "proxy.hpp"

namespace rateopt {

// The k linear combinations of atom rates whose proxies one pass evaluates.
struct Combinations {
    std::int64_t k = 1;
    const double* coef = nullptr;          // in: (k, n_atoms), row-major
    const std::int32_t* kinds = nullptr;   // in: (k,) ProxyKind values
    const double* grad_weights = nullptr;  // in: (k,) weights of the summed gradient
    bool separate_gradients = false;       // k gradients instead of their weighted sum
    // (k,) or null. 1: the caller needs the combination's gradient but not its
    // proxy value (left 0): the core loop's logistic objective, whose value no
    // player reads, skips the log1p per row. Slopes are the same bits.
    const std::uint8_t* slope_only = nullptr;
};

struct RateKernelOutput {
    double* rates;            // out: (n_atoms,)
    double* proxy_pos_rates;  // out: (n_atoms,)
    double* proxy_neg_rates;  // out: (n_atoms,)
    double* proxy_values;     // out: (k,)
    double* values;           // out: (k,) the exact sum_a coef_c,a rates[a]
    double* grad;             // out: (n_grads, n_features), n_grads = k if separate else 1
    double* grad_bias;        // out: (n_grads,)
    // Rows whose score x.theta + bias is not finite (overflow, or inf - inf):
    // their 0-1 and proxy terms are meaningless, so the caller must treat any
    // nonzero count as an error rather than read the other outputs.
    std::int64_t n_nonfinite_scores = 0;
};

namespace detail {

// One chunk's private accumulators (aligned so that two chunks' scalars never
// share a cache line).
struct alignas(64) KernelScratch {
    std::vector<double> rates, ppos, pneg, grad, proxy, grad_bias, u;
    std::int64_t nonfinite = 0;
    void init(std::int64_t n_atoms, std::int64_t n_features, std::int64_t k, std::int64_t n_grads) {
        rates.assign(static_cast<std::size_t>(n_atoms), 0.0);
        ppos.assign(static_cast<std::size_t>(n_atoms), 0.0);
        pneg.assign(static_cast<std::size_t>(n_atoms), 0.0);
        grad.assign(static_cast<std::size_t>(n_grads * n_features), 0.0);
        proxy.assign(static_cast<std::size_t>(k), 0.0);
        grad_bias.assign(static_cast<std::size_t>(n_grads), 0.0);
        u.assign(static_cast<std::size_t>(k), 0.0);
    }
};

// The row operations both kernels share (this one and offset_kernel.hpp), so
// that the two keep the same arithmetic term for term. All inline: after
// inlining the code is that of the loops written out by hand.

// s = x_j . theta + bias; false if it is not finite (the row's terms are then
// skipped and the row counted).
template <class Matrix>
inline bool row_score(const Matrix& X, std::int64_t j, const double* theta, double bias, double& s) {
    s = X.dot(j, theta) + bias;
    return std::isfinite(s);
}

// Branch-free selections, bit for bit the ternaries they replace. The score's
// sign and the hinge regimes change unpredictably from row to row, and GCC
// compiles `c ? x : 0.0` and std::max(0.0, x) on doubles into conditional
// jumps (it keeps their signed-zero and NaN semantics). With SSE2 (the x86-64
// base ISA) each is one max/min or compare-and-mask instruction with the same
// IEEE result: maxsd(x, 0) = x > 0 ? x : +0 = std::max(0.0, x),
// minsd(x, 0) = x < 0 ? x : +0, and a compare mask ANDed with x gives x or +0.
// On the Adult pass (issue 35) the single-combination path was no faster for
// them alone (within noise); the logistic + hinge path below needs them to be
// branch-free.
#if defined(ROPT_CSR_SSE2)
inline double pos_part(double x) { return _mm_cvtsd_f64(_mm_max_sd(_mm_set_sd(x), _mm_setzero_pd())); }
inline double neg_part(double x) { return _mm_cvtsd_f64(_mm_min_sd(_mm_set_sd(x), _mm_setzero_pd())); }
// x if c > 0 else +0.
inline double if_positive(double c, double x) {
    return _mm_cvtsd_f64(_mm_and_pd(_mm_cmpgt_sd(_mm_set_sd(c), _mm_setzero_pd()), _mm_set_sd(x)));
}
// 1 if s >= 0 else +0.
inline double step(double s) {
    return _mm_cvtsd_f64(_mm_and_pd(_mm_cmpge_sd(_mm_set_sd(s), _mm_setzero_pd()), _mm_set_sd(1.0)));
}
#else
inline double pos_part(double x) { return std::max(0.0, x); }
inline double neg_part(double x) { return x < 0.0 ? x : 0.0; }
inline double if_positive(double c, double x) { return c > 0.0 ? x : 0.0; }
inline double step(double s) { return s >= 0.0 ? 1.0 : 0.0; }
#endif

// A row's hinge terms at score s: the 0-1 step and the two hinges, computed
// once per row (every atom entry of the row reads them).
struct RowHinges {
    double step, pos, neg;  // 1[s >= 0], max(0, margin + s), max(0, margin - s)
    RowHinges(double s, double margin) : step(detail::step(s)), pos(pos_part(margin + s)), neg(pos_part(margin - s)) {}
};

// Atom a's 0-1 and hinge-rate terms of a row with weight v in a.
inline void add_atom_rates(KernelScratch& acc, std::int32_t a, double v, const RowHinges& h) {
    acc.rates[a] += v * h.step;
    acc.ppos[a] += v * h.pos;
    acc.pneg[a] += v * h.neg;
}

// The proxy terms of the k combinations whose net coefficients at row j (for
// the offset kernel: at one offset group of it) are u[0..k), at score s:
// each value goes to acc.proxy[c]; each nonzero slope either becomes
// gradient c (axpy of row j, grad_bias[c]) when separate gradients are asked
// for, or is weighted by grad_weights[c] and added to the row's d, in order.
// on_slope(c, g) is told each slope g so added (weighted when summed).
template <class Matrix, class OnSlope>
inline void add_combination_terms(const Matrix& X, std::int64_t j, const double* u, double s, double margin,
                                  const Combinations& cb, KernelScratch& acc, double& d, OnSlope&& on_slope) {
    for (std::int64_t c = 0; c < cb.k; ++c) {
        if (u[c] == 0.0) continue;
        double slope;
        if (cb.slope_only && cb.slope_only[c]) {
            slope = proxy_slope(static_cast<ProxyKind>(cb.kinds[c]), u[c], s, margin);
        } else {
            const ProxyTerm t = proxy_term(static_cast<ProxyKind>(cb.kinds[c]), u[c], s, margin);
            acc.proxy[c] += t.value;
            slope = t.slope;
        }
        if (slope == 0.0) continue;
        if (cb.separate_gradients) {
            X.axpy(j, slope, acc.grad.data() + c * X.n_cols);
            acc.grad_bias[c] += slope;
            on_slope(c, slope);
        } else {
            const double w = cb.grad_weights[c] * slope;
            d += w;
            on_slope(c, w);
        }
    }
}

// The summed gradient's term of row j: d x_j and d, skipped when d = 0 (every
// proxy flat there).
template <class Matrix>
inline void add_row_gradient(const Matrix& X, std::int64_t j, double d, KernelScratch& acc) {
    if (d != 0.0) {
        X.axpy(j, d, acc.grad.data());
        acc.grad_bias[0] += d;
    }
}

// The chunks' accumulators summed in chunk order into `out` (deterministic for
// a fixed requested thread count), scaled by `scale` (minibatches), and the
// exact values sum_a coef_c,a rates[a]. base(part) gives a part's KernelScratch.
template <class Part, class Base>
inline void reduce_outputs(const std::vector<Part>& parts, Base base, std::int64_t n_atoms, std::int64_t n_features,
                           const Combinations& cb, double scale, RateKernelOutput& out) {
    const std::int64_t k = cb.k;
    const std::int64_t n_grads = cb.separate_gradients ? k : 1;
    std::fill(out.rates, out.rates + n_atoms, 0.0);
    std::fill(out.proxy_pos_rates, out.proxy_pos_rates + n_atoms, 0.0);
    std::fill(out.proxy_neg_rates, out.proxy_neg_rates + n_atoms, 0.0);
    std::fill(out.proxy_values, out.proxy_values + k, 0.0);
    std::fill(out.grad, out.grad + n_grads * n_features, 0.0);
    std::fill(out.grad_bias, out.grad_bias + n_grads, 0.0);
    out.n_nonfinite_scores = 0;
    for (const Part& part : parts) {
        const KernelScratch& acc = base(part);
        out.n_nonfinite_scores += acc.nonfinite;
        for (std::int64_t a = 0; a < n_atoms; ++a) {
            out.rates[a] += acc.rates[a];
            out.proxy_pos_rates[a] += acc.ppos[a];
            out.proxy_neg_rates[a] += acc.pneg[a];
        }
        for (std::int64_t q = 0; q < n_grads * n_features; ++q) out.grad[q] += acc.grad[q];
        for (std::int64_t c = 0; c < k; ++c) out.proxy_values[c] += acc.proxy[c];
        for (std::int64_t g = 0; g < n_grads; ++g) out.grad_bias[g] += acc.grad_bias[g];
    }
    if (scale != 1.0) {
        for (std::int64_t a = 0; a < n_atoms; ++a) {
            out.rates[a] *= scale;
            out.proxy_pos_rates[a] *= scale;
            out.proxy_neg_rates[a] *= scale;
        }
        for (std::int64_t q = 0; q < n_grads * n_features; ++q) out.grad[q] *= scale;
        for (std::int64_t c = 0; c < k; ++c) out.proxy_values[c] *= scale;
        for (std::int64_t g = 0; g < n_grads; ++g) out.grad_bias[g] *= scale;
    }
    for (std::int64_t c = 0; c < k; ++c) {
        double value = 0.0;
        for (std::int64_t a = 0; a < n_atoms; ++a) value += cb.coef[c * n_atoms + a] * out.rates[a];
        out.values[c] = value;
    }
}

// The scale of a pass's sums: n_rows / n_batch for a minibatch, else 1.
inline double pass_scale(const std::int64_t* rows, std::int64_t n_batch, std::int64_t n_rows) {
    return rows ? (n_batch > 0 ? static_cast<double>(n_rows) / n_batch : 0.0) : 1.0;
}

// The common case, one hinge combination with its gradient (every game's model
// step): the net coefficient, the proxy value and the bias gradient stay in
// registers. The same arithmetic as the general path below, term for term.
template <class Matrix>
inline int process_row_single(const Matrix& X, std::int64_t j, const double* theta, double bias,
                              const AtomView& atoms, const double* coef, double weight, double margin,
                              KernelScratch& acc, double& proxy_value, double& grad_bias) {
    double s;
    if (!row_score(X, j, theta, bias, s)) return 1;
    const RowHinges h(s, margin);
    double u = 0.0;
    atoms.for_each_entry(j, [&](std::int32_t a, double v) {
        add_atom_rates(acc, a, v, h);
        u += coef[a] * v;
    });
    // Branch-free, term for term the branches
    //   u > 0: value += u hinge_pos, d = weight u if margin + s > 0;
    //   u < 0: value += -u hinge_neg + u, d = weight u if margin - s > 0;
    //   u = 0: nothing.
    // With up = max(u, 0) and un = min(u, 0) (one of them +0): up hp - un hn + un
    // is u hp + 0 - 0, or +0 - u hn + u = -u hn + u (negation is exact), or +0,
    // and the sum never holds -0, so adding +0 leaves it unchanged.
    const double up = pos_part(u), un = neg_part(u);
    proxy_value += up * h.pos - un * h.neg + un;
    const double d = weight * (if_positive(margin + s, up) + if_positive(margin - s, un));
    if (d != 0.0) {
        X.axpy(j, d, acc.grad.data());
        grad_bias += d;  // register-resident here, not acc.grad_bias[0]
    }
    return 0;
}

// c ? a : b without a branch, bit for bit the ternary (one compare mask).
inline double select(bool c, double a, double b) {
#if defined(ROPT_CSR_SSE2)
    const __m128d m = _mm_castsi128_pd(_mm_set1_epi64x(-static_cast<long long>(c)));
    return _mm_cvtsd_f64(_mm_or_pd(_mm_and_pd(m, _mm_set_sd(a)), _mm_andnot_pd(m, _mm_set_sd(b))));
#else
    return c ? a : b;
#endif
}

// Rows per block of process_block_logistic_hinge (its per-row arrays live on the stack).
constexpr int kLogisticBlockRows = 64;

// The core loop's default pair (train_loop.hpp, a logistic objective): combination 0
// a logistic proxy whose value no player reads (slope only), combination 1 the
// constraints' hinge, their gradients summed. Both net coefficients, the hinge's
// value and the bias gradient stay in registers, and the row logic has no
// data-dependent branch. The same arithmetic as the general path, term for term:
// there a combination with u_c = 0 or a zero slope adds nothing; here it adds an
// exact +0 or -0 to d and +0 to the hinge's value, and neither sum ever holds -0
// (they start at +0, and an exact zero sum of nonzero terms is +0), so the sums
// are the same bits.
// It runs over a block of nb <= kLogisticBlockRows visits (visit r is row rows[r],
// or row r without rows) in three phases: the scores, then exp(-|s|) and the
// sigmoids, then the rows' atoms, proxies and gradient axpys in visit order. Each
// accumulator sees the same terms in the same order as a row-by-row pass, so
// the sums are the same bits; what the phases save is the exp call's spills of
// the row state and the wait of each row's sigmoid on its own score (issue 35:
// about 1.15x on the Adult pass).
template <class Matrix>
inline std::int64_t process_block_logistic_hinge(const Matrix& X, const std::int64_t* rows, std::int64_t r0, int nb,
                                                 const double* theta, double bias, const AtomView& atoms,
                                                 const double* coef0, const double* coef1, double w0, double w1,
                                                 double margin, KernelScratch& acc, double& proxy1,
                                                 double& grad_bias) {
    constexpr double inv_ln2 = 1.4426950408889634;  // proxy.hpp's
    std::int64_t row[kLogisticBlockRows];
    double score[kLogisticBlockRows], big[kLogisticBlockRows], small[kLogisticBlockRows];
    for (int q = 0; q < nb; ++q) row[q] = rows ? rows[r0 + q] : r0 + q;
    for (int q = 0; q < nb; ++q) score[q] = X.dot(row[q], theta) + bias;  // row_score's s
    // proxy_slope(logistic, ...)'s e = exp(-|s|), big = sigmoid(|s|), small = sigmoid(-|s|)
    // (a non-finite score gives NaN or 0 here, never read: its row is skipped below)
    for (int q = 0; q < nb; ++q) small[q] = std::exp(-std::fabs(score[q]));
    for (int q = 0; q < nb; ++q) {
        big[q] = 1.0 / (1.0 + small[q]);
        small[q] *= big[q];
    }
    std::int64_t nonfinite = 0;
    for (int q = 0; q < nb; ++q) {
        const double s = score[q];
        if (!std::isfinite(s)) {  // row_score's test: the row's terms are skipped
            ++nonfinite;
            continue;
        }
        const std::int64_t j = row[q];
        const RowHinges h(s, margin);
        double u0 = 0.0, u1 = 0.0;
        atoms.for_each_entry(j, [&](std::int32_t a, double v) {
            add_atom_rates(acc, a, v, h);
            u0 += coef0[a] * v;
            u1 += coef1[a] * v;
        });
        // proxy_slope(logistic, u0, s): u0 (s >= 0 ? big : small) / ln 2 for u0 > 0,
        // u0 (s >= 0 ? small : big) / ln 2 otherwise.
        const double f = select((u0 > 0.0) == (s >= 0.0), big[q], small[q]);
        double d = 0.0;
        d += w0 * (u0 * f * inv_ln2);
        // proxy_term(hinge, u1, s): as process_row_single.
        const double up = pos_part(u1), un = neg_part(u1);
        proxy1 += up * h.pos - un * h.neg + un;
        d += w1 * (if_positive(margin + s, up) + if_positive(margin - s, un));
        if (d != 0.0) {
            X.axpy(j, d, acc.grad.data());
            grad_bias += d;
        }
    }
    return nonfinite;
}

// coef_t is the combinations' coefficients atom-major, (n_atoms, k), so that a
// row's net coefficients u_c accumulate from contiguous memory.
// Returns 1 if the row's score is not finite (its terms are then skipped), else 0.
template <bool AllHinge, class Matrix>
inline int process_row(const Matrix& X, std::int64_t j, const double* theta, double bias,
                       const AtomView& atoms, const double* coef_t, const Combinations& cb,
                       double margin, KernelScratch& acc) {
    double s;
    if (!row_score(X, j, theta, bias, s)) return 1;
    const std::int64_t k = cb.k;
    double* u = acc.u.data();
    std::fill(u, u + k, 0.0);
    const RowHinges h(s, margin);
    atoms.for_each_entry(j, [&](std::int32_t a, double v) {
        add_atom_rates(acc, a, v, h);
        const double* ca = coef_t + static_cast<std::int64_t>(a) * k;
        for (std::int64_t c = 0; c < k; ++c) u[c] += ca[c] * v;
    });
    double d = 0.0;
    if (AllHinge && !cb.separate_gradients) {
        // Branch-free (the signs of u_c and the hinge regimes are unpredictable
        // row to row), so the loop over combinations vectorizes; for u_c = 0
        // every term is an exact zero, as in the general path.
        const double hinge_pos = h.pos;
        const double hinge_neg = h.neg;
        const double on_pos = margin + s > 0.0 ? 1.0 : 0.0;
        const double on_neg = margin - s > 0.0 ? 1.0 : 0.0;
        double* proxy = acc.proxy.data();
        for (std::int64_t c = 0; c < k; ++c) {
            const double up = u[c] > 0.0 ? u[c] : 0.0;
            const double un = u[c] < 0.0 ? u[c] : 0.0;
            proxy[c] += up * hinge_pos - un * hinge_neg + un;
            d += cb.grad_weights[c] * (up * on_pos + un * on_neg);
        }
    } else {
        add_combination_terms(X, j, u, s, margin, cb, acc, d, [](std::int64_t, double) {});
    }
    add_row_gradient(X, j, d, acc);
    return 0;
}

}  // namespace detail

// Runs the fused kernel. `rows` may be null (all rows) or hold n_batch row ids.
// Inputs are assumed validated (shapes, finiteness, index ranges, proxy kinds):
// the binding layer checks them once.
template <class Matrix>
void rate_kernel(const Matrix& X,
                 const double* theta,       // in: (n_features,)
                 double bias,
                 const AtomView& atoms,
                 const Combinations& cb,
                 double margin,
                 const std::int64_t* rows,  // in: (n_batch,) or null
                 std::int64_t n_batch,
                 int n_threads,
                 RateKernelOutput& out) {
    const std::int64_t n_visit = rows ? n_batch : X.n_rows;
    const std::int64_t n_atoms = atoms.n_atoms;
    const std::int64_t n_features = X.n_cols;
    const std::int64_t k = cb.k;
    const std::int64_t n_grads = cb.separate_gradients ? k : 1;
    // Below ~2k rows per thread the private buffers cost more than they save.
    const int threads = effective_threads(n_threads, n_visit, 2048);

    std::vector<double> coef_t(static_cast<std::size_t>(n_atoms * k));
    for (std::int64_t c = 0; c < k; ++c)
        for (std::int64_t a = 0; a < n_atoms; ++a) coef_t[a * k + c] = cb.coef[c * n_atoms + a];

    bool all_hinge = true;
    for (std::int64_t c = 0; c < k; ++c) all_hinge &= cb.kinds[c] == static_cast<std::int32_t>(ProxyKind::hinge);
    const bool single = all_hinge && k == 1;  // separate or summed: the same for one combination
    const bool logistic_hinge = k == 2 && !cb.separate_gradients && cb.slope_only && cb.slope_only[0] &&
                                !cb.slope_only[1] && cb.kinds[0] == static_cast<std::int32_t>(ProxyKind::logistic) &&
                                cb.kinds[1] == static_cast<std::int32_t>(ProxyKind::hinge);

    std::vector<detail::KernelScratch> scratch(static_cast<std::size_t>(threads));
    parallel_chunks(threads, [&](int t) {
        detail::KernelScratch& acc = scratch[static_cast<std::size_t>(t)];
        acc.init(n_atoms, n_features, k, n_grads);
        std::int64_t begin, end;
        chunk_range(n_visit, threads, t, begin, end);
        if (single) {
            double proxy_value = 0.0, grad_bias = 0.0;  // register-resident
            std::int64_t nonfinite = 0;
            const double w0 = cb.separate_gradients ? 1.0 : cb.grad_weights[0];
            if (rows) {
                for (std::int64_t r = begin; r < end; ++r)
                    nonfinite += detail::process_row_single(X, rows[r], theta, bias, atoms, cb.coef, w0, margin, acc,
                                                            proxy_value, grad_bias);
            } else {
                for (std::int64_t j = begin; j < end; ++j)
                    nonfinite += detail::process_row_single(X, j, theta, bias, atoms, cb.coef, w0, margin, acc,
                                                            proxy_value, grad_bias);
            }
            acc.proxy[0] = proxy_value;
            acc.grad_bias[0] = grad_bias;
            acc.nonfinite = nonfinite;
            return;
        }
        if (logistic_hinge) {
            double proxy1 = 0.0, grad_bias = 0.0;  // register-resident
            std::int64_t nonfinite = 0;
            const double* c0 = cb.coef;
            const double* c1 = cb.coef + n_atoms;
            const double w0 = cb.grad_weights[0], w1 = cb.grad_weights[1];
            for (std::int64_t r = begin; r < end; r += detail::kLogisticBlockRows) {
                const int nb = static_cast<int>(std::min<std::int64_t>(detail::kLogisticBlockRows, end - r));
                nonfinite += detail::process_block_logistic_hinge(X, rows, r, nb, theta, bias, atoms, c0, c1, w0, w1,
                                                                  margin, acc, proxy1, grad_bias);
            }
            acc.proxy[1] = proxy1;
            acc.grad_bias[0] = grad_bias;
            acc.nonfinite = nonfinite;
            return;
        }
        auto visit = [&](auto all_hinge) {
            constexpr bool H = decltype(all_hinge)::value;
            std::int64_t nonfinite = 0;
            if (rows) {
                for (std::int64_t r = begin; r < end; ++r)
                    nonfinite += detail::process_row<H>(X, rows[r], theta, bias, atoms, coef_t.data(), cb, margin,
                                                        acc);
            } else {
                for (std::int64_t j = begin; j < end; ++j)
                    nonfinite += detail::process_row<H>(X, j, theta, bias, atoms, coef_t.data(), cb, margin, acc);
            }
            acc.nonfinite = nonfinite;
        };
        if (all_hinge)
            visit(std::true_type{});
        else
            visit(std::false_type{});
    });

    detail::reduce_outputs(scratch, [](const detail::KernelScratch& acc) -> const detail::KernelScratch& { return acc; },
                           n_atoms, n_features, cb, detail::pass_scale(rows, n_batch, X.n_rows), out);
}

}  // namespace rateopt
