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
        double s = 0.0;
        const std::int64_t end = static_cast<std::int64_t>(indptr[i + 1]);
        for (std::int64_t p = static_cast<std::int64_t>(indptr[i]); p < end; ++p)
            s += static_cast<double>(data[p]) * theta[indices[p]];
        return s;
    }

    void axpy(std::int64_t i, double a, double* out) const {
        const std::int64_t end = static_cast<std::int64_t>(indptr[i + 1]);
        for (std::int64_t p = static_cast<std::int64_t>(indptr[i]); p < end; ++p)
            out[indices[p]] += a * static_cast<double>(data[p]);
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
