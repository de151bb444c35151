// Design
// ------
// Layer: core (no Python types). The K-class boosting pass: what one
// iteration of the rate-constrained K-class game inside boosting needs from
// the current ensemble's K raw scores per training row (float32 or float64),
// in one sweep over the rows:
//   * the weighted 0-1 prediction counts per cell,
//       counts[c, k] = sum_{i: cell_i = c} w_i 1[yhat_i = k],
//     yhat_i = argmax_k s_ik (lowest index on ties, as the K-class linear
//     predictor and numpy.argmax), the statistics the multipliers see;
//   * each row's gradient and diagonal Hessian, with respect to its K scores,
//     of the softmax proxy of one cost table (n_cells, K) (the game's
//     combinations summed into one table by the caller):
//       psi_i(s) = (max_k D_k) (logsumexp(s) - s_t),
//       g_ik = scale w_i (max D) (p_k - 1[k = t]),
//       h_ik = scale w_i (max D) p_k (1 - p_k),
//     with p = softmax(s), t = argmin_k a_k and D_k = a_k - a_t (a = the row's
//     cell's costs). The proxy and its gradient are multiclass_pass.hpp's own
//     (detail::CellCosts, detail::cost_proxy, detail::SoftmaxRow: one
//     implementation of the proxy derivative); the Hessian is its diagonal, as
//     LightGBM's and XGBoost's multiclass objectives grow trees on (one tree
//     per class, each on its own column's g and h). A row in a cell indifferent
//     to the prediction (max D = 0) or of weight 0 gets g = h = 0, as a
//     two-class row with net coefficient 0 (boosting_pass.hpp). On the error
//     rate with unit weights and scale = n these are the backends' own softmax
//     log-loss derivatives p - e_y and p (1 - p) (without LightGBM's factor
//     K / (K - 1) on the Hessian).
// Layout: score (i, k) is scores[i * row_stride + k * class_stride], and grad
// and hess use the same strides: LightGBM keeps its scores and reads its
// custom gradients class-major (row_stride 1, class_stride n), XGBoost
// row-major (row_stride K, class_stride 1), so either backend's arrays are
// read and written in place.
//
// Parallelism: rows split into contiguous static chunks, one per requested
// thread (parallel_chunks); each chunk accumulates the counts in private
// scratch, reduced in chunk order: a fixed requested thread count gives
// bit-identical counts whatever team OpenMP provides (grad and hess are per
// row). Rows with a non-finite score are skipped (no count, g = h = 0) and
// counted: the caller must treat a nonzero count as an error. Inputs are
// assumed validated (shapes, cell ids in range, finite costs): the binding
// checks them. Cost: O(n K) per call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "multiclass_pass.hpp"
#include "parallel.hpp"

namespace rateopt {

// One call's outputs. grad and hess are G = float or double, in the scores' layout.
template <class G>
struct BoostingMulticlassOutput {
    double* counts;  // out: (n_cells, K)
    G* grad;         // out: element (i, k) at i * row_stride + k * class_stride
    G* hess;         // out: the same layout
    std::int64_t n_nonfinite_scores = 0;
};

template <class S, class G>
void boosting_multiclass_pass(const S* scores,                // in: the ensemble's K scores per row
                              std::int64_t n, std::int64_t K,  // rows, classes (K >= 2)
                              std::int64_t row_stride, std::int64_t class_stride,
                              const ClassCellsView& cells,     // in: each row's cell and weight
                              const double* cost,              // in: (n_cells, K), finite
                              double scale,                    // factor on grad and hess
                              int n_threads, BoostingMulticlassOutput<G>& out) {
    const detail::CellCosts table(cost, cells.n_cells, K);
    const int threads = effective_threads(n_threads, n, 4096);
    struct alignas(64) Part {
        std::vector<double> counts;
        std::int64_t nonfinite = 0;
    };
    std::vector<Part> parts(static_cast<std::size_t>(threads));
    parallel_chunks(threads, [&](int t) {
        Part& part = parts[static_cast<std::size_t>(t)];
        part.counts.assign(static_cast<std::size_t>(cells.n_cells * K), 0.0);
        std::vector<double> s(static_cast<std::size_t>(K)), p(static_cast<std::size_t>(K)),
            g(static_cast<std::size_t>(K));
        std::int64_t begin, end;
        chunk_range(n, threads, t, begin, end);
        for (std::int64_t i = begin; i < end; ++i) {
            const std::int64_t base = i * row_stride;
            for (std::int64_t k = 0; k < K; ++k) s[k] = static_cast<double>(scores[base + k * class_stride]);
            const double w = cells.weights[i];
            const std::int64_t c = cells.cells[i];
            bool live = false;
            if (!detail::scores_finite<0>(s.data(), K)) {
                ++part.nonfinite;
            } else {
                part.counts[static_cast<std::size_t>(c * K + detail::argmax<0>(s.data(), K))] += w;
                live = w != 0.0 && table.max_gap[static_cast<std::size_t>(c)] != 0.0;
            }
            if (!live) {
                for (std::int64_t k = 0; k < K; ++k) {
                    out.grad[base + k * class_stride] = G(0);
                    out.hess[base + k * class_stride] = G(0);
                }
                continue;
            }
            std::fill(g.begin(), g.end(), 0.0);
            detail::SoftmaxRow<0> sm;
            bool soft = false;
            const double top = table.max_gap[static_cast<std::size_t>(c)];
            detail::cost_proxy<0>(MulticlassProxy::softmax, s.data(), table.gap.data() + c * K, top,
                                  table.best[static_cast<std::size_t>(c)], K, 1.0, sm, p.data(), g.data(), &soft);
            const double f = scale * w;
            for (std::int64_t k = 0; k < K; ++k) {
                out.grad[base + k * class_stride] = static_cast<G>(f * g[k]);
                out.hess[base + k * class_stride] = static_cast<G>(f * (top * (p[k] * (1.0 - p[k]))));
            }
        }
    });
    std::fill(out.counts, out.counts + cells.n_cells * K, 0.0);
    out.n_nonfinite_scores = 0;
    for (const Part& part : parts) {
        out.n_nonfinite_scores += part.nonfinite;
        for (std::int64_t j = 0; j < cells.n_cells * K; ++j) out.counts[j] += part.counts[j];
    }
}

}  // namespace rateopt
