// Design
// ------
// Layer: core (no Python types). Thin helpers around OpenMP so that every
// kernel follows the same rules (DESIGN.md §3, STYLE.md practices 5-6):
//   * the thread count is an explicit argument, never global state
//     (no omp_set_num_threads);
//   * static schedules only, so a fixed thread count gives bit-identical results;
//   * work is split into as many chunks as threads were *requested*, and each
//     thread of the team OpenMP actually provides takes every team-th chunk
//     (parallel_chunks). OMP_THREAD_LIMIT, OMP_DYNAMIC and nested regions can
//     give a smaller team than asked for; every chunk still runs exactly once,
//     per-chunk scratch is indexed by chunk (never by thread id), and results
//     depend only on the requested count, not on the team size;
//   * no exception escapes a parallel region: the first one is captured and
//     rethrown on the calling thread after the region.
// When the extension is built without OpenMP everything runs on one thread.
#pragma once

#include <cstdint>
#include <exception>
#include <mutex>

#if defined(ROPT_HAVE_OPENMP)
#include <omp.h>
#endif

namespace rateopt {

inline bool openmp_enabled() {
#if defined(ROPT_HAVE_OPENMP)
    return true;
#else
    return false;
#endif
}

// The thread count OpenMP would use by default for a new parallel region in the
// calling thread. It follows OMP_NUM_THREADS and the limits that threadpoolctl
// sets through omp_set_num_threads on the OpenMP runtime this module links.
inline int default_threads() {
#if defined(ROPT_HAVE_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
}

inline int available_cores() {
#if defined(ROPT_HAVE_OPENMP)
    return omp_get_num_procs();
#else
    return 1;
#endif
}

// Number of threads actually used for `n_items` units of work: never more than
// one thread per `min_per_thread` items, so tiny problems run serially.
inline int effective_threads(int requested, std::int64_t n_items, std::int64_t min_per_thread) {
    if (!openmp_enabled() || requested <= 1) return 1;
    std::int64_t cap = n_items / (min_per_thread > 0 ? min_per_thread : 1);
    if (cap < 1) cap = 1;
    return requested < cap ? requested : static_cast<int>(cap);
}

// Captures the first exception thrown inside a parallel region.
class ExceptionSlot {
  public:
    template <class F>
    void run(F&& f) noexcept {
        try {
            f();
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
        }
    }
    void rethrow() const {
        if (error_) std::rethrow_exception(error_);
    }

  private:
    std::exception_ptr error_;
    std::mutex mutex_;
};

// Splits [0, n) into `n_chunks` contiguous ranges of near-equal size (the
// same split as OpenMP's static schedule without a chunk size).
inline void chunk_range(std::int64_t n, int n_chunks, int chunk, std::int64_t& begin, std::int64_t& end) {
    const std::int64_t base = n / n_chunks;
    const std::int64_t rem = n % n_chunks;
    begin = chunk * base + (chunk < rem ? chunk : rem);
    end = begin + base + (chunk < rem ? 1 : 0);
}

// Runs f(chunk) for every chunk in [0, n_chunks), on a team of at most n_chunks
// threads. Thread t of a team of size T runs chunks t, t + T, t + 2T, ..., so
// the work and its split do not depend on T: a smaller team than requested
// (thread limits, dynamic adjustment, a call from inside another parallel
// region) only runs more chunks per thread. The first exception is rethrown on
// the calling thread.
template <class F>
void parallel_chunks(int n_chunks, F&& f) {
    ExceptionSlot error;
    if (n_chunks <= 1) {
        error.run([&] { f(0); });
    } else {
#if defined(ROPT_HAVE_OPENMP)
#pragma omp parallel num_threads(n_chunks)
        {
            const int team = omp_get_num_threads();
            for (int c = omp_get_thread_num(); c < n_chunks; c += team) error.run([&] { f(c); });
        }
#else
        for (int c = 0; c < n_chunks; ++c) error.run([&] { f(c); });
#endif
    }
    error.rethrow();
}

}  // namespace rateopt
