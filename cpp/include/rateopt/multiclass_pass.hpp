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
//   hinge    max_{k != t} D_k max(0, m + s_k - s_t)  (slack-rescaled
//            Crammer-Singer, margin m > 0, 1 by default); slope at the
//            maximizing k* (lowest index on ties), when the loss is > 0:
//            +D_k* at k*, -D_k* at t. The softmax does not use m (as the
//            two-class logistic proxy does not).
// Both bound max D 1[yhat != t] >= a_yhat - a_t from above (hinge with m >= 1:
// at yhat != t, m + s_yhat - s_t >= 1; softmax: logsumexp(s) - s_t >= log 2 > 0
// there, so it bounds the indicator up to the factor 1/log 2).
//
// Memory layout: coef is feature-major (n_features, K), so the K weights of
// feature j are K contiguous doubles. Per stored entry x_ij (CSR) or element
// (dense) the pass loads x_ij and j once and does K multiply-adds into a
// K-length score buffer; the gradient scatter is the same per entry, into the
// K contiguous doubles of grad[j, :], and is skipped for a row whose slope
// vector is zero. For K = 2..10 (kMaxFixedClasses) the class count is a
// template constant: the score buffer and the row's slopes live in vector
// registers (KVec), and rows go two at a time (pair_scores: a dense row pair
// shares each load of coef[j, :]; a CSR pair interleaves two short add
// chains), without changing any sum's order. Larger K takes the generic loop
// (about half as fast). The loops read coef, and write each thread's gradient,
// through 64-byte aligned copies whose rows are padded to a multiple of 4
// doubles (padded_stride), so that no vector access splits a cache line. The
// softmax's exponentials are a vectorized exp (fast_exp.hpp): per CSR row they
// cost as much as the row's entries. Cost: O(K nnz(X)) per call (twice that
// with the gradient), with X read once.
//
// Parallelism: rows split into contiguous static chunks, one per requested
// thread (parallel_chunks); each chunk accumulates counts, values and the
// gradient in private scratch, reduced in chunk order: a fixed requested
// thread count gives bit-identical results whatever team OpenMP provides.
//
// Minibatches: with `rows` given, only those rows are visited (repeats allowed,
// in the given order) and every sum (counts, values, proxy, gradients) is
// scaled by n_rows / n_batch, as in the two-class rate kernel (rate_kernel.hpp):
// the full-data cell weights are kept, so the scaled sums are unbiased
// estimates of the full pass's. Without rows the pass is the full one, bit for
// bit (no scaling).
//
// Rows whose scores are not finite (overflow, or inf - inf from a value edited
// after validation) are skipped and counted: the caller must treat a nonzero
// count as an error. Inputs are assumed validated (shapes, cell ids in range,
// finite costs and model, proxy kinds): the Python boundary checks them once.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "fast_exp.hpp"
#include "matrix_view.hpp"
#include "parallel.hpp"

// The chunk loops are built for AVX2+FMA and for the baseline ISA, chosen at
// load time, where target_clones is supported (GCC on x86-64 glibc: it
// dispatches through an IFUNC; see kernel_block.hpp); elsewhere one baseline
// build. With FMA the multiply-adds round once: results differ from the
// baseline build's in the last bits, and are still bit-identical run to run
// on one machine for a fixed thread count.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__)
#define ROPT_MULTICLASS_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ROPT_MULTICLASS_CLONES
#endif

// The per-row terms are forced inline into the chunk loops, so that each clone
// compiles them for its own ISA (an out-of-line copy is baseline code):
// ROPT_ALWAYS_INLINE (fast_exp.hpp) on functions, ROPT_LAMBDA_INLINE on lambdas.
#if defined(__GNUC__)
#define ROPT_LAMBDA_INLINE __attribute__((always_inline))
#else
#define ROPT_LAMBDA_INLINE
#endif

namespace rateopt {

// The proxy of one cost table (the Python table MULTICLASS_PROXIES).
enum class MulticlassProxy : std::int32_t { softmax = 0, hinge = 1 };

inline bool valid_multiclass_proxy(std::int32_t code) { return code == 0 || code == 1; }

// The class count up to which the pass is compiled for a constant K.
constexpr int kMaxFixedClasses = 10;

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
    // in: whether proxy_value is wanted. Without it no row's softmax log is
    // taken (a tenth of a softmax pass) and proxy_value is NaN; every other
    // output is the same, bit for bit.
    bool want_proxy_value = true;
};

namespace detail {

// ---- the entries of one row, for each layout --------------------------------
// f(j, x_ij) for every stored entry of row i (CSR: in stored order, duplicates
// visited separately, i.e. summed; dense: every column in order).

template <class T, class F>
ROPT_ALWAYS_INLINE void for_each_entry(const DenseView<T>& X, std::int64_t i, F&& f) {
    const T* x = X.data + i * X.n_cols;
    for (std::int64_t j = 0; j < X.n_cols; ++j) f(j, static_cast<double>(x[j]));
}

template <class T, class I, class F>
ROPT_ALWAYS_INLINE void for_each_entry(const CsrView<T, I>& X, std::int64_t i, F&& f) {
    const std::int64_t end = static_cast<std::int64_t>(X.indptr[i + 1]);
    const T* __restrict x = X.data;
    const I* __restrict idx = X.indices;
    for (std::int64_t p = static_cast<std::int64_t>(X.indptr[i]); p < end; ++p)
        f(static_cast<std::int64_t>(idx[p]), static_cast<double>(x[p]));
}

// ---- K doubles in registers -------------------------------------------------
// KVec<KC> holds KC doubles as 4-lane and 2-lane vectors (GCC/Clang vector
// extensions: SSE2 pairs in the baseline build, AVX2 registers in the
// x86-64-v3 clone) plus a scalar for odd KC; elsewhere as plain doubles. Each
// lane does the scalar operation acc_k += x * c_k, so every layout and build
// sums in the same order (the v3 clone contracts it into one FMA).
#if defined(__GNUC__)
#define ROPT_KVEC_EXT 1
typedef double kvec4 __attribute__((vector_size(32)));
typedef double kvec2 __attribute__((vector_size(16)));
#endif

template <int KC>
struct KVec {
#if defined(ROPT_KVEC_EXT)
    static constexpr int n4 = KC / 4, n2 = (KC % 4) / 2, n1 = KC % 2;
    std::array<kvec4, n4> q;
    std::array<kvec2, n2> h;
    std::array<double, n1> r;

    ROPT_ALWAYS_INLINE void zero() {
        for (int a = 0; a < n4; ++a) q[a] = kvec4{0.0, 0.0, 0.0, 0.0};
        for (int a = 0; a < n2; ++a) h[a] = kvec2{0.0, 0.0};
        for (int a = 0; a < n1; ++a) r[a] = 0.0;
    }
    ROPT_ALWAYS_INLINE void load(const double* p) {
        for (int a = 0; a < n4; ++a) std::memcpy(&q[a], p + 4 * a, sizeof(kvec4));
        for (int a = 0; a < n2; ++a) std::memcpy(&h[a], p + 4 * n4 + 2 * a, sizeof(kvec2));
        for (int a = 0; a < n1; ++a) r[a] = p[KC - 1];
    }
    ROPT_ALWAYS_INLINE void store(double* p) const {
        for (int a = 0; a < n4; ++a) std::memcpy(p + 4 * a, &q[a], sizeof(kvec4));
        for (int a = 0; a < n2; ++a) std::memcpy(p + 4 * n4 + 2 * a, &h[a], sizeof(kvec2));
        for (int a = 0; a < n1; ++a) p[KC - 1] = r[a];
    }
    // this += x * c[0..KC)
    ROPT_ALWAYS_INLINE void madd(double x, const double* c) {
        for (int a = 0; a < n4; ++a) {
            kvec4 v;
            std::memcpy(&v, c + 4 * a, sizeof(kvec4));
            q[a] += x * v;
        }
        for (int a = 0; a < n2; ++a) {
            kvec2 v;
            std::memcpy(&v, c + 4 * n4 + 2 * a, sizeof(kvec2));
            h[a] += x * v;
        }
        for (int a = 0; a < n1; ++a) r[a] += x * c[KC - 1];
    }
    // this += x * g
    ROPT_ALWAYS_INLINE void madd(double x, const KVec& g) {
        for (int a = 0; a < n4; ++a) q[a] += x * g.q[a];
        for (int a = 0; a < n2; ++a) h[a] += x * g.h[a];
        for (int a = 0; a < n1; ++a) r[a] += x * g.r[a];
    }
    // this += c[0..KC)
    ROPT_ALWAYS_INLINE void add(const double* c) {
        KVec t;
        t.load(c);
        for (int a = 0; a < n4; ++a) q[a] += t.q[a];
        for (int a = 0; a < n2; ++a) h[a] += t.h[a];
        for (int a = 0; a < n1; ++a) r[a] += t.r[a];
    }
    // this = max(this - top, lo), lane by lane (this - top < lo ? lo : this - top)
    ROPT_ALWAYS_INLINE void sub_clamp(double top, double lo) {
        const kvec4 l4 = {lo, lo, lo, lo};
        const kvec2 l2 = {lo, lo};
        for (int a = 0; a < n4; ++a) {
            const kvec4 x = q[a] - top;
            q[a] = x < l4 ? l4 : x;
        }
        for (int a = 0; a < n2; ++a) {
            const kvec2 x = h[a] - top;
            h[a] = x < l2 ? l2 : x;
        }
        for (int a = 0; a < n1; ++a) {
            const double x = r[a] - top;
            r[a] = x < lo ? lo : x;
        }
    }
#else
    double v[KC];
    ROPT_ALWAYS_INLINE void zero() {
        for (int k = 0; k < KC; ++k) v[k] = 0.0;
    }
    ROPT_ALWAYS_INLINE void load(const double* p) {
        for (int k = 0; k < KC; ++k) v[k] = p[k];
    }
    ROPT_ALWAYS_INLINE void store(double* p) const {
        for (int k = 0; k < KC; ++k) p[k] = v[k];
    }
    ROPT_ALWAYS_INLINE void madd(double x, const double* c) {
        for (int k = 0; k < KC; ++k) v[k] += x * c[k];
    }
    ROPT_ALWAYS_INLINE void madd(double x, const KVec& g) {
        for (int k = 0; k < KC; ++k) v[k] += x * g.v[k];
    }
    ROPT_ALWAYS_INLINE void add(const double* c) {
        for (int k = 0; k < KC; ++k) v[k] += c[k];
    }
    ROPT_ALWAYS_INLINE void sub_clamp(double top, double lo) {
        for (int k = 0; k < KC; ++k) {
            const double x = v[k] - top;
            v[k] = x < lo ? lo : x;
        }
    }
#endif
};

// grad[j, :] += x g, through registers.
template <int KC>
ROPT_ALWAYS_INLINE void scatter_one(double* o, double x, const KVec<KC>& g) {
    KVec<KC> t;
    t.load(o);
    t.madd(x, g);
    t.store(o);
}

// The row stride of the coef and gradient tables the chunk loops read: for a
// constant K >= 3 a multiple of 4 doubles, so that on a 64-byte aligned table
// no 32-byte access to a row crosses a cache line (K = 10: 80-byte rows split
// a quarter of them); the padding columns are zero and never read back.
constexpr std::int64_t padded_stride(std::int64_t K) {
    return K <= 2 || K > kMaxFixedClasses ? K : (K + 3) / 4 * 4;
}

// A zeroed table of doubles whose first element is 64-byte aligned.
struct AlignedTable {
    std::vector<double> buf;
    double* ptr = nullptr;
    void assign(std::size_t size) {
        buf.assign(size + 8, 0.0);
        const std::size_t misalign = reinterpret_cast<std::uintptr_t>(buf.data()) % 64;
        ptr = buf.data() + (misalign ? (64 - misalign) / sizeof(double) : 0);
    }
};

// coef (n_features, K) copied with row stride padded_stride(K).
inline void pad_coef(const MulticlassModel& m, std::int64_t n_features, AlignedTable& out) {
    const std::int64_t K = m.n_classes, KS = padded_stride(K);
    out.assign(static_cast<std::size_t>(n_features * KS));
    for (std::int64_t j = 0; j < n_features; ++j)
        for (std::int64_t k = 0; k < K; ++k) out.ptr[j * KS + k] = m.coef[j * K + k];
}

// ---- the K scores and the gradient scatter of one row -----------------------
// KC > 0: K == KC, a compile-time constant (the buffers are local arrays the
// compiler keeps in registers); KC == 0: K at run time, through memory.

// s[k] = sum_j x_ij coef[j, k] + intercept[k], accumulated in stored order.
template <int KC, class Matrix>
ROPT_ALWAYS_INLINE void row_scores(const Matrix& X, std::int64_t i, const MulticlassModel& m, double* s) {
    if constexpr (KC > 0) {
        constexpr std::int64_t KS = padded_stride(KC);
        KVec<KC> acc;
        acc.zero();
        const double* __restrict coef = m.coef;
        for_each_entry(X, i, [&](std::int64_t j, double x) ROPT_LAMBDA_INLINE { acc.madd(x, coef + j * KS); });
        acc.add(m.intercept);  // + intercept[k] after the entries, as in the generic loop
        acc.store(s);
    } else {
        const std::int64_t K = m.n_classes;
        std::fill(s, s + K, 0.0);
        const double* __restrict coef = m.coef;
        for_each_entry(X, i, [&](std::int64_t j, double x) ROPT_LAMBDA_INLINE {
            const double* c = coef + j * K;
            for (std::int64_t k = 0; k < K; ++k) s[k] += x * c[k];
        });
        for (std::int64_t k = 0; k < K; ++k) s[k] += m.intercept[k];
    }
}

// grad[j, :] += x_ij g for every entry of row i.
template <int KC, class Matrix>
ROPT_ALWAYS_INLINE void row_scatter(const Matrix& X, std::int64_t i, const double* g, std::int64_t K, double* __restrict grad) {
    if constexpr (KC > 0) {
        constexpr std::int64_t KS = padded_stride(KC);
        KVec<KC> gl;
        gl.load(g);
        for_each_entry(X, i, [&](std::int64_t j, double x) ROPT_LAMBDA_INLINE {
            scatter_one(grad + j * KS, x, gl);
        });
    } else {
        for_each_entry(X, i, [&](std::int64_t j, double x) ROPT_LAMBDA_INLINE {
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
// use them): logsumexp(s) = top + log(sum) (the log is taken later, a block of
// rows at a time: see PendingProxy) and, when slopes are asked for, p = softmax(s).
template <int KC>
struct SoftmaxRow {
    bool ready = false;
    double top = 0.0, sum = 0.0;
    ROPT_ALWAYS_INLINE void compute(const double* s, std::int64_t K_run, double* p, bool want_p) {
        const std::int64_t K = KC > 0 ? KC : K_run;
        top = s[0];
        for (std::int64_t k = 1; k < K; ++k) top = s[k] > top ? s[k] : top;
        if constexpr (KC > 0) {
            // In registers, stored whole: the exp loop's vector loads of p then
            // read what whole vector stores wrote (element stores followed by a
            // vector load stall store forwarding, ~15 cycles a row).
            KVec<KC> x;
            x.load(s);
            x.sub_clamp(top, -708.0);
            x.store(p);
        } else {
            for (std::int64_t k = 0; k < K; ++k) {
                const double x = s[k] - top;
                p[k] = x < -708.0 ? -708.0 : x;
            }
        }
        for (std::int64_t k = 0; k < K; ++k) p[k] = exp_nonpositive(p[k]);  // clamped above
        sum = 0.0;
        for (std::int64_t k = 0; k < K; ++k) sum += p[k];
        if (want_p) {
            const double inv = 1.0 / sum;
            for (std::int64_t k = 0; k < K; ++k) p[k] *= inv;
        }
        ready = true;
    }
};

// One table's proxy value at the row's scores s (unweighted); its slopes added
// to g when g is not null; margin is the hinge's (the softmax ignores it). p is the row's softmax scratch (K,).
// A softmax table's value, max_gap (logsumexp(s) - s_t), waits for the row's
// log: it returns 0 and sets *soft = true (the caller records max_gap and s_t).
template <int KC>
ROPT_ALWAYS_INLINE double cost_proxy(MulticlassProxy kind, const double* s, const double* gap, double max_gap, std::int64_t t,
                         std::int64_t K_run, double margin, SoftmaxRow<KC>& sm, double* p, double* g, bool* soft) {
    const std::int64_t K = KC > 0 ? KC : K_run;
    if (max_gap == 0.0) return 0.0;
    if (kind == MulticlassProxy::hinge) {
        const double st = s[t];
        double loss = 0.0;
        std::int64_t top = -1;
        for (std::int64_t k = 0; k < K; ++k) {
            // D_t = 0: t's own term is 0 and never the maximizer of a positive loss.
            const double v = gap[k] * std::max(0.0, margin + s[k] - st);
            top = v > loss ? k : top;
            loss = v > loss ? v : loss;
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
    *soft = true;
    return 0.0;
}

// One row's proxy terms whose softmax value waits for the log: w (lo + lc),
// lo = fo ? mo (top + log(sum) - so) : lo, the same for lc; summed in row
// order by flush_pending, with the same operations as at once.
struct PendingProxy {
    double w, lo, lc, mo, so, mc, sc, top, sum;
    bool fo, fc;
}; 

// The rows whose softmax log waits (RowTerms::flush_pending).
constexpr std::int64_t kPendingRows = 256;

// One chunk's private accumulators, and one row's scores s, softmax p and slopes g (K,).
struct alignas(64) MulticlassScratch {
    std::vector<double> counts, grad_intercept, s, p, g;
    std::vector<PendingProxy> pending;  // (kPendingRows,)
    AlignedTable grad;  // (n_features, padded_stride(K))
    double proxy = 0.0, objective = 0.0, constraint = 0.0;
    std::int64_t nonfinite = 0;
    void init(std::int64_t n_cells, std::int64_t n_features, std::int64_t K, bool gradient) {
        counts.assign(static_cast<std::size_t>(n_cells * K), 0.0);
        grad.assign(gradient ? static_cast<std::size_t>(n_features * padded_stride(K)) : 0);
        grad_intercept.assign(static_cast<std::size_t>(K), 0.0);
        s.assign(static_cast<std::size_t>(K), 0.0);
        p.assign(static_cast<std::size_t>(K), 0.0);
        g.assign(static_cast<std::size_t>(K), 0.0);
        pending.resize(static_cast<std::size_t>(kPendingRows));
    }
};

// Whether all K scores are finite (s - s is 0 for a finite s, NaN otherwise).
template <int KC>
ROPT_ALWAYS_INLINE bool scores_finite(const double* s, std::int64_t K_run) {
    const std::int64_t K = KC > 0 ? KC : K_run;
    double z = 0.0;
    for (std::int64_t k = 0; k < K; ++k) z += s[k] - s[k];
    return z == 0.0;
}

// Lowest index of the largest score (numpy.argmax; scores are finite here).
template <int KC>
ROPT_ALWAYS_INLINE std::int64_t argmax(const double* s, std::int64_t K_run) {
    const std::int64_t K = KC > 0 ? KC : K_run;
    std::int64_t top = 0;
    double best = s[0];
    for (std::int64_t k = 1; k < K; ++k) {  // selects, not branches: the winner is unpredictable
        top = s[k] > best ? k : top;
        best = s[k] > best ? s[k] : best;
    }
    return top;
}

// The terms of row i at its finite scores s: counts, exact values and
// proxies into acc and the running sums; with gradient, the row's weighted
// slopes into g (K,). Returns whether g is nonzero (the row must be scattered).
template <int KC>
struct RowTerms {
    const ClassCellsView& cells;
    const MulticlassCosts& costs;
    const CellCosts& obj;
    const CellCosts& con;
    std::int64_t K_run;
    bool gradient;
    MulticlassScratch& acc;
    bool any_softmax;
    double margin;
    double proxy = 0.0, objective = 0.0, constraint = 0.0;
    std::int64_t n_pending = 0;

    // proxy += the pending rows' terms, in row order.
    void flush_pending() {
        for (std::int64_t q = 0; q < n_pending; ++q) {
            const PendingProxy& e = acc.pending[static_cast<std::size_t>(q)];
            double lo = e.lo, lc = e.lc;
            if (e.fo || e.fc) {
                const double lse = e.top + std::log(e.sum);
                if (e.fo) lo = e.mo * (lse - e.so);
                if (e.fc) lc = e.mc * (lse - e.sc);
            }
            proxy += e.w * (lo + lc);
        }
        n_pending = 0;
    }

    ROPT_ALWAYS_INLINE bool operator()(std::int64_t i, const double* s, double* g) {
        const std::int64_t K = KC > 0 ? KC : K_run;
        const double w = cells.weights[i];
        if (w == 0.0) return false;  // every term of the row is w times something finite
        const std::int64_t c = cells.cells[i];
        const std::int64_t yhat = argmax<KC>(s, K);
        acc.counts[static_cast<std::size_t>(c * K + yhat)] += w;
        objective += w * costs.objective[c * K + yhat];
        constraint += w * costs.constraints[c * K + yhat];
        SoftmaxRow<KC> sm;
        double* p = acc.p.data();
        double* gr = gradient ? g : nullptr;
        if (gr)
            for (std::int64_t k = 0; k < K; ++k) g[k] = 0.0;
        const std::size_t row = static_cast<std::size_t>(c * K);
        bool fo = false, fc = false;
        const double lo = cost_proxy<KC>(costs.objective_proxy, s, obj.gap.data() + row, obj.max_gap[c],
                                         obj.best[c], K, margin, sm, p, gr, &fo);
        const double lc = cost_proxy<KC>(costs.constraint_proxy, s, con.gap.data() + row, con.max_gap[c],
                                         con.best[c], K, margin, sm, p, gr, &fc);
        if (!any_softmax) {
            proxy += w * (lo + lc);
        } else {
            // The row's log (if any) is taken later, a block of rows at once,
            // out of this loop (a libm call here spills the vector registers).
            PendingProxy& e = acc.pending[static_cast<std::size_t>(n_pending++)];
            e = PendingProxy{w, lo, lc, obj.max_gap[c], s[obj.best[c]], con.max_gap[c], s[con.best[c]],
                             sm.top, sm.sum, fo, fc};
            if (n_pending == kPendingRows) flush_pending();
        }
        if (!gr) return false;
        double nz = 0.0;
        for (std::int64_t k = 0; k < K; ++k) {
            g[k] *= w;
            nz += g[k] != 0.0 ? 1.0 : 0.0;
        }
        if (nz == 0.0) return false;
        double* gi = acc.grad_intercept.data();
        for (std::int64_t k = 0; k < K; ++k) gi[k] += g[k];
        return true;
    }
};

// Rows i0 and i1 at once (K constant; i1 = i0 + 1 in a full pass, any two rows
// of a minibatch). Dense: each coef[j, :] loaded once for both rows, and twice
// the independent add chains. Each score is summed in the same order as
// row_scores', and each grad[j, k] gets row i0's term, then row i1's, as two
// row_scatter calls would: the pairing changes no bit.
template <int KC, class T>
ROPT_ALWAYS_INLINE void pair_scores(const DenseView<T>& X, std::int64_t i0, std::int64_t i1, const MulticlassModel& m,
                                    double* s0, double* s1) {
    constexpr std::int64_t KS = padded_stride(KC);
    KVec<KC> a0, a1;
    a0.zero();
    a1.zero();
    const T* x0 = X.data + i0 * X.n_cols;
    const T* x1 = X.data + i1 * X.n_cols;
    const double* __restrict coef = m.coef;
    for (std::int64_t j = 0; j < X.n_cols; ++j) {
        KVec<KC> c;
        c.load(coef + j * KS);
        a0.madd(static_cast<double>(x0[j]), c);
        a1.madd(static_cast<double>(x1[j]), c);
    }
    a0.add(m.intercept);
    a1.add(m.intercept);
    a0.store(s0);
    a1.store(s1);
}

template <int KC, class T>
ROPT_ALWAYS_INLINE void pair_scatter(const DenseView<T>& X, std::int64_t i0, std::int64_t i1, const double* g0,
                                     const double* g1, double* __restrict grad) {
    constexpr std::int64_t KS = padded_stride(KC);
    KVec<KC> h0, h1;
    h0.load(g0);
    h1.load(g1);
    const T* x0 = X.data + i0 * X.n_cols;
    const T* x1 = X.data + i1 * X.n_cols;
    for (std::int64_t j = 0; j < X.n_cols; ++j) {
        double* o = grad + j * KS;
        KVec<KC> t;
        t.load(o);
        t.madd(static_cast<double>(x0[j]), h0);
        t.madd(static_cast<double>(x1[j]), h1);
        t.store(o);
    }
}

// CSR rows i0 and i1 at once: their entries interleaved, for twice the
// independent add chains (a CSR row is short: its chain latency, not the
// loads, bounds one row alone). Each row is summed in its stored order, as in
// row_scores; the scatter is row_scatter's, row i0 then row i1.
template <int KC, class T, class I>
ROPT_ALWAYS_INLINE void pair_scores(const CsrView<T, I>& X, std::int64_t i0, std::int64_t i1, const MulticlassModel& m,
                                    double* s0, double* s1) {
    constexpr std::int64_t KS = padded_stride(KC);
    KVec<KC> a0, a1;
    a0.zero();
    a1.zero();
    const T* __restrict x = X.data;
    const I* __restrict idx = X.indices;
    const double* __restrict coef = m.coef;
    std::int64_t p0 = static_cast<std::int64_t>(X.indptr[i0]);
    const std::int64_t e0 = static_cast<std::int64_t>(X.indptr[i0 + 1]);
    std::int64_t p1 = static_cast<std::int64_t>(X.indptr[i1]);
    const std::int64_t e1 = static_cast<std::int64_t>(X.indptr[i1 + 1]);
    for (; p0 < e0 && p1 < e1; ++p0, ++p1) {
        a0.madd(static_cast<double>(x[p0]), coef + static_cast<std::int64_t>(idx[p0]) * KS);
        a1.madd(static_cast<double>(x[p1]), coef + static_cast<std::int64_t>(idx[p1]) * KS);
    }
    for (; p0 < e0; ++p0) a0.madd(static_cast<double>(x[p0]), coef + static_cast<std::int64_t>(idx[p0]) * KS);
    for (; p1 < e1; ++p1) a1.madd(static_cast<double>(x[p1]), coef + static_cast<std::int64_t>(idx[p1]) * KS);
    a0.add(m.intercept);
    a1.add(m.intercept);
    a0.store(s0);
    a1.store(s1);
}

template <int KC, class T, class I>
ROPT_ALWAYS_INLINE void pair_scatter(const CsrView<T, I>& X, std::int64_t i0, std::int64_t i1, const double* g0,
                                     const double* g1, double* __restrict grad) {
    row_scatter<KC>(X, i0, g0, KC, grad);
    row_scatter<KC>(X, i1, g1, KC, grad);
}

// Visits [begin, end) of the pass, into acc: rows begin..end-1, or with rows
// given the rows rows[begin..end). With K constant, two rows at a time
// (pair_scores, pair_scatter), each row's terms right after its scores.
template <int KC, class Matrix>
ROPT_MULTICLASS_CLONES void multiclass_chunk(const Matrix& X, const MulticlassModel& m,
                                             const ClassCellsView& cells, const MulticlassCosts& costs,
                                             const CellCosts& obj, const CellCosts& con, bool gradient,
                                             bool value, double margin, const std::int64_t* rows,
                                             std::int64_t begin, std::int64_t end, MulticlassScratch& acc) {
    const std::int64_t K = KC > 0 ? KC : m.n_classes;
    // Without the value, a softmax table's term (its log) is never formed: the
    // rows add their hinge terms only, and the caller discards the sum.
    const bool any_softmax = value && (costs.objective_proxy == MulticlassProxy::softmax ||
                                       costs.constraint_proxy == MulticlassProxy::softmax);
    RowTerms<KC> terms{cells, costs, obj, con, K, gradient, acc, any_softmax, margin};
    double* grad = acc.grad.ptr;
    double* s = acc.s.data();
    double* g = acc.g.data();
    std::int64_t nonfinite = 0;
    std::int64_t i = begin;
    if constexpr (KC > 0) {
        double sp[2][KC], gp[2][KC];
        for (; i + 2 <= end; i += 2) {
            const std::int64_t r2[2] = {rows ? rows[i] : i, rows ? rows[i + 1] : i + 1};
            pair_scores<KC>(X, r2[0], r2[1], m, sp[0], sp[1]);
            bool on[2] = {false, false};
            for (int r = 0; r < 2; ++r) {  // one copy of the row's terms (they are inlined)
                if (scores_finite<KC>(sp[r], K))
                    on[r] = terms(r2[r], sp[r], gp[r]);
                else
                    ++nonfinite;
            }
            if (on[0] && on[1])
                pair_scatter<KC>(X, r2[0], r2[1], gp[0], gp[1], grad);
            else if (on[0] || on[1])
                row_scatter<KC>(X, on[0] ? r2[0] : r2[1], on[0] ? gp[0] : gp[1], K, grad);
        }
    }
    for (; i < end; ++i) {
        const std::int64_t row = rows ? rows[i] : i;
        row_scores<KC>(X, row, m, s);
        if (!scores_finite<KC>(s, K)) {
            ++nonfinite;
            continue;
        }
        if (terms(row, s, g)) row_scatter<KC>(X, row, g, K, grad);
    }
    terms.flush_pending();
    acc.proxy = terms.proxy;
    acc.objective = terms.objective;
    acc.constraint = terms.constraint;
    acc.nonfinite = nonfinite;
}

// Rows [begin, end) of the scores, into out (n_rows, K); returns the count of
// rows with a non-finite score.
template <int KC, class Matrix>
ROPT_MULTICLASS_CLONES std::int64_t scores_chunk(const Matrix& X, const MulticlassModel& m, std::int64_t begin,
                                                 std::int64_t end, double* out) {
    const std::int64_t K = KC > 0 ? KC : m.n_classes;
    std::int64_t nonfinite = 0;
    for (std::int64_t i = begin; i < end; ++i) {
        double* s = out + i * K;
        row_scores<KC>(X, i, m, s);
        nonfinite += scores_finite<KC>(s, K) ? 0 : 1;
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

// Runs the fused pass over every row of X, or over the n_batch rows `rows`
// (a minibatch, sums scaled by n_rows / n_batch). margin is the hinge's. With
// out.grad null no gradient work is done (grad and grad_intercept are not written).
template <class Matrix>
void multiclass_pass(const Matrix& X, const MulticlassModel& m, const ClassCellsView& cells,
                     const MulticlassCosts& costs, double margin, const std::int64_t* rows, std::int64_t n_batch,
                     int n_threads, MulticlassPassOutput& out) {
    const std::int64_t n = rows ? n_batch : X.n_rows;
    const std::int64_t d = X.n_cols;
    const std::int64_t K = m.n_classes;
    const std::int64_t n_cells = cells.n_cells;
    const bool gradient = out.grad != nullptr;
    // Below ~1k rows per thread the private buffers cost more than they save.
    const int threads = effective_threads(n_threads, n, 1024);
    const detail::CellCosts obj(costs.objective, n_cells, K), con(costs.constraints, n_cells, K);
    const std::int64_t KS = detail::padded_stride(K);
    detail::AlignedTable coef;
    detail::pad_coef(m, d, coef);
    const MulticlassModel mp{coef.ptr, m.intercept, K};

    std::vector<detail::MulticlassScratch> scratch(static_cast<std::size_t>(threads));
    parallel_chunks(threads, [&](int t) {
        detail::MulticlassScratch& acc = scratch[static_cast<std::size_t>(t)];
        acc.init(n_cells, d, K, gradient);
        std::int64_t begin, end;
        chunk_range(n, threads, t, begin, end);
        detail::with_class_count(K, [&](auto kc) {
            detail::multiclass_chunk<decltype(kc)::value>(X, mp, cells, costs, obj, con, gradient,
                                                          out.want_proxy_value, margin, rows, begin, end, acc);
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
            for (std::int64_t j = 0; j < d; ++j)
                for (std::int64_t k = 0; k < K; ++k) out.grad[j * K + k] += acc.grad.ptr[j * KS + k];
            for (std::int64_t k = 0; k < K; ++k)
                out.grad_intercept[k] += acc.grad_intercept[static_cast<std::size_t>(k)];
        }
        out.proxy_value += acc.proxy;
        out.objective_value += acc.objective;
        out.constraint_value += acc.constraint;
        out.n_nonfinite_scores += acc.nonfinite;
    }
    if (rows) {  // a minibatch: unbiased estimates of the full pass's sums
        const double scale = n_batch > 0 ? static_cast<double>(X.n_rows) / static_cast<double>(n_batch) : 0.0;
        for (std::int64_t q = 0; q < n_cells * K; ++q) out.counts[q] *= scale;
        if (gradient) {
            for (std::int64_t q = 0; q < d * K; ++q) out.grad[q] *= scale;
            for (std::int64_t k = 0; k < K; ++k) out.grad_intercept[k] *= scale;
        }
        out.proxy_value *= scale;
        out.objective_value *= scale;
        out.constraint_value *= scale;
    }
    if (!out.want_proxy_value) out.proxy_value = std::numeric_limits<double>::quiet_NaN();
}

// The K scores of every row into out (n_rows, K), row-major; returns the number
// of rows with a non-finite score. Each row's scores are those of the pass.
template <class Matrix>
std::int64_t multiclass_scores(const Matrix& X, const MulticlassModel& m, int n_threads, double* out) {
    const std::int64_t n = X.n_rows;
    const int threads = effective_threads(n_threads, n, 1024);
    detail::AlignedTable coef;
    detail::pad_coef(m, X.n_cols, coef);
    const MulticlassModel mp{coef.ptr, m.intercept, m.n_classes};
    std::vector<std::int64_t> nonfinite(static_cast<std::size_t>(threads), 0);
    parallel_chunks(threads, [&](int t) {
        std::int64_t begin, end;
        chunk_range(n, threads, t, begin, end);
        detail::with_class_count(m.n_classes, [&](auto kc) {
            nonfinite[static_cast<std::size_t>(t)] =
                detail::scores_chunk<decltype(kc)::value>(X, mp, begin, end, out);
        });
    });
    std::int64_t total = 0;
    for (const std::int64_t c : nonfinite) total += c;
    return total;
}

}  // namespace rateopt
