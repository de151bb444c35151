// Design
// ------
// Layer: core (no Python types). Kernel blocks K(X, B) between the rows of X
// (dense or CSR, float32/float64) and landmarks B (dense float64, r x d):
//   linear     <x, b>
//   poly       (gamma <x, b> + coef0)^degree
//   rbf        exp(-gamma ||x - b||^2)      with ||x-b||^2 = ||x||^2 + ||b||^2 - 2<x,b>, clipped at 0
//   laplacian  exp(-gamma ||x - b||_1)
// Two ways in:
//   * kernel_block computes everything here, OpenMP over rows (static chunks);
//     for CSR rows the L1 distance is ||b||_1 + sum_{k in nz(x)} (|x_k - b_k| - |b_k|),
//     so the cost is O(nnz(x) r) per row, not O(d r). Norms and distances are
//     taken over columns: a row with unsorted or duplicate entries is first
//     merged (duplicates summed, scipy's meaning) into a per-thread scratch;
//     canonical rows are read in place;
//   * gram_transform turns a block of inner products <x, b> that BLAS computed
//     (X @ B.T) into kernel values in place (for linear, poly and rbf).
// Output rows are written by one thread each: deterministic for any thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "fast_exp.hpp"
#include "matrix_view.hpp"
#include "parallel.hpp"

namespace rateopt {

enum class KernelKind : int { linear = 0, poly = 1, rbf = 2, laplacian = 3 };

struct KernelParams {
    KernelKind kind = KernelKind::rbf;
    double gamma = 1.0;
    double coef0 = 1.0;
    double degree = 3.0;
};


// The RBF transform of one row of inner products, in three simple loops that
// each vectorize (one fused loop with two clamps does not, with GCC): the
// squared distance times gamma, its clamp, then the exponential. `tmp` is the
// row's float64 scratch (it may alias g when Out is double). Built for AVX2+FMA
// and for the baseline ISA, chosen at load time where supported: GCC on x86-64
// glibc only, since target_clones dispatches through an IFUNC, which musl
// (musllinux wheels) lacks; elsewhere (Clang, MSVC, aarch64, macOS) one
// baseline build. __GLIBC__ comes from the C library headers included above.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__)
#define ROPT_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ROPT_MULTIVERSION
#endif

ROPT_MULTIVERSION inline void rbf_exp_row(double* __restrict tmp, std::int64_t r) {
    for (std::int64_t b = 0; b < r; ++b) tmp[b] = tmp[b] < kMaxExpArg ? tmp[b] : kMaxExpArg;
    for (std::int64_t b = 0; b < r; ++b) tmp[b] = exp_nonpositive(-tmp[b]);
}

template <class Out>
void rbf_row_transform(Out* g, std::int64_t r, double xx, const double* __restrict bsq, double gamma,
                       double* __restrict tmp) {
    double top = 0.0;
    for (std::int64_t b = 0; b < r; ++b) {
        const double d2 = xx + bsq[b] - 2.0 * static_cast<double>(g[b]);
        tmp[b] = gamma * (d2 > 0.0 ? d2 : 0.0);
        top = tmp[b] > top ? tmp[b] : top;
    }
    if (top >= kMaxExpArg) {
        // Values below exp(-708) are subnormal or 0: std::exp, rarely, where the
        // fast exp (clamped to normal numbers) would stop at 3.3e-308.
        for (std::int64_t b = 0; b < r; ++b) tmp[b] = std::exp(-tmp[b]);
    } else {
        rbf_exp_row(tmp, r);
    }
    for (std::int64_t b = 0; b < r; ++b) g[b] = static_cast<Out>(tmp[b]);
}

inline double kernel_from_dot(const KernelParams& p, double dot, double xx, double bb) {
    switch (p.kind) {
        case KernelKind::linear:
            return dot;
        case KernelKind::poly:
            return std::pow(p.gamma * dot + p.coef0, p.degree);
        case KernelKind::rbf: {
            double d2 = xx + bb - 2.0 * dot;
            const double arg = p.gamma * (d2 > 0.0 ? d2 : 0.0);
            return arg < kMaxExpArg ? exp_nonpositive(-arg) : std::exp(-arg);  // subnormal or 0 past 708
        }
        default:
            throw std::logic_error("kernel_from_dot: the laplacian kernel needs distances");
    }
}

// Per-landmark squared L2 norms and L1 norms.
inline void landmark_norms(const double* B, std::int64_t r, std::int64_t d, double* sq, double* l1) {
    for (std::int64_t b = 0; b < r; ++b) {
        double s = 0.0, a = 0.0;
        for (std::int64_t k = 0; k < d; ++k) {
            s += B[b * d + k] * B[b * d + k];
            a += std::fabs(B[b * d + k]);
        }
        sq[b] = s;
        l1[b] = a;
    }
}

namespace detail {

template <class T>
void dense_row_kernel(const DenseView<T>& X, std::int64_t i, const double* B, std::int64_t r,
                      const double* bsq, const KernelParams& p, double* row) {
    const std::int64_t d = X.n_cols;
    const T* x = X.data + i * d;
    if (p.kind == KernelKind::laplacian) {
        for (std::int64_t b = 0; b < r; ++b) {
            const double* bb = B + b * d;
            double s = 0.0;
            for (std::int64_t k = 0; k < d; ++k) s += std::fabs(static_cast<double>(x[k]) - bb[k]);
            row[b] = std::exp(-p.gamma * s);
        }
        return;
    }
    double xx = 0.0;
    for (std::int64_t k = 0; k < d; ++k) xx += static_cast<double>(x[k]) * static_cast<double>(x[k]);
    for (std::int64_t b = 0; b < r; ++b) row[b] = kernel_from_dot(p, X.dot(i, B + b * d), xx, bsq[b]);
}

// A CSR row as parallel (column, value) arrays with strictly increasing columns:
// the stored entries themselves when the row is already canonical, otherwise a
// sorted copy in `scratch` with duplicate columns summed (in float64). Norms
// and L1 distances are not linear in the stored entries, so they must be taken
// over columns, not entries: scipy's meaning of duplicates is their sum.
template <class T, class I>
struct CsrRow {
    const I* cols = nullptr;
    const T* vals = nullptr;
    const double* merged_vals = nullptr;  // set instead of vals when merged
    const std::int64_t* merged_cols = nullptr;
    std::int64_t n = 0;

    double value(std::int64_t q) const { return merged_vals ? merged_vals[q] : static_cast<double>(vals[q]); }
    std::int64_t col(std::int64_t q) const {
        return merged_cols ? merged_cols[q] : static_cast<std::int64_t>(cols[q]);
    }
};

struct RowScratch {
    std::vector<std::pair<std::int64_t, double>> entries;
    std::vector<std::int64_t> cols;
    std::vector<double> vals;
};

template <class T, class I>
CsrRow<T, I> canonical_row(const CsrView<T, I>& X, std::int64_t i, RowScratch& scratch) {
    const std::int64_t begin = static_cast<std::int64_t>(X.indptr[i]);
    const std::int64_t end = static_cast<std::int64_t>(X.indptr[i + 1]);
    CsrRow<T, I> row;
    bool canonical = true;
    for (std::int64_t q = begin + 1; q < end && canonical; ++q) canonical = X.indices[q - 1] < X.indices[q];
    if (canonical) {
        row.cols = X.indices + begin;
        row.vals = X.data + begin;
        row.n = end - begin;
        return row;
    }
    auto& e = scratch.entries;
    e.clear();
    for (std::int64_t q = begin; q < end; ++q)
        e.emplace_back(static_cast<std::int64_t>(X.indices[q]), static_cast<double>(X.data[q]));
    // Stable: duplicates are summed in stored order, a fixed order.
    std::stable_sort(e.begin(), e.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    scratch.cols.clear();
    scratch.vals.clear();
    for (const auto& [c, v] : e) {
        if (!scratch.cols.empty() && scratch.cols.back() == c)
            scratch.vals.back() += v;
        else {
            scratch.cols.push_back(c);
            scratch.vals.push_back(v);
        }
    }
    row.merged_cols = scratch.cols.data();
    row.merged_vals = scratch.vals.data();
    row.n = static_cast<std::int64_t>(scratch.cols.size());
    return row;
}

template <class T, class I>
void csr_row_kernel(const CsrView<T, I>& X, std::int64_t i, const double* B, std::int64_t r,
                    const double* bsq, const double* bl1, const KernelParams& p, double* row_out,
                    RowScratch& scratch) {
    const std::int64_t d = X.n_cols;
    const CsrRow<T, I> row = canonical_row(X, i, scratch);
    if (p.kind == KernelKind::laplacian) {
        for (std::int64_t b = 0; b < r; ++b) {
            const double* bb = B + b * d;
            double s = bl1[b];
            for (std::int64_t q = 0; q < row.n; ++q) {
                const double bk = bb[row.col(q)];
                s += std::fabs(row.value(q) - bk) - std::fabs(bk);
            }
            row_out[b] = std::exp(-p.gamma * (s > 0.0 ? s : 0.0));
        }
        return;
    }
    double xx = 0.0;
    for (std::int64_t q = 0; q < row.n; ++q) xx += row.value(q) * row.value(q);
    for (std::int64_t b = 0; b < r; ++b) {
        const double* bb = B + b * d;
        // The dot product is linear in the entries: read a canonical row in place.
        double dot = 0.0;
        if (row.merged_vals)
            for (std::int64_t q = 0; q < row.n; ++q) dot += row.merged_vals[q] * bb[row.merged_cols[q]];
        else
            dot = X.dot(i, bb);
        row_out[b] = kernel_from_dot(p, dot, xx, bsq[b]);
    }
}

template <class Matrix>
struct RowKernel;

template <class T>
struct RowKernel<DenseView<T>> {
    static void run(const DenseView<T>& X, std::int64_t i, const double* B, std::int64_t r, const double* bsq,
                    const double*, const KernelParams& p, double* row, RowScratch&) {
        dense_row_kernel(X, i, B, r, bsq, p, row);
    }
};

template <class T, class I>
struct RowKernel<CsrView<T, I>> {
    static void run(const CsrView<T, I>& X, std::int64_t i, const double* B, std::int64_t r, const double* bsq,
                    const double* bl1, const KernelParams& p, double* row, RowScratch& scratch) {
        csr_row_kernel(X, i, B, r, bsq, bl1, p, row, scratch);
    }
};

}  // namespace detail

// K(X, B) into out (n_rows, r), row-major, of type Out (float or double).
template <class Matrix, class Out>
void kernel_block(const Matrix& X,
                  const double* B,  // in: (r, d) landmarks
                  std::int64_t r, const KernelParams& p, int n_threads,
                  Out* out) {        // out: (n_rows, r)
    std::vector<double> bsq(static_cast<std::size_t>(r)), bl1(static_cast<std::size_t>(r));
    landmark_norms(B, r, X.n_cols, bsq.data(), bl1.data());
    const std::int64_t n = X.n_rows;
    const int threads = effective_threads(n_threads, n * (r > 0 ? r : 1), 1 << 14);
    parallel_chunks(threads, [&](int t) {
        std::vector<double> row(static_cast<std::size_t>(r));
        detail::RowScratch scratch;
        std::int64_t begin, end;
        chunk_range(n, threads, t, begin, end);
        for (std::int64_t i = begin; i < end; ++i) {
            detail::RowKernel<Matrix>::run(X, i, B, r, bsq.data(), bl1.data(), p, row.data(), scratch);
            Out* o = out + i * r;
            for (std::int64_t b = 0; b < r; ++b) o[b] = static_cast<Out>(row[b]);
        }
    });
}

// In place: G (n, r) holds <x_i, b_j> (from BLAS); turn it into kernel values.
// xsq (n,) and bsq (r,) are the squared norms (used by rbf only).
template <class Out>
void gram_transform(Out* G, std::int64_t n, std::int64_t r, const double* xsq, const double* bsq,
                    const KernelParams& p, int n_threads) {
    if (p.kind == KernelKind::laplacian) throw std::invalid_argument("gram_transform: laplacian needs distances");
    if (p.kind == KernelKind::linear) return;
    const int threads = effective_threads(n_threads, n * (r > 0 ? r : 1), 1 << 15);
    parallel_chunks(threads, [&](int t) {
        std::vector<double> tmp(static_cast<std::size_t>(r));
        std::int64_t begin, end;
        chunk_range(n, threads, t, begin, end);
        for (std::int64_t i = begin; i < end; ++i) {
            Out* g = G + i * r;
            const double xx = xsq ? xsq[i] : 0.0;
            if (p.kind == KernelKind::rbf) {
                rbf_row_transform(g, r, xx, bsq, p.gamma, tmp.data());
                continue;
            }
            for (std::int64_t b = 0; b < r; ++b)
                g[b] = static_cast<Out>(kernel_from_dot(p, static_cast<double>(g[b]), xx, bsq ? bsq[b] : 0.0));
        }
    });
}

}  // namespace rateopt
