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
// A row with u = 0 gets g = h = 0. sigmoid(+-s) come from e = exp(-|s|)
// (fast_exp.hpp, overflow-free for every s).
//
// Parallelism: rows split into contiguous static chunks, one per requested
// thread (parallel_chunks); each chunk accumulates the atom rates in private
// scratch, reduced in chunk order: a fixed requested thread count gives
// bit-identical rates whatever team OpenMP provides (grad and hess are per
// row, the same for every thread count). Rows whose score is not finite are
// skipped (g = h = 0) and counted: the caller must treat a nonzero count as an
// error. Inputs are assumed validated (lengths, finite coef, proxy kind): the
// binding checks them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "fast_exp.hpp"
#include "matrix_view.hpp"
#include "parallel.hpp"

namespace rateopt {

enum class BoostingProxy : std::int32_t { logistic = 0, squared_hinge = 1 };

inline bool valid_boosting_proxy(std::int32_t k) { return k == 0 || k == 1; }

// The derivatives of one row's proxy term u psi(s) (before the scale).
struct RowDerivative {
    double grad;
    double hess;
};

inline RowDerivative boosting_row_derivative(BoostingProxy kind, double u, double s) {
    if (u == 0.0) return {0.0, 0.0};
    const double au = std::fabs(u);
    if (kind == BoostingProxy::logistic) {
        const double x = -std::fabs(s);
        const double e = exp_nonpositive(x < -kMaxExpArg ? -kMaxExpArg : x);
        const double big = 1.0 / (1.0 + e), small = e * big;  // sigmoid(|s|), sigmoid(-|s|)
        const double sig_pos = s >= 0.0 ? big : small;       // sigmoid(s)
        const double sig_neg = s >= 0.0 ? small : big;       // sigmoid(-s)
        return {u * (u > 0.0 ? sig_pos : sig_neg), au * (big * small)};
    }
    const double z = u > 0.0 ? 1.0 + s : 1.0 - s;
    return z > 0.0 ? RowDerivative{u * z, au} : RowDerivative{0.0, 0.0};
}

// One call's outputs. grad and hess are (n_rows,) of G = float or double.
template <class G>
struct BoostingPassOutput {
    double* rates;  // out: (n_atoms,)
    G* grad;        // out: (n_rows,)
    G* hess;        // out: (n_rows,)
    std::int64_t n_nonfinite_scores = 0;
};

template <class S, class G>
void boosting_pass(const S* scores,          // in: (n_rows,) the ensemble's scores
                   const AtomView& atoms,    // in: atoms.n_rows rows
                   const double* coef,       // in: (n_atoms,) the combination's coefficients
                   BoostingProxy kind,
                   double scale,             // factor on grad and hess (the caller's row count)
                   int n_threads,
                   BoostingPassOutput<G>& out) {
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
        part.rates.assign(static_cast<std::size_t>(n_atoms), 0.0);
        double* rates = part.rates.data();
        std::int64_t begin, end, nonfinite = 0;
        chunk_range(n, threads, t, begin, end);
        for (std::int64_t j = begin; j < end; ++j) {
            const double s = static_cast<double>(scores[j]);
            const std::int64_t e_end = atoms.indptr[j + 1];
            if (!std::isfinite(s)) {
                ++nonfinite;
                out.grad[j] = G(0);
                out.hess[j] = G(0);
                continue;
            }
            const double positive = s >= 0.0 ? 1.0 : 0.0;
            double u = 0.0;
            for (std::int64_t e = atoms.indptr[j]; e < e_end; ++e) {
                const std::int32_t a = atoms.indices[e];
                const double v = atoms.weights[e];
                rates[a] += v * positive;
                u += coef[a] * v;
            }
            const RowDerivative d = boosting_row_derivative(kind, u, s);
            out.grad[j] = static_cast<G>(scale * d.grad);
            out.hess[j] = static_cast<G>(scale * d.hess);
        }
        part.nonfinite = nonfinite;
    });
    std::fill(out.rates, out.rates + n_atoms, 0.0);
    out.n_nonfinite_scores = 0;
    for (const Part& part : parts) {
        out.n_nonfinite_scores += part.nonfinite;
        for (std::int64_t a = 0; a < n_atoms; ++a) out.rates[a] += part.rates[a];
    }
}

}  // namespace rateopt
