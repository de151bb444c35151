// Design
// ------
// Layer: core (no Python types). The fused rate kernel: one pass over the rows
// of X computes everything one iteration of a rate-constrained game needs at the
// current (theta, bias):
//   * every atom's 0-1 positive rate       p+(S_a)  = sum_j v_ja 1[s_j >= 0]
//   * every atom's hinge proxy rates       sum_j v_ja max(0, margin +/- s_j)
//   * the proxy value of sum_a coef_a p+(S_a) under the net per-example rule
//     (DESIGN.md §1): u_j = sum_a coef_a v_ja; u_j > 0 uses u_j max(0, margin+s),
//     u_j < 0 uses |u_j| max(0, margin-s) - |u_j|, an upper bound of u_j 1[s >= 0];
//   * its subgradient with respect to theta and the bias.
// Cost: O(nnz(X) + nnz(atoms)) per call, independent of the number of
// constraints for a fixed number of atoms per row. Each row's data is read once:
// the gradient axpy touches the row right after its dot product, while it is
// still in cache, and is skipped when the hinge is flat.
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
#include <vector>

#include "matrix_view.hpp"
#include "parallel.hpp"

namespace rateopt {

struct RateKernelOutput {
    double* rates;            // out: (n_atoms,)
    double* proxy_pos_rates;  // out: (n_atoms,)
    double* proxy_neg_rates;  // out: (n_atoms,)
    double* grad;             // out: (n_features,)
    double proxy_value = 0.0;
    double grad_bias = 0.0;
    double value = 0.0;       // sum_a coef_a * rates[a]
    // Rows whose score x.theta + bias is not finite (overflow, or inf - inf):
    // their 0-1 and hinge terms are meaningless, so the caller must treat any
    // nonzero count as an error rather than read the other outputs.
    std::int64_t n_nonfinite_scores = 0;
};

namespace detail {

// One thread's private accumulators (aligned so that two threads' scalars never
// share a cache line).
struct alignas(64) KernelScratch {
    std::vector<double> rates, ppos, pneg, grad;
    double proxy_value = 0.0;
    double grad_bias = 0.0;
    std::int64_t nonfinite = 0;
    void init(std::int64_t n_atoms, std::int64_t n_features) {
        rates.assign(static_cast<std::size_t>(n_atoms), 0.0);
        ppos.assign(static_cast<std::size_t>(n_atoms), 0.0);
        pneg.assign(static_cast<std::size_t>(n_atoms), 0.0);
        grad.assign(static_cast<std::size_t>(n_features), 0.0);
    }
};

// Returns 1 if the row's score is not finite (its terms are then skipped), else 0.
template <class Matrix>
inline int process_row(const Matrix& X, std::int64_t j, const double* theta, double bias,
                        const AtomView& atoms, const double* coef, double margin,
                        KernelScratch& acc, double& proxy_value, double& grad_bias) {
    const double s = X.dot(j, theta) + bias;
    if (!std::isfinite(s)) return 1;
    const double pos = s >= 0.0 ? 1.0 : 0.0;
    const double hinge_pos = std::max(0.0, margin + s);
    const double hinge_neg = std::max(0.0, margin - s);
    double u = 0.0;
    const std::int64_t end = atoms.indptr[j + 1];
    for (std::int64_t e = atoms.indptr[j]; e < end; ++e) {
        const std::int32_t a = atoms.indices[e];
        const double v = atoms.weights[e];
        acc.rates[a] += v * pos;
        acc.ppos[a] += v * hinge_pos;
        acc.pneg[a] += v * hinge_neg;
        u += coef[a] * v;
    }
    double d = 0.0;
    if (u > 0.0) {
        proxy_value += u * hinge_pos;
        if (margin + s > 0.0) d = u;
    } else if (u < 0.0) {
        proxy_value += -u * hinge_neg + u;
        if (margin - s > 0.0) d = u;
    }
    if (d != 0.0) {
        X.axpy(j, d, acc.grad.data());
        grad_bias += d;
    }
    return 0;
}

}  // namespace detail

// Runs the fused kernel. `rows` may be null (all rows) or hold n_batch row ids.
// Inputs are assumed validated (shapes, finiteness, index ranges): the binding
// layer checks them once.
template <class Matrix>
void rate_kernel(const Matrix& X,
                 const double* theta,       // in: (n_features,)
                 double bias,
                 const AtomView& atoms,
                 const double* coef,        // in: (n_atoms,)
                 double margin,
                 const std::int64_t* rows,  // in: (n_batch,) or null
                 std::int64_t n_batch,
                 int n_threads,
                 RateKernelOutput& out) {
    const std::int64_t n_visit = rows ? n_batch : X.n_rows;
    const std::int64_t n_atoms = atoms.n_atoms;
    const std::int64_t n_features = X.n_cols;
    // Below ~2k rows per thread the private buffers cost more than they save.
    const int threads = effective_threads(n_threads, n_visit, 2048);

    std::vector<detail::KernelScratch> scratch(static_cast<std::size_t>(threads));
    parallel_chunks(threads, [&](int t) {
        detail::KernelScratch& acc = scratch[static_cast<std::size_t>(t)];
        acc.init(n_atoms, n_features);
        std::int64_t begin, end;
        chunk_range(n_visit, threads, t, begin, end);
        double proxy_value = 0.0, grad_bias = 0.0;  // register-resident
        std::int64_t nonfinite = 0;
        if (rows) {
            for (std::int64_t r = begin; r < end; ++r)
                nonfinite += detail::process_row(X, rows[r], theta, bias, atoms, coef, margin, acc,
                                                 proxy_value, grad_bias);
        } else {
            for (std::int64_t j = begin; j < end; ++j)
                nonfinite += detail::process_row(X, j, theta, bias, atoms, coef, margin, acc, proxy_value,
                                                 grad_bias);
        }
        acc.proxy_value = proxy_value;
        acc.grad_bias = grad_bias;
        acc.nonfinite = nonfinite;
    });

    // Reduce in thread order (deterministic for a fixed thread count).
    const double scale = rows ? (n_batch > 0 ? static_cast<double>(X.n_rows) / n_batch : 0.0) : 1.0;
    std::fill(out.rates, out.rates + n_atoms, 0.0);
    std::fill(out.proxy_pos_rates, out.proxy_pos_rates + n_atoms, 0.0);
    std::fill(out.proxy_neg_rates, out.proxy_neg_rates + n_atoms, 0.0);
    std::fill(out.grad, out.grad + n_features, 0.0);
    out.proxy_value = 0.0;
    out.grad_bias = 0.0;
    out.n_nonfinite_scores = 0;
    for (const auto& acc : scratch) {
        out.n_nonfinite_scores += acc.nonfinite;
        for (std::int64_t a = 0; a < n_atoms; ++a) {
            out.rates[a] += acc.rates[a];
            out.proxy_pos_rates[a] += acc.ppos[a];
            out.proxy_neg_rates[a] += acc.pneg[a];
        }
        for (std::int64_t k = 0; k < n_features; ++k) out.grad[k] += acc.grad[k];
        out.proxy_value += acc.proxy_value;
        out.grad_bias += acc.grad_bias;
    }
    if (scale != 1.0) {
        for (std::int64_t a = 0; a < n_atoms; ++a) {
            out.rates[a] *= scale;
            out.proxy_pos_rates[a] *= scale;
            out.proxy_neg_rates[a] *= scale;
        }
        for (std::int64_t k = 0; k < n_features; ++k) out.grad[k] *= scale;
        out.proxy_value *= scale;
        out.grad_bias *= scale;
    }
    double value = 0.0;
    for (std::int64_t a = 0; a < n_atoms; ++a) value += coef[a] * out.rates[a];
    out.value = value;
}

}  // namespace rateopt
