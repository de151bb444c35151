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
//     so the cost is O(nnz(x) r) per row, not O(d r);
//   * gram_transform turns a block of inner products <x, b> that BLAS computed
//     (X @ B.T) into kernel values in place (for linear, poly and rbf).
// Output rows are written by one thread each: deterministic for any thread count.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

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

inline double kernel_from_dot(const KernelParams& p, double dot, double xx, double bb) {
    switch (p.kind) {
        case KernelKind::linear:
            return dot;
        case KernelKind::poly:
            return std::pow(p.gamma * dot + p.coef0, p.degree);
        case KernelKind::rbf: {
            double d2 = xx + bb - 2.0 * dot;
            return std::exp(-p.gamma * (d2 > 0.0 ? d2 : 0.0));
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

template <class T, class I>
void csr_row_kernel(const CsrView<T, I>& X, std::int64_t i, const double* B, std::int64_t r,
                    const double* bsq, const double* bl1, const KernelParams& p, double* row) {
    const std::int64_t d = X.n_cols;
    const std::int64_t begin = static_cast<std::int64_t>(X.indptr[i]);
    const std::int64_t end = static_cast<std::int64_t>(X.indptr[i + 1]);
    if (p.kind == KernelKind::laplacian) {
        for (std::int64_t b = 0; b < r; ++b) {
            const double* bb = B + b * d;
            double s = bl1[b];
            for (std::int64_t q = begin; q < end; ++q) {
                const double bk = bb[X.indices[q]];
                s += std::fabs(static_cast<double>(X.data[q]) - bk) - std::fabs(bk);
            }
            row[b] = std::exp(-p.gamma * (s > 0.0 ? s : 0.0));
        }
        return;
    }
    double xx = 0.0;
    for (std::int64_t q = begin; q < end; ++q) xx += static_cast<double>(X.data[q]) * static_cast<double>(X.data[q]);
    for (std::int64_t b = 0; b < r; ++b) row[b] = kernel_from_dot(p, X.dot(i, B + b * d), xx, bsq[b]);
}

template <class Matrix>
struct RowKernel;

template <class T>
struct RowKernel<DenseView<T>> {
    static void run(const DenseView<T>& X, std::int64_t i, const double* B, std::int64_t r, const double* bsq,
                    const double*, const KernelParams& p, double* row) {
        dense_row_kernel(X, i, B, r, bsq, p, row);
    }
};

template <class T, class I>
struct RowKernel<CsrView<T, I>> {
    static void run(const CsrView<T, I>& X, std::int64_t i, const double* B, std::int64_t r, const double* bsq,
                    const double* bl1, const KernelParams& p, double* row) {
        csr_row_kernel(X, i, B, r, bsq, bl1, p, row);
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
    ExceptionSlot error;
#if defined(ROPT_HAVE_OPENMP)
#pragma omp parallel num_threads(threads)
#endif
    {
        error.run([&] {
            std::vector<double> row(static_cast<std::size_t>(r));
            std::int64_t begin, end;
            chunk_range(n, threads, thread_id(), begin, end);
            for (std::int64_t i = begin; i < end; ++i) {
                detail::RowKernel<Matrix>::run(X, i, B, r, bsq.data(), bl1.data(), p, row.data());
                Out* o = out + i * r;
                for (std::int64_t b = 0; b < r; ++b) o[b] = static_cast<Out>(row[b]);
            }
        });
    }
    error.rethrow();
}

// In place: G (n, r) holds <x_i, b_j> (from BLAS); turn it into kernel values.
// xsq (n,) and bsq (r,) are the squared norms (used by rbf only).
template <class Out>
void gram_transform(Out* G, std::int64_t n, std::int64_t r, const double* xsq, const double* bsq,
                    const KernelParams& p, int n_threads) {
    if (p.kind == KernelKind::laplacian) throw std::invalid_argument("gram_transform: laplacian needs distances");
    if (p.kind == KernelKind::linear) return;
    const int threads = effective_threads(n_threads, n * (r > 0 ? r : 1), 1 << 15);
#if defined(ROPT_HAVE_OPENMP)
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
    for (std::int64_t i = 0; i < n; ++i) {
        Out* g = G + i * r;
        const double xx = xsq ? xsq[i] : 0.0;
        for (std::int64_t b = 0; b < r; ++b)
            g[b] = static_cast<Out>(kernel_from_dot(p, static_cast<double>(g[b]), xx, bsq ? bsq[b] : 0.0));
    }
}

}  // namespace rateopt
