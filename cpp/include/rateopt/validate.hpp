// Design
// ------
// Layer: core (no Python types). Checks run once when data enters the library
// (the Python boundary calls them before any kernel runs). Each returns the
// position of the first offending entry, or -1, so the caller can name the
// argument and the position in its message. Parallel over the buffer; the
// answer (the smallest offending position) does not depend on the thread count.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "parallel.hpp"

namespace rateopt {

template <class F>
std::int64_t first_failure(std::int64_t n, int n_threads, F&& bad) {
    const int threads = effective_threads(n_threads, n, 1 << 16);
    std::vector<std::int64_t> found(static_cast<std::size_t>(threads), -1);
    parallel_chunks(threads, [&](int t) {
        std::int64_t begin, end;
        chunk_range(n, threads, t, begin, end);
        for (std::int64_t p = begin; p < end; ++p) {
            if (bad(p)) {
                found[static_cast<std::size_t>(t)] = p;
                break;
            }
        }
    });
    for (std::int64_t f : found)
        if (f >= 0) return f;
    return -1;
}

template <class T>
std::int64_t first_nonfinite(const T* x, std::int64_t n, int n_threads) {
    return first_failure(n, n_threads, [x](std::int64_t p) { return !std::isfinite(x[p]); });
}

// Index ids must lie in [0, bound).
template <class I>
std::int64_t first_out_of_range(const I* ids, std::int64_t n, std::int64_t bound, int n_threads) {
    return first_failure(n, n_threads, [ids, bound](std::int64_t p) {
        return static_cast<std::int64_t>(ids[p]) < 0 || static_cast<std::int64_t>(ids[p]) >= bound;
    });
}

// First p with indptr[p+1] < indptr[p]; indptr has n+1 entries.
template <class I>
std::int64_t first_decrease(const I* indptr, std::int64_t n, int n_threads) {
    return first_failure(n, n_threads, [indptr](std::int64_t p) { return indptr[p + 1] < indptr[p]; });
}

template <class T>
std::int64_t first_negative(const T* x, std::int64_t n, int n_threads) {
    return first_failure(n, n_threads, [x](std::int64_t p) { return x[p] < 0; });
}

// Reads a buffer once (8-byte words, then the tail) and returns a checksum: the
// time of this pass is the memory floor the benchmarks compare kernels against.
inline std::uint64_t stream_checksum(const unsigned char* bytes, std::int64_t n_bytes, int n_threads) {
    const std::int64_t n_words = n_bytes / 8;
    const int threads = effective_threads(n_threads, n_words, 1 << 16);
    std::vector<std::uint64_t> partial(static_cast<std::size_t>(threads) * 8, 0);
    parallel_chunks(threads, [&](int t) {
        std::int64_t begin, end;
        chunk_range(n_words, threads, t, begin, end);
        // memcpy loads: the buffer need not be 8-byte aligned; compiles to plain loads.
        auto word = [bytes](std::int64_t p) {
            std::uint64_t w;
            std::memcpy(&w, bytes + 8 * p, 8);
            return w;
        };
        std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        std::int64_t p = begin;
        for (; p + 4 <= end; p += 4) {
            s0 += word(p);
            s1 += word(p + 1);
            s2 += word(p + 2);
            s3 += word(p + 3);
        }
        for (; p < end; ++p) s0 += word(p);
        partial[static_cast<std::size_t>(t) * 8] = s0 + s1 + s2 + s3;
    });
    std::uint64_t total = 0;
    for (int t = 0; t < threads; ++t) total += partial[static_cast<std::size_t>(t) * 8];
    for (std::int64_t b = n_words * 8; b < n_bytes; ++b) total += bytes[b];
    return total;
}

}  // namespace rateopt
