// Design
// ------
// Layer: core (no Python types). Read-only row views over the two layouts the
// kernels accept, used in place (never copied):
//   DenseView<T>      C-contiguous (n_rows, n_cols) buffer, T = float or double;
//   CsrView<T, I>     scipy CSR: data (nnz) T, indices (nnz) I, indptr (n_rows+1) I,
//                     I = int32_t or int64_t. Column order within a row is free and
//                     duplicate columns are summed (scipy's meaning).
// Both expose the two row operations every kernel needs: a dot product with a
// float64 vector (accumulated in float64) and an axpy into a float64 vector.
// The dense dot product keeps 4 independent partial sums in a fixed order: fast
// and still deterministic.
#pragma once

#include <cstdint>

namespace rateopt {

template <class T>
struct DenseView {
    const T* data;        // in: (n_rows, n_cols), row-major
    std::int64_t n_rows;
    std::int64_t n_cols;

    double dot(std::int64_t i, const double* theta) const {
        const T* x = data + i * n_cols;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        std::int64_t k = 0;
        for (; k + 4 <= n_cols; k += 4) {
            s0 += static_cast<double>(x[k]) * theta[k];
            s1 += static_cast<double>(x[k + 1]) * theta[k + 1];
            s2 += static_cast<double>(x[k + 2]) * theta[k + 2];
            s3 += static_cast<double>(x[k + 3]) * theta[k + 3];
        }
        for (; k < n_cols; ++k) s0 += static_cast<double>(x[k]) * theta[k];
        return (s0 + s1) + (s2 + s3);
    }

    void axpy(std::int64_t i, double a, double* out) const {
        const T* x = data + i * n_cols;
        for (std::int64_t k = 0; k < n_cols; ++k) out[k] += a * static_cast<double>(x[k]);
    }

    std::int64_t row_nnz(std::int64_t) const { return n_cols; }
};

template <class T, class I>
struct CsrView {
    const T* data;        // in: (nnz,)
    const I* indices;     // in: (nnz,) column ids in [0, n_cols)
    const I* indptr;      // in: (n_rows + 1,)
    std::int64_t n_rows;
    std::int64_t n_cols;

    double dot(std::int64_t i, const double* theta) const {
        // Four independent partial sums hide the latency of the add chain; the
        // order is fixed, so the result is still deterministic.
        const std::int64_t begin = static_cast<std::int64_t>(indptr[i]);
        const std::int64_t end = static_cast<std::int64_t>(indptr[i + 1]);
        const T* __restrict x = data;
        const I* __restrict idx = indices;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        std::int64_t p = begin;
        for (; p + 4 <= end; p += 4) {
            s0 += static_cast<double>(x[p]) * theta[idx[p]];
            s1 += static_cast<double>(x[p + 1]) * theta[idx[p + 1]];
            s2 += static_cast<double>(x[p + 2]) * theta[idx[p + 2]];
            s3 += static_cast<double>(x[p + 3]) * theta[idx[p + 3]];
        }
        for (; p < end; ++p) s0 += static_cast<double>(x[p]) * theta[idx[p]];
        return (s0 + s1) + (s2 + s3);
    }

    void axpy(std::int64_t i, double a, double* __restrict out) const {
        const std::int64_t begin = static_cast<std::int64_t>(indptr[i]);
        const std::int64_t end = static_cast<std::int64_t>(indptr[i + 1]);
        const T* __restrict x = data;
        const I* __restrict idx = indices;
        std::int64_t p = begin;
        // Unrolled so the loads of the next entries issue before the stores of
        // the previous ones retire. Duplicate columns stay correct: each update
        // is a separate read-modify-write in entry order.
        for (; p + 4 <= end; p += 4) {
            const I c0 = idx[p], c1 = idx[p + 1], c2 = idx[p + 2], c3 = idx[p + 3];
            const double v0 = a * static_cast<double>(x[p]);
            const double v1 = a * static_cast<double>(x[p + 1]);
            const double v2 = a * static_cast<double>(x[p + 2]);
            const double v3 = a * static_cast<double>(x[p + 3]);
            out[c0] += v0;
            out[c1] += v1;
            out[c2] += v2;
            out[c3] += v3;
        }
        for (; p < end; ++p) out[idx[p]] += a * static_cast<double>(x[p]);
    }

    std::int64_t row_nnz(std::int64_t i) const {
        return static_cast<std::int64_t>(indptr[i + 1]) - static_cast<std::int64_t>(indptr[i]);
    }
};

// The atom-membership table: CSR over examples. Row j lists the atoms example j
// belongs to and its normalized weight w_j / sum_{i in S_a} w_i in that atom.
struct AtomView {
    const std::int64_t* indptr;   // in: (n_rows + 1,)
    const std::int32_t* indices;  // in: (nnz,) atom ids in [0, n_atoms)
    const double* weights;        // in: (nnz,) normalized weights, >= 0
    std::int64_t n_rows;
    std::int64_t n_atoms;
};

}  // namespace rateopt
