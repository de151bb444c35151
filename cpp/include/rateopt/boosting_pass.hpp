// Design
// ------
// Layer: core (no Python types). The boosting pass: what one iteration of the
// rate-constrained game inside boosting needs from the current ensemble's
// training scores s (one per row, float32 or float64), in one sweep over the
// rows and the atom table (the same CSR row -> atom weights v_ja the linear
// kernel reads, matrix_view.hpp AtomView):
//   * every atom's 0-1 positive rate       rates[a] = sum_j v_ja 1[s_j >= 0]
//   * each row's net coefficient of the combination coef (one per atom),
//       u_j = sum_a coef_a v_ja,
//     and the gradient and Hessian with respect to s_j of the row's proxy term
//     scale * u_j psi(s_j), written to grad[j] and hess[j] (float32 or float64:
//     the backends' custom objectives take float32, so the caller passes
//     arrays they consume without a copy).
// The proxies bound c 1[s >= 0] from above, up to a factor c the same for
// every row, so the game's balance does not change (u > 0; for u < 0 the net
// rule u 1[s >= 0] = -|u| (1 - 1[s < 0]) bounds 1[s < 0] the same way):
//   logistic        c = ln 2   u > 0: u ln(1 + e^s)      g = u sigmoid(s)
//                              u < 0: -u ln(1 + e^-s)    g = u sigmoid(-s)
//                              h = |u| sigmoid(s) sigmoid(-s)
//                   (in nats: on the error rate with unit weights, scale = n,
//                   it is the backends' own log-loss, g = sigmoid - y.)
//   squared hinge   c = 1/2    u > 0: u/2 max(0, 1 + s)^2    g = u max(0, 1 + s)
//                              u < 0: -u/2 max(0, 1 - s)^2   g = u max(0, 1 - s)
//                              h = |u| 1[margin term > 0]
//                   (the hinge smoothed to C^1 by squaring: a Newton step
//                   needs a Hessian > 0 wherever the gradient is not 0, which
//                   the Huberized hinge's linear part does not have.)
// With a curvature coefficient per atom (hess_coef, optional, >= 0), the
// Hessian's |u| is replaced by the row's w_j = sum_a hess_coef_a v_ja (the
// gradient is unchanged): the caller passes the sum of the absolute terms
// whose net is coef (the objective's and the constraints' coefficients
// apart), so h is the curvature of the sum of the terms' own proxies, which
// bounds the net proxy's from above. A row whose terms nearly cancel (u
// small, w not) then gets a damped step -g / h of the order of u / w, where
// the net proxy's Newton step -g / h = -+1 / sigmoid(-+s) would be full
// size whatever |u|.
// A row with u = 0 gets g = h = 0 (with or without hess_coef). sigmoid(+-s) come from e = exp(-|s|)
// (fast_exp.hpp, overflow-free for every s).
//
// Each chunk goes through its rows in blocks of 512, in two phases: (1) the
// scatter of the 0-1 decisions into the atom rates and each row's net
// coefficient u_j (and curvature coefficient w_j, with hess_coef) (a CSR
// gather, into block buffers); (2) the derivatives,
// in branch-free loops over the block that vectorize (the exponential in its
// own loop). Consecutive rows mostly belong to the same few atoms, so row j
// adds into one of 4 interleaved copies of the rates (j mod 4), which breaks
// the add-store-load chain through one rates[a]; the copies are summed in a
// fixed order. A row's 0-1 decision is computed without a branch: with one on
// the score's sign, phase 1 took twice as long on scores of mixed signs
// (0.28 ms against 0.12 ms on a 34,189-row demographic-parity table with half
// the scores negative; the same 0.11-0.12 ms with every score negative).
// Cost: O(n + nnz(atoms)) per call, one read of the scores and the atom table
// and one write of grad and hess.
//
// Parallelism: rows split into contiguous static chunks, one per requested
// thread (parallel_chunks); each chunk accumulates the atom rates in private
// scratch, reduced in chunk order: a fixed requested thread count gives
// bit-identical rates whatever team OpenMP provides (grad and hess are per
// row, the same for every thread count). The derivative loops are built for
// AVX2+FMA and the baseline ISA (target_clones where supported): with FMA
// the last bits of grad and hess may differ between machines, never between
// runs on one machine. Rows whose score is not finite are
// skipped (g = h = 0) and counted: the caller must treat a nonzero count as an
// error. Inputs are assumed validated (lengths, finite coef, proxy kind): the
// binding checks them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "fast_exp.hpp"
#include "matrix_view.hpp"
#include "parallel.hpp"

namespace rateopt {

enum class BoostingProxy : std::int32_t { logistic = 0, squared_hinge = 1 };

inline bool valid_boosting_proxy(std::int32_t k) { return k == 0 || k == 1; }

// One call's outputs. grad and hess are (n_rows,) of G = float or double.
template <class G>
struct BoostingPassOutput {
    double* rates;  // out: (n_atoms,)
    G* grad;        // out: (n_rows,)
    G* hess;        // out: (n_rows,)
    std::int64_t n_nonfinite_scores = 0;
};

// The derivative loops are built for AVX2+FMA and for the baseline ISA, chosen
// at load time where target_clones is supported (GCC on x86-64 glibc; see
// kernel_block.hpp); elsewhere one baseline build.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__)
#define ROPT_BOOSTING_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ROPT_BOOSTING_CLONES
#endif

namespace detail {

// Rows per block of a chunk: the block's net coefficients and exponentials
// stay in L1 between the two phases.
constexpr std::int64_t kBoostingBlock = 512;

// Phase 2 of a block of m rows: each row's scaled gradient and Hessian from
// its score s[i], net coefficient u[i] and Hessian coefficient hu[i] (u
// itself, or the curvature coefficient w; tmp: m doubles of scratch), in
// simple branch-free loops that vectorize (boosting_row_derivative's
// arithmetic, term for term; the clamp in a loop of its own, fast_exp.hpp).
// A row whose score is not finite gets g = h = 0 and is counted. float32
// scores are widened into a block buffer first (exact), so every loop reads
// doubles. Every select chooses between values its loop computes on every
// row: GCC keeps a floating-point operation whose only use is one arm of a
// select behind a branch (it may trap), and a loop with a branch is not
// vectorized; so the derivatives go to block buffers, zeroed where a row has
// none in a loop of their own, then converted to G.
template <class S, class G>
ROPT_BOOSTING_CLONES void boosting_block_derivatives(const S* __restrict s_in, const double* __restrict u,
                                                     const double* __restrict hu,
                                                     double* __restrict tmp, std::int64_t m, BoostingProxy kind,
                                                     double scale, G* __restrict grad, G* __restrict hess,
                                                     std::int64_t& nonfinite) {
    constexpr double kMax = 1.7976931348623157e308;
    // The block's scores as doubles (exactly), so that every loop below reads one type.
    double sbuf[kBoostingBlock];
    const double* __restrict s = sbuf;
    if constexpr (std::is_same_v<S, double>) {
        s = s_in;
    } else {
        for (std::int64_t i = 0; i < m; ++i) sbuf[i] = static_cast<double>(s_in[i]);
    }
    double gbuf[kBoostingBlock], hbuf[kBoostingBlock];
    if (kind == BoostingProxy::logistic) {
        for (std::int64_t i = 0; i < m; ++i) {
            const double x = -std::fabs(s[i]);
            tmp[i] = x < -kMaxExpArg ? -kMaxExpArg : x;
        }
        for (std::int64_t i = 0; i < m; ++i) tmp[i] = exp_nonpositive(tmp[i]);
        for (std::int64_t i = 0; i < m; ++i) {
            const double si = s[i], ui = u[i], e = tmp[i];
            const double big = 1.0 / (1.0 + e), small = e * big;
            // u sigmoid(s) for u > 0, u sigmoid(-s) for u <= 0: big where the signs of s and u agree
            const double g = ui * ((si >= 0.0) == (ui > 0.0) ? big : small);
            const double h = (ui != 0.0 ? std::fabs(hu[i]) : 0.0) * (big * small);  // no net term: h = 0
            gbuf[i] = scale * g;
            hbuf[i] = scale * h;
        }
    } else {
        // the margin term z = 1 + s (u > 0) or 1 - s (u <= 0), as 1 + (+-s): the same sum, one addition
        for (std::int64_t i = 0; i < m; ++i) {
            const double si = s[i], ui = u[i];
            tmp[i] = 1.0 + (ui > 0.0 ? si : -si);
        }
        for (std::int64_t i = 0; i < m; ++i) {
            const double ui = u[i];
            gbuf[i] = scale * (ui * tmp[i]);
            hbuf[i] = scale * std::fabs(hu[i]);
        }
        for (std::int64_t i = 0; i < m; ++i) {  // zero where the margin term is not positive
            const bool on = (tmp[i] > 0.0) & (u[i] != 0.0);
            gbuf[i] = on ? gbuf[i] : 0.0;
            hbuf[i] = on ? hbuf[i] : 0.0;
        }
    }
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < m; ++i) {
        const bool finite = std::fabs(s[i]) <= kMax;
        gbuf[i] = finite ? gbuf[i] : 0.0;
        hbuf[i] = finite ? hbuf[i] : 0.0;
        bad += finite ? 0 : 1;
    }
    for (std::int64_t i = 0; i < m; ++i) {
        grad[i] = static_cast<G>(gbuf[i]);
        hess[i] = static_cast<G>(hbuf[i]);
    }
    nonfinite += bad;
}

// Phase 1 of rows [b0, b1): each row's 0-1 decision added (weighted) into the
// rates copy of its row (j mod 4 of the interleaved copies acc), and its net
// coefficient u_j = sum_a coef_a v_ja into u[j - b0]; with a curvature
// coefficient (Curv), also w_j = sum_a hess_coef_a v_ja into w[j - b0], in the
// same sweep over the entries. The atom table's index widths are dispatched
// once per block, not per row (the sums are the same: the same terms in the
// same order).
template <bool Curv, class S, class P, class Id>
inline void boosting_block_rates_typed(const S* __restrict scores, const P* __restrict indptr,
                                       const Id* __restrict ids, const double* __restrict weights,
                                       const double* __restrict coef, const double* __restrict hess_coef,
                                       double* __restrict acc, std::int64_t n_atoms, std::int64_t b0, std::int64_t b1,
                                       double* __restrict u, double* __restrict w) {
    constexpr double kMax = 1.7976931348623157e308;
    std::int64_t p = static_cast<std::int64_t>(indptr[b0]);
    for (std::int64_t j = b0; j < b1; ++j) {
        const double sj = static_cast<double>(scores[j]);
        // a non-finite row adds nothing; '&', not '&&': no branch on the score's sign (one mispredicted
        // in two rows where the signs are mixed cost about as much as the rest of the loop)
        const double positive = static_cast<double>((sj >= 0.0) & (sj <= kMax));
        double* rates = acc + (j & 3) * n_atoms;
        const std::int64_t e = static_cast<std::int64_t>(indptr[j + 1]);
        double uj = 0.0, wj = 0.0;
        for (; p < e; ++p) {
            const std::int32_t a = static_cast<std::int32_t>(ids[p]);
            const double v = weights[p];
            rates[a] += v * positive;
            uj += coef[a] * v;
            if constexpr (Curv) wj += hess_coef[a] * v;
        }
        u[j - b0] = uj;
        if constexpr (Curv) w[j - b0] = wj;
    }
}

template <bool Curv, class S, class P>
inline void boosting_block_rates_ids(const S* scores, const P* indptr, const AtomView& atoms, const double* coef,
                                     const double* hess_coef, double* acc, std::int64_t n_atoms, std::int64_t b0,
                                     std::int64_t b1, double* u, double* w) {
    switch (atoms.id_width) {
        case AtomIdWidth::kU8:
            return boosting_block_rates_typed<Curv>(scores, indptr, static_cast<const std::uint8_t*>(atoms.indices),
                                                    atoms.weights, coef, hess_coef, acc, n_atoms, b0, b1, u, w);
        case AtomIdWidth::kU16:
            return boosting_block_rates_typed<Curv>(scores, indptr, static_cast<const std::uint16_t*>(atoms.indices),
                                                    atoms.weights, coef, hess_coef, acc, n_atoms, b0, b1, u, w);
        default:
            return boosting_block_rates_typed<Curv>(scores, indptr, static_cast<const std::int32_t*>(atoms.indices),
                                                    atoms.weights, coef, hess_coef, acc, n_atoms, b0, b1, u, w);
    }
}

template <class S>
inline void boosting_block_rates(const S* scores, const AtomView& atoms, const double* coef,
                                 const double* hess_coef, double* acc, std::int64_t n_atoms, std::int64_t b0,
                                 std::int64_t b1, double* u, double* w) {
    if (hess_coef != nullptr) {
        if (atoms.indptr32)
            boosting_block_rates_ids<true>(scores, atoms.indptr32, atoms, coef, hess_coef, acc, n_atoms, b0, b1, u, w);
        else
            boosting_block_rates_ids<true>(scores, atoms.indptr64, atoms, coef, hess_coef, acc, n_atoms, b0, b1, u, w);
    } else if (atoms.indptr32) {
        boosting_block_rates_ids<false>(scores, atoms.indptr32, atoms, coef, hess_coef, acc, n_atoms, b0, b1, u, w);
    } else {
        boosting_block_rates_ids<false>(scores, atoms.indptr64, atoms, coef, hess_coef, acc, n_atoms, b0, b1, u, w);
    }
}

}  // namespace detail

template <class S, class G>
void boosting_pass(const S* scores,          // in: (n_rows,) the ensemble's scores
                   const AtomView& atoms,    // in: atoms.n_rows rows
                   const double* coef,       // in: (n_atoms,) the combination's coefficients
                   const double* hess_coef,  // in: (n_atoms,) curvature coefficients (>= 0), or null: |coef|'s
                   BoostingProxy kind,
                   double scale,             // factor on grad and hess (the caller's row count)
                   int n_threads,
                   BoostingPassOutput<G>& out) {
    constexpr std::int64_t kCopies = 4;  // rate accumulators per chunk, row j adds to copy j % 4
    const std::int64_t n = atoms.n_rows, n_atoms = atoms.n_atoms;
    // The per-row work is a few flops: below ~8k rows per thread the private
    // rate buffers and the team's start cost more than they save.
    const int threads = effective_threads(n_threads, n, 8192);
    struct alignas(64) Part {
        std::vector<double> rates;
        std::int64_t nonfinite = 0;
    };
    std::vector<Part> parts(static_cast<std::size_t>(threads));
    parallel_chunks(threads, [&](int t) {
        Part& part = parts[static_cast<std::size_t>(t)];
        // Consecutive rows mostly hit the same atoms: kCopies interleaved
        // accumulators break the add-store-load chain through one rates[a].
        std::vector<double> acc(static_cast<std::size_t>(kCopies * n_atoms), 0.0);
        double ubuf[detail::kBoostingBlock], wbuf[detail::kBoostingBlock], tmp[detail::kBoostingBlock];
        std::int64_t begin, end, nonfinite = 0;
        chunk_range(n, threads, t, begin, end);
        for (std::int64_t b0 = begin; b0 < end; b0 += detail::kBoostingBlock) {
            const std::int64_t b1 = std::min(end, b0 + detail::kBoostingBlock);
            // phase 1: the atom rates of the 0-1 decisions and each row's net coefficient
            // (and, with a curvature coefficient, each row's w_j: the Hessian's coefficient instead of |u_j|)
            detail::boosting_block_rates(scores, atoms, coef, hess_coef, acc.data(), n_atoms, b0, b1, ubuf, wbuf);
            // phase 2: the derivatives, vectorized
            detail::boosting_block_derivatives(scores + b0, ubuf, hess_coef != nullptr ? wbuf : ubuf, tmp, b1 - b0,
                                               kind, scale, out.grad + b0, out.hess + b0, nonfinite);
        }
        part.rates.assign(static_cast<std::size_t>(n_atoms), 0.0);
        for (std::int64_t a = 0; a < n_atoms; ++a)
            part.rates[a] = (acc[a] + acc[n_atoms + a]) + (acc[2 * n_atoms + a] + acc[3 * n_atoms + a]);
        part.nonfinite = nonfinite;
    });
    std::fill(out.rates, out.rates + n_atoms, 0.0);
    out.n_nonfinite_scores = 0;
    for (const Part& part : parts) {
        out.n_nonfinite_scores += part.nonfinite;
        for (std::int64_t a = 0; a < n_atoms; ++a) out.rates[a] += part.rates[a];
    }
}

// The kept bins' codes of a boosted run's candidate prefix (rateopt._predictors._boosting): each score's
// quantile bin, code[j] = (the number of lows[b] <= scores[j]) - 1 for ascending bin bounds lows (1 to 256
// of them, lows[0] <= every score), in the scores' own type. A branch-free binary search per row over lows
// padded to a power of two with NaN (never <= a score, so no code reaches a pad), one step per bit of the
// bin number: the same comparisons as np.searchsorted(lows, scores, side="right") - 1. Blocks of 16 rows
// are searched side by side, so that their independent chains overlap. Cost: O(n log2(n_lows)), one read
// of the scores and one byte written per row.
template <class S>
void kept_bin_codes(const S* scores, std::int64_t n, const S* lows, int n_lows, std::uint8_t* codes) {
    int bits = 0;
    while ((1 << bits) < n_lows) ++bits;
    S padded[256];
    std::fill(padded, padded + 256, std::numeric_limits<S>::quiet_NaN());
    std::copy(lows, lows + n_lows, padded);
    const int top = (1 << bits) >> 1;
    constexpr int W = 16;  // rows searched side by side: their independent chains overlap
    std::int64_t j = 0;
    for (; j + W <= n; j += W) {
        int c[W] = {};
        for (int step = top; step > 0; step >>= 1)
            for (int k = 0; k < W; ++k) c[k] += (padded[c[k] + step] <= scores[j + k]) ? step : 0;
        for (int k = 0; k < W; ++k) codes[j + k] = static_cast<std::uint8_t>(c[k]);
    }
    for (; j < n; ++j) {
        const S x = scores[j];
        int c = 0;
        for (int step = top; step > 0; step >>= 1) c += (padded[c + step] <= x) ? step : 0;
        codes[j] = static_cast<std::uint8_t>(c);
    }
}

}  // namespace rateopt
