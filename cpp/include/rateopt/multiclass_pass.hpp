// Design
// ------
// Layer: core (no Python types). The fused K-column multiclass pass: one pass
// over the rows of X computes everything one iteration of a cost-sensitive
// multiclass game needs at the current linear model (coef, intercept):
//   * the K scores of row i, s_k = sum_j x_ij coef[j, k] + intercept[k], and its
//     prediction yhat_i = argmax_k s_k (lowest index on ties, numpy.argmax);
//   * the weighted 0-1 prediction counts per cell,
//       counts[c, k] = sum_{i: cell_i = c} w_i 1[yhat_i = k];
//   * the exact 0-1 values of two cost tables (objective, constraints), each
//     (n_cells, K): sum_i w_i cost[cell_i, yhat_i];
//   * a convex proxy of each cost table (its own proxy kind), summed:
//       proxy_value = sum_i w_i (phi_obj(s_i) + phi_con(s_i)),
//     and, when asked for, its (sub)gradient with respect to coef and the
//     intercept: grad = sum_i x_i (outer) w_i dphi_i/ds, grad_intercept =
//     sum_i w_i dphi_i/ds.
// For a cost vector a = cost[cell_i] (K,), t = argmin_k a_k (lowest index on
// ties) and D_k = a_k - a_t >= 0 (both per cell, computed once per call); a
// cell with max_k D_k = 0 is indifferent to the prediction and adds nothing:
//   softmax  (max_k D_k) (logsumexp(s) - s_t)      slope (max D)(softmax(s) - e_t)
//            cost-weighted cross-entropy, logsumexp taken after subtracting max s.
//   hinge    max_{k != t} D_k max(0, 1 + s_k - s_t)  (slack-rescaled
//            Crammer-Singer); slope at the maximizing k* (lowest index on
//            ties), when the loss is > 0: +D_k* at k*, -D_k* at t.
// Both bound max D 1[yhat != t] >= a_yhat - a_t from above (hinge: at
// yhat != t, 1 + s_yhat - s_t >= 1; softmax: logsumexp(s) - s_t >= log 2 > 0
// there, so it bounds the indicator up to the factor 1/log 2).
//
// Memory layout: coef is feature-major (n_features, K), so the K weights of
// feature j are K contiguous doubles. Per stored entry x_ij (CSR) or element
// (dense) the pass loads x_ij and j once and does K multiply-adds into a
// K-length score buffer; the gradient scatter is the same per entry, into the
// K contiguous doubles of grad[j, :], and is skipped for a row whose slope
// vector is zero. For K = 2..16 the class count is a template constant, so the
// score buffer and the row's slopes live in registers; larger K takes the
// generic loop. Cost: O(K nnz(X)) per call (twice that with the gradient),
// with X read once.
//
// Parallelism: rows split into contiguous static chunks, one per requested
// thread (parallel_chunks); each chunk accumulates counts, values and the
// gradient in private scratch, reduced in chunk order: a fixed requested
// thread count gives bit-identical results whatever team OpenMP provides.
//
// Rows whose scores are not finite (overflow, or inf - inf from a value edited
// after validation) are skipped and counted: the caller must treat a nonzero
// count as an error. Inputs are assumed validated (shapes, cell ids in range,
// finite costs and model, proxy kinds): the Python boundary checks them once.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "matrix_view.hpp"
#include "parallel.hpp"

namespace rateopt {

// The proxy of one cost table (the Python table MULTICLASS_PROXIES).
enum class MulticlassProxy : std::int32_t { softmax = 0, hinge = 1 };

inline bool valid_multiclass_proxy(std::int32_t code) { return code == 0 || code == 1; }

// The class count up to which the pass is compiled for a constant K.
constexpr int kMaxFixedClasses = 16;

// Each row's cell and weight (the Python ClassCells, validated once).
struct ClassCellsView {
    const std::int32_t* cells;  // in: (n_rows,) cell ids in [0, n_cells)
    const double* weights;      // in: (n_rows,) finite, >= 0
    std::int64_t n_cells;
};

// The linear model: K scores per row.
struct MulticlassModel {
    const double* coef;       // in: (n_features, n_classes), row-major (feature-major)
    const double* intercept;  // in: (n_classes,)
    std::int64_t n_classes;   // K >= 2
};

// The two cost tables and their proxies.
struct MulticlassCosts {
    const double* objective;    // in: (n_cells, n_classes), finite
    const double* constraints;  // in: (n_cells, n_classes), finite
    MulticlassProxy objective_proxy;
    MulticlassProxy constraint_proxy;
};

struct MulticlassPassOutput {
    double* counts;          // out: (n_cells, n_classes)
    double* grad;            // out: (n_features, n_classes), or null: no gradient work at all
    double* grad_intercept;  // out: (n_classes,), null exactly when grad is
    double proxy_value = 0.0;
    double objective_value = 0.0;
    double constraint_value = 0.0;
    // Rows with a non-finite score: their terms are skipped, so any nonzero
    // count makes the other outputs meaningless.
    std::int64_t n_nonfinite_scores = 0;
};

namespace detail {

// ---- the entries of one row, for each layout --------------------------------
// f(j, x_ij) for every stored entry of row i (CSR: in stored order, duplicates
// visited separately, i.e. summed; dense: every column in order).

template <class T, class F>
inline void for_each_entry(const DenseView<T>& X, std::int64_t i, F&& f) {
    const T* x = X.data + i * X.n_cols;
    for (std::int64_t j = 0; j < X.n_cols; ++j) f(j, static_cast<double>(x[j]));
}

template <class T, class I, class F>
inline void for_each_entry(const CsrView<T, I>& X, std::int64_t i, F&& f) {
    const std::int64_t end = static_cast<std::int64_t>(X.indptr[i + 1]);
    const T* __restrict x = X.data;
    const I* __restrict idx = X.indices;
    for (std::int64_t p = static_cast<std::int64_t>(X.indptr[i]); p < end; ++p)
        f(static_cast<std::int64_t>(idx[p]), static_cast<double>(x[p]));
}

// ---- the K scores and the gradient scatter of one row -----------------------
// KC > 0: K == KC, a compile-time constant (the buffers are local arrays the
// compiler keeps in registers); KC == 0: K at run time, through memory.

// s[k] = sum_j x_ij coef[j, k] + intercept[k], accumulated in stored order.
template <int KC, class Matrix>
inline void row_scores(const Matrix& X, std::int64_t i, const MulticlassModel& m, double* s) {
    if constexpr (KC > 0) {
        double acc[KC];
        for (int k = 0; k < KC; ++k) acc[k] = 0.0;
        const double* __restrict coef = m.coef;
        for_each_entry(X, i, [&](std::int64_t j, double x) {
            const double* c = coef + j * KC;
            for (int k = 0; k < KC; ++k) acc[k] += x * c[k];
        });
        for (int k = 0; k < KC; ++k) s[k] = acc[k] + m.intercept[k];
    } else {
        const std::int64_t K = m.n_classes;
        std::fill(s, s + K, 0.0);
        const double* __restrict coef = m.coef;
        for_each_entry(X, i, [&](std::int64_t j, double x) {
            const double* c = coef + j * K;
            for (std::int64_t k = 0; k < K; ++k) s[k] += x * c[k];
        });
        for (std::int64_t k = 0; k < K; ++k) s[k] += m.intercept[k];
    }
}

// grad[j, :] += x_ij g for every entry of row i.
template <int KC, class Matrix>
inline void row_scatter(const Matrix& X, std::int64_t i, const double* g, std::int64_t K, double* __restrict grad) {
    if constexpr (KC > 0) {
        double gl[KC];
        for (int k = 0; k < KC; ++k) gl[k] = g[k];
        for_each_entry(X, i, [&](std::int64_t j, double x) {
            double* o = grad + j * KC;
            for (int k = 0; k < KC; ++k) o[k] += x * gl[k];
        });
    } else {
        for_each_entry(X, i, [&](std::int64_t j, double x) {
            double* o = grad + j * K;
            for (std::int64_t k = 0; k < K; ++k) o[k] += x * g[k];
        });
    }
}

// ---- the proxies of one row ------------------------------------------------

// One cost table reduced per cell (once per call): t = argmin_k a_k, D_k =
// a_k - a_t and max_k D_k.
struct CellCosts {
    std::vector<double> gap;       // (n_cells, K): D
    std::vector<double> max_gap;   // (n_cells,)
    std::vector<std::int32_t> best;  // (n_cells,): t
    CellCosts(const double* cost, std::int64_t n_cells, std::int64_t K)
        : gap(static_cast<std::size_t>(n_cells * K)), max_gap(static_cast<std::size_t>(n_cells)),
          best(static_cast<std::size_t>(n_cells)) {
        for (std::int64_t c = 0; c < n_cells; ++c) {
            const double* a = cost + c * K;
            std::int64_t t = 0;
            for (std::int64_t k = 1; k < K; ++k)
                if (a[k] < a[t]) t = k;
            double top = 0.0;
            for (std::int64_t k = 0; k < K; ++k) {
                const double d = a[k] - a[t];
                gap[static_cast<std::size_t>(c * K + k)] = d;
                top = std::max(top, d);
            }
            max_gap[static_cast<std::size_t>(c)] = top;
            best[static_cast<std::size_t>(c)] = static_cast<std::int32_t>(t);
        }
    }
};

// The row's softmax quantities, computed at most once per row (both tables may
// use them): lse = logsumexp(s) and, when slopes are asked for, p = softmax(s).
struct SoftmaxRow {
    bool ready = false;
    double lse = 0.0;
    void compute(const double* s, std::int64_t K, double* p, bool want_p) {
        double top = s[0];
        for (std::int64_t k = 1; k < K; ++k) top = std::max(top, s[k]);
        double sum = 0.0;
        for (std::int64_t k = 0; k < K; ++k) {
            const double e = std::exp(s[k] - top);
            p[k] = e;
            sum += e;
        }
        lse = top + std::log(sum);
        if (want_p) {
            const double inv = 1.0 / sum;
            for (std::int64_t k = 0; k < K; ++k) p[k] *= inv;
        }
        ready = true;
    }
};

// One table's proxy value at the row's scores s (unweighted); its slopes added
// to g when g is not null. p is the row's softmax scratch (K,).
inline double cost_proxy(MulticlassProxy kind, const double* s, const double* gap, double max_gap, std::int64_t t,
                         std::int64_t K, SoftmaxRow& sm, double* p, double* g) {
    if (max_gap == 0.0) return 0.0;
    if (kind == MulticlassProxy::hinge) {
        const double st = s[t];
        double loss = 0.0;
        std::int64_t top = -1;
        for (std::int64_t k = 0; k < K; ++k) {
            if (k == t) continue;
            const double v = gap[k] * std::max(0.0, 1.0 + s[k] - st);
            if (v > loss) {
                loss = v;
                top = k;
            }
        }
        if (g && top >= 0) {
            g[top] += gap[top];
            g[t] -= gap[top];
        }
        return loss;
    }
    if (!sm.ready) sm.compute(s, K, p, g != nullptr);
    if (g) {
        for (std::int64_t k = 0; k < K; ++k) g[k] += max_gap * p[k];
        g[t] -= max_gap;
    }
    return max_gap * (sm.lse - s[t]);
}

// One chunk's private accumulators.
struct alignas(64) MulticlassScratch {
    std::vector<double> counts, grad, grad_intercept, s, p, g;
    double proxy = 0.0, objective = 0.0, constraint = 0.0;
    std::int64_t nonfinite = 0;
    void init(std::int64_t n_cells, std::int64_t n_features, std::int64_t K, bool gradient) {
        counts.assign(static_cast<std::size_t>(n_cells * K), 0.0);
        grad.assign(gradient ? static_cast<std::size_t>(n_features * K) : 0, 0.0);
        grad_intercept.assign(static_cast<std::size_t>(K), 0.0);
        s.assign(static_cast<std::size_t>(K), 0.0);
        p.assign(static_cast<std::size_t>(K), 0.0);
        g.assign(static_cast<std::size_t>(K), 0.0);
    }
};

inline bool scores_finite(const double* s, std::int64_t K) {
    for (std::int64_t k = 0; k < K; ++k)
        if (!std::isfinite(s[k])) return false;
    return true;
}

// Lowest index of the largest score (numpy.argmax; scores are finite here).
inline std::int64_t argmax(const double* s, std::int64_t K) {
    std::int64_t top = 0;
    for (std::int64_t k = 1; k < K; ++k)
        if (s[k] > s[top]) top = k;
    return top;
}

// Rows [begin, end) of the pass, into acc.
template <int KC, class Matrix>
void multiclass_chunk(const Matrix& X, const MulticlassModel& m, const ClassCellsView& cells,
                      const MulticlassCosts& costs, const CellCosts& obj, const CellCosts& con, bool gradient,
                      std::int64_t begin, std::int64_t end, MulticlassScratch& acc) {
    const std::int64_t K = KC > 0 ? KC : m.n_classes;
    double s_fixed[KC > 0 ? KC : 1];
    double* s = KC > 0 ? s_fixed : acc.s.data();
    double* p = acc.p.data();
    double* g = acc.g.data();
    double* gi = acc.grad_intercept.data();
    double proxy = 0.0, objective = 0.0, constraint = 0.0;
    std::int64_t nonfinite = 0;
    for (std::int64_t i = begin; i < end; ++i) {
        row_scores<KC>(X, i, m, s);
        if (!scores_finite(s, K)) {
            ++nonfinite;
            continue;
        }
        const double w = cells.weights[i];
        if (w == 0.0) continue;  // every term of the row is w times something finite
        const std::int64_t c = cells.cells[i];
        const std::int64_t yhat = argmax(s, K);
        acc.counts[static_cast<std::size_t>(c * K + yhat)] += w;
        objective += w * costs.objective[c * K + yhat];
        constraint += w * costs.constraints[c * K + yhat];

        SoftmaxRow sm;
        double* gr = gradient ? g : nullptr;
        if (gr) std::fill(g, g + K, 0.0);
        const std::size_t row = static_cast<std::size_t>(c * K);
        const double lo = cost_proxy(costs.objective_proxy, s, obj.gap.data() + row, obj.max_gap[c], obj.best[c], K,
                                     sm, p, gr);
        const double lc = cost_proxy(costs.constraint_proxy, s, con.gap.data() + row, con.max_gap[c], con.best[c],
                                     K, sm, p, gr);
        proxy += w * (lo + lc);
        if (gr) {
            bool any = false;
            for (std::int64_t k = 0; k < K; ++k) {
                g[k] *= w;
                any |= g[k] != 0.0;
            }
            if (any) {
                row_scatter<KC>(X, i, g, K, acc.grad.data());
                for (std::int64_t k = 0; k < K; ++k) gi[k] += g[k];
            }
        }
    }
    acc.proxy = proxy;
    acc.objective = objective;
    acc.constraint = constraint;
    acc.nonfinite = nonfinite;
}

// Rows [begin, end) of the scores, into out (n_rows, K); returns the count of
// rows with a non-finite score.
template <int KC, class Matrix>
std::int64_t scores_chunk(const Matrix& X, const MulticlassModel& m, std::int64_t begin, std::int64_t end,
                          double* out) {
    const std::int64_t K = KC > 0 ? KC : m.n_classes;
    std::int64_t nonfinite = 0;
    for (std::int64_t i = begin; i < end; ++i) {
        double* s = out + i * K;
        row_scores<KC>(X, i, m, s);
        nonfinite += scores_finite(s, K) ? 0 : 1;
    }
    return nonfinite;
}

// Calls f(std::integral_constant<int, KC>) with KC = K for 2 <= K <= 16, else KC = 0.
template <int KC = 2, class F>
inline void with_class_count(std::int64_t K, F&& f) {
    if constexpr (KC > kMaxFixedClasses) {
        f(std::integral_constant<int, 0>{});
    } else {
        if (K == KC)
            f(std::integral_constant<int, KC>{});
        else
            with_class_count<KC + 1>(K, f);
    }
}

}  // namespace detail

// Runs the fused pass over every row of X. With out.grad null no gradient work
// is done (grad and grad_intercept are not written).
template <class Matrix>
void multiclass_pass(const Matrix& X, const MulticlassModel& m, const ClassCellsView& cells,
                     const MulticlassCosts& costs, int n_threads, MulticlassPassOutput& out) {
    const std::int64_t n = X.n_rows;
    const std::int64_t d = X.n_cols;
    const std::int64_t K = m.n_classes;
    const std::int64_t n_cells = cells.n_cells;
    const bool gradient = out.grad != nullptr;
    // Below ~1k rows per thread the private buffers cost more than they save.
    const int threads = effective_threads(n_threads, n, 1024);
    const detail::CellCosts obj(costs.objective, n_cells, K), con(costs.constraints, n_cells, K);

    std::vector<detail::MulticlassScratch> scratch(static_cast<std::size_t>(threads));
    parallel_chunks(threads, [&](int t) {
        detail::MulticlassScratch& acc = scratch[static_cast<std::size_t>(t)];
        acc.init(n_cells, d, K, gradient);
        std::int64_t begin, end;
        chunk_range(n, threads, t, begin, end);
        detail::with_class_count(K, [&](auto kc) {
            detail::multiclass_chunk<decltype(kc)::value>(X, m, cells, costs, obj, con, gradient, begin, end, acc);
        });
    });

    std::fill(out.counts, out.counts + n_cells * K, 0.0);
    if (gradient) {
        std::fill(out.grad, out.grad + d * K, 0.0);
        std::fill(out.grad_intercept, out.grad_intercept + K, 0.0);
    }
    out.proxy_value = out.objective_value = out.constraint_value = 0.0;
    out.n_nonfinite_scores = 0;
    for (const detail::MulticlassScratch& acc : scratch) {
        for (std::int64_t q = 0; q < n_cells * K; ++q) out.counts[q] += acc.counts[static_cast<std::size_t>(q)];
        if (gradient) {
            for (std::int64_t q = 0; q < d * K; ++q) out.grad[q] += acc.grad[static_cast<std::size_t>(q)];
            for (std::int64_t k = 0; k < K; ++k)
                out.grad_intercept[k] += acc.grad_intercept[static_cast<std::size_t>(k)];
        }
        out.proxy_value += acc.proxy;
        out.objective_value += acc.objective;
        out.constraint_value += acc.constraint;
        out.n_nonfinite_scores += acc.nonfinite;
    }
}

// The K scores of every row into out (n_rows, K), row-major; returns the number
// of rows with a non-finite score. Each row's scores are those of the pass.
template <class Matrix>
std::int64_t multiclass_scores(const Matrix& X, const MulticlassModel& m, int n_threads, double* out) {
    const std::int64_t n = X.n_rows;
    const int threads = effective_threads(n_threads, n, 1024);
    std::vector<std::int64_t> nonfinite(static_cast<std::size_t>(threads), 0);
    parallel_chunks(threads, [&](int t) {
        std::int64_t begin, end;
        chunk_range(n, threads, t, begin, end);
        detail::with_class_count(m.n_classes, [&](auto kc) {
            nonfinite[static_cast<std::size_t>(t)] =
                detail::scores_chunk<decltype(kc)::value>(X, m, begin, end, out);
        });
    });
    std::int64_t total = 0;
    for (const std::int64_t c : nonfinite) total += c;
    return total;
}

}  // namespace rateopt
