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
//
// On x86-64 the CSR row operations use SSE2 (part of the base ISA, so no
// build flag and no runtime dispatch): four values are loaded and converted in
// one step, two int32 column ids come from one 64-bit load, and the theta
// gathers fill lane pairs. Every lane does the same IEEE operation in the same
// order as the scalar code (partial sums s0..s3 = lanes of two registers, the
// same final (s0 + s1) + (s2 + s3); each axpy update a separate
// read-modify-write in entry order), so both paths give bit-identical results.
// What it saves is instructions: per nnz the fused kernel is bound by its
// loads and L1 misses, not by DRAM (docs/architecture.md, "Kernel: memory floor").
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>
#define ROPT_CSR_SSE2 1
#endif

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

#if defined(ROPT_CSR_SSE2)
namespace detail {

// Four consecutive values as two lane pairs of doubles: (x0, x1), (x2, x3).
inline void load4(const float* x, __m128d& x01, __m128d& x23) {
    const __m128 v = _mm_loadu_ps(x);
    x01 = _mm_cvtps_pd(v);
    x23 = _mm_cvtps_pd(_mm_movehl_ps(v, v));
}
inline void load4(const double* x, __m128d& x01, __m128d& x23) {
    x01 = _mm_loadu_pd(x);
    x23 = _mm_loadu_pd(x + 2);
}

// Four consecutive column ids; int32 ids two per 64-bit load.
inline void cols4(const std::int32_t* idx, std::int64_t& c0, std::int64_t& c1, std::int64_t& c2,
                  std::int64_t& c3) {
    std::int64_t w01, w23;
    std::memcpy(&w01, idx, 8);
    std::memcpy(&w23, idx + 2, 8);
    c0 = static_cast<std::int32_t>(w01 & 0xffffffff);
    c1 = w01 >> 32;
    c2 = static_cast<std::int32_t>(w23 & 0xffffffff);
    c3 = w23 >> 32;
}
inline void cols4(const std::int64_t* idx, std::int64_t& c0, std::int64_t& c1, std::int64_t& c2,
                  std::int64_t& c3) {
    c0 = idx[0];
    c1 = idx[1];
    c2 = idx[2];
    c3 = idx[3];
}

}  // namespace detail
#endif

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
#if defined(ROPT_CSR_SSE2)
        __m128d a01 = _mm_setzero_pd(), a23 = _mm_setzero_pd();
        for (; p + 4 <= end; p += 4) {
            __m128d x01, x23;
            detail::load4(x + p, x01, x23);
            std::int64_t c0, c1, c2, c3;
            detail::cols4(idx + p, c0, c1, c2, c3);
            const __m128d t01 = _mm_loadh_pd(_mm_load_sd(theta + c0), theta + c1);
            const __m128d t23 = _mm_loadh_pd(_mm_load_sd(theta + c2), theta + c3);
            a01 = _mm_add_pd(a01, _mm_mul_pd(x01, t01));
            a23 = _mm_add_pd(a23, _mm_mul_pd(x23, t23));
        }
        s0 = _mm_cvtsd_f64(a01);
        s1 = _mm_cvtsd_f64(_mm_unpackhi_pd(a01, a01));
        s2 = _mm_cvtsd_f64(a23);
        s3 = _mm_cvtsd_f64(_mm_unpackhi_pd(a23, a23));
#else
        for (; p + 4 <= end; p += 4) {
            s0 += static_cast<double>(x[p]) * theta[idx[p]];
            s1 += static_cast<double>(x[p + 1]) * theta[idx[p + 1]];
            s2 += static_cast<double>(x[p + 2]) * theta[idx[p + 2]];
            s3 += static_cast<double>(x[p + 3]) * theta[idx[p + 3]];
        }
#endif
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
#if defined(ROPT_CSR_SSE2)
        const __m128d av = _mm_set1_pd(a);
        for (; p + 4 <= end; p += 4) {
            __m128d x01, x23;
            detail::load4(x + p, x01, x23);
            const __m128d v01 = _mm_mul_pd(av, x01);
            const __m128d v23 = _mm_mul_pd(av, x23);
            std::int64_t c0, c1, c2, c3;
            detail::cols4(idx + p, c0, c1, c2, c3);
            // Low lane: load/add/store the low half; high lane: load into the
            // high half, add, store the high half.
            _mm_store_sd(out + c0, _mm_add_sd(_mm_load_sd(out + c0), v01));
            _mm_storeh_pd(out + c1, _mm_add_pd(_mm_loadh_pd(v01, out + c1), v01));
            _mm_store_sd(out + c2, _mm_add_sd(_mm_load_sd(out + c2), v23));
            _mm_storeh_pd(out + c3, _mm_add_pd(_mm_loadh_pd(v23, out + c3), v23));
        }
#else
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
#endif
        for (; p < end; ++p) out[idx[p]] += a * static_cast<double>(x[p]);
    }

    std::int64_t row_nnz(std::int64_t i) const {
        return static_cast<std::int64_t>(indptr[i + 1]) - static_cast<std::int64_t>(indptr[i]);
    }
};

// The atom-membership table: CSR over examples. Row j lists the atoms example j
// belongs to and its normalized weight w_j / sum_{i in S_a} w_i in that atom.
//
// Stored narrow (issue 33's memory target): the row pointers are int32 when the
// table has fewer than 2^31 entries (else int64), and the atom ids uint8, uint16
// or int32, the narrowest that holds n_atoms. Every reader goes through
// for_each_entry, which picks the layout once per row (a predictable branch)
// and then visits the row's entries in storage order with the id widened to
// int32 and the weight as stored: the same values in the same order as the
// wide table, so every sum over them is bit-identical.
enum class AtomIdWidth : int { kU8 = 1, kU16 = 2, kI32 = 4 };

struct AtomView {
    const std::int64_t* indptr64 = nullptr;  // in: (n_rows + 1,), or null when indptr32 is set
    const std::int32_t* indptr32 = nullptr;  // in: (n_rows + 1,), or null when indptr64 is set
    const void* indices = nullptr;           // in: (nnz,) atom ids in [0, n_atoms), of id_width
    AtomIdWidth id_width = AtomIdWidth::kI32;
    const double* weights = nullptr;         // in: (nnz,) normalized weights, >= 0
    std::int64_t n_rows = 0;
    std::int64_t n_atoms = 0;

    std::int64_t row_begin(std::int64_t j) const {
        return indptr32 ? static_cast<std::int64_t>(indptr32[j]) : indptr64[j];
    }
    std::int64_t row_end(std::int64_t j) const { return row_begin(j + 1); }

    // Calls f(a, v) for each entry of row j in storage order (a: int32 atom id,
    // v: its weight). If f returns bool, a false stops the row and
    // for_each_entry returns false; otherwise it returns true.
    template <class F>
    bool for_each_entry(std::int64_t j, F&& f) const {
        const std::int64_t b = row_begin(j), e = row_end(j);
        switch (id_width) {
            case AtomIdWidth::kU8:
                return visit(static_cast<const std::uint8_t*>(indices), b, e, f);
            case AtomIdWidth::kU16:
                return visit(static_cast<const std::uint16_t*>(indices), b, e, f);
            default:
                return visit(static_cast<const std::int32_t*>(indices), b, e, f);
        }
    }

private:
    template <class Id, class F>
    bool visit(const Id* ids, std::int64_t b, std::int64_t e, F& f) const {
        for (std::int64_t p = b; p < e; ++p) {
            const std::int32_t a = static_cast<std::int32_t>(ids[p]);
            const double v = weights[p];
            if constexpr (std::is_same_v<decltype(f(a, v)), bool>) {
                if (!f(a, v)) return false;
            } else {
                f(a, v);
            }
        }
        return true;
    }
};

}  // namespace rateopt
