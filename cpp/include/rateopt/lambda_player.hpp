// Design
// ------
// Layer: core (no Python types). The multiplier player's primitives for the
// proxy-Lagrangian game (seed 001, Algorithms 2-3) and its Lagrangian cousins.
// Matrices are (k, k) row-major with k = m + 1; M[j*k + i] is entry (j, i) and
// M is *left*-stochastic: every column i sums to 1. The player's mixed strategy
// is a stationary distribution lambda = M lambda.
//
//   swap_update_multiplicative  log M[j,i] += eta * delta[j] * lambda[i], then each
//                               column log-normalized (log-sum-exp): the matrix
//                               exponentiated-gradient step done in log space so
//                               tiny probabilities neither underflow nor lose digits;
//                               optionally a floor on every entry (TFCO's minimum
//                               multiplier radius), so a long-satisfied constraint's
//                               weight can come back within a few steps.
//   swap_update_additive        M + eta * delta lambda^T, each column projected onto
//                               the simplex.
//   stationary_distribution     power iteration lambda <- M lambda warm-started from
//                               the previous lambda; when it has not reached
//                               ||M lambda - lambda||_1 <= tol in max_iter steps
//                               (periodic or slowly mixing chains), the exact GTH
//                               state reduction (Grassmann, Taksar and Heyman 1985),
//                               which is subtraction-free and also handles reducible
//                               chains.
//   external updates            the same steps for a vector.
// All are O(k^2) (O(k^3) for the fallback): cheap next to one pass over the data.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "simplex.hpp"

namespace rateopt {

// x <- x - logsumexp(x), as (x - max) - log(sum exp(x - max)): subtracting
// max + log(sum) in one go would round max + log(sum) first and lose the
// digits of log(sum) when |max| is large (1e8 and up).
inline void log_normalize(double* x, std::int64_t k, std::int64_t stride) {
    double mx = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < k; ++j) mx = std::max(mx, x[j * stride]);
    double total = 0.0;
    for (std::int64_t j = 0; j < k; ++j) total += std::exp(x[j * stride] - mx);
    const double log_total = std::log(total);
    for (std::int64_t j = 0; j < k; ++j) x[j * stride] = (x[j * stride] - mx) - log_total;
}

// The log_floor of swap_update_multiplicative for a floor on M's entries (0: none).
inline double log_floor_of(double floor) {
    return floor > 0.0 ? std::log(floor) : -std::numeric_limits<double>::infinity();
}

// log_M: in/out (k, k). log_floor (-inf: none): after the normalization every
// entry is raised to at least log_floor and its column normalized again (TFCO's
// minimum_multiplier_radius, log_floor = log(r / k); TFCO leaves the column
// unnormalized after the floor, here M stays exactly stochastic and its entries
// stay within a factor 1 - k e^log_floor of the floor).
inline void swap_update_multiplicative(double* log_M, const double* delta, const double* lam,
                                       std::int64_t k, double eta,
                                       double log_floor = -std::numeric_limits<double>::infinity()) {
    // Row-major sweeps with one accumulator per column: every column's max, sum
    // and normalization see its entries in the order j = 0..k-1, exactly as a
    // column-at-a-time log_normalize(log_M + i, k, k) would (bit-identical), but
    // each sweep reads the matrix contiguously instead of with a stride of k
    // (at k = 961 the strided version missed cache on every entry).
    const double neg_inf = -std::numeric_limits<double>::infinity();
    const auto ku = static_cast<std::size_t>(k);
    std::vector<double> mx(ku, neg_inf), total(ku, 0.0);
    std::vector<unsigned char> raised(ku, 0);
    for (std::int64_t j = 0; j < k; ++j) {
        double* row = log_M + j * k;
        const double dj = eta * delta[j];
        for (std::int64_t i = 0; i < k; ++i) {
            row[i] += dj * lam[i];
            mx[i] = std::max(mx[i], row[i]);
        }
    }
    // Normalizes the columns with `want[i]` set (all when want is null), as log_normalize does.
    auto normalize = [&](const unsigned char* want) {
        for (std::int64_t j = 0; j < k; ++j) {
            const double* row = log_M + j * k;
            for (std::int64_t i = 0; i < k; ++i)
                if (!want || want[i]) total[i] += std::exp(row[i] - mx[i]);
        }
        for (std::int64_t i = 0; i < k; ++i)
            if (!want || want[i]) total[i] = std::log(total[i]);
        for (std::int64_t j = 0; j < k; ++j) {
            double* row = log_M + j * k;
            for (std::int64_t i = 0; i < k; ++i)
                if (!want || want[i]) row[i] = (row[i] - mx[i]) - total[i];
        }
    };
    normalize(nullptr);
    if (!(log_floor > neg_inf)) return;
    bool any = false;
    for (std::int64_t j = 0; j < k; ++j) {
        double* row = log_M + j * k;
        for (std::int64_t i = 0; i < k; ++i) {
            if (row[i] < log_floor) {
                row[i] = log_floor;
                raised[i] = 1;
                any = true;
            }
        }
    }
    if (!any) return;
    for (std::int64_t i = 0; i < k; ++i) {
        if (!raised[i]) continue;
        mx[i] = neg_inf;
        total[i] = 0.0;
    }
    for (std::int64_t j = 0; j < k; ++j) {
        const double* row = log_M + j * k;
        for (std::int64_t i = 0; i < k; ++i)
            if (raised[i]) mx[i] = std::max(mx[i], row[i]);
    }
    normalize(raised.data());
}

// M: in/out (k, k).
inline void swap_update_additive(double* M, const double* delta, const double* lam,
                                 std::int64_t k, double eta) {
    std::vector<double> col(static_cast<std::size_t>(k));
    for (std::int64_t i = 0; i < k; ++i) {
        for (std::int64_t j = 0; j < k; ++j) col[j] = M[j * k + i] + eta * delta[j] * lam[i];
        project_simplex(col.data(), k, 1.0, col.data());
        for (std::int64_t j = 0; j < k; ++j) M[j * k + i] = col[j];
    }
}

// log_lam: in/out (k,).
inline void external_update_multiplicative(double* log_lam, const double* delta, std::int64_t k,
                                           double eta) {
    for (std::int64_t j = 0; j < k; ++j) log_lam[j] += eta * delta[j];
    log_normalize(log_lam, k, 1);
}

// lam: in/out (k,). Onto the simplex if `simplex`, else onto {x >= 0, sum x <= radius}.
inline void external_update_additive(double* lam, const double* delta, std::int64_t k, double eta,
                                     bool simplex, double radius) {
    for (std::int64_t j = 0; j < k; ++j) lam[j] += eta * delta[j];
    if (simplex)
        project_simplex(lam, k, 1.0, lam);
    else
        project_l1_ball_nonneg(lam, k, radius, lam);
}

inline void matvec(const double* M, const double* x, std::int64_t k, double* y) {
    for (std::int64_t j = 0; j < k; ++j) {
        double s = 0.0;
        for (std::int64_t i = 0; i < k; ++i) s += M[j * k + i] * x[i];
        y[j] = s;
    }
}

inline double stationary_residual(const double* M, const double* lam, std::int64_t k) {
    std::vector<double> y(static_cast<std::size_t>(k));
    matvec(M, lam, k, y.data());
    double r = 0.0;
    for (std::int64_t j = 0; j < k; ++j) r += std::fabs(y[j] - lam[j]);
    return r;
}

// Exact stationary distribution of a left-stochastic M by GTH state reduction.
inline void stationary_gth(const double* M, std::int64_t k, double* lam) {
    // P = M^T is row-stochastic: P[i][j] is the probability of moving i -> j.
    std::vector<double> P(static_cast<std::size_t>(k * k));
    for (std::int64_t i = 0; i < k; ++i)
        for (std::int64_t j = 0; j < k; ++j) P[i * k + j] = M[j * k + i];
    std::int64_t start = 0;  // the state whose censored chain we solve first
    for (std::int64_t n = k - 1; n >= 1; --n) {
        double s = 0.0;
        for (std::int64_t j = 0; j < n; ++j) s += P[n * k + j];
        if (!(s > 1e-300)) {
            // State n cannot reach states < n: in the chain censored on {0..n} it is
            // absorbing, so e_n is stationary there and extends to the full chain.
            start = n;
            break;
        }
        for (std::int64_t i = 0; i < n; ++i) P[i * k + n] /= s;
        for (std::int64_t i = 0; i < n; ++i) {
            const double pin = P[i * k + n];
            if (pin == 0.0) continue;
            for (std::int64_t j = 0; j < n; ++j) P[i * k + j] += pin * P[n * k + j];
        }
    }
    for (std::int64_t j = 0; j < k; ++j) lam[j] = 0.0;
    lam[start] = 1.0;
    for (std::int64_t n = start + 1; n < k; ++n) {
        double s = 0.0;
        for (std::int64_t i = 0; i < n; ++i) s += lam[i] * P[i * k + n];
        lam[n] = s;
        // Rare transitions (P[i][n] up to 1/1e-300 after the division above) make
        // the unnormalized weights grow without bound: rescale as we go (the
        // final normalization makes this exact up to rounding) so they never
        // overflow to inf and inf/inf.
        double mx = 0.0;
        for (std::int64_t i = 0; i <= n; ++i) mx = std::max(mx, lam[i]);
        if (mx > 1.0)
            for (std::int64_t i = 0; i <= n; ++i) lam[i] /= mx;
    }
    double total = 0.0;
    for (std::int64_t j = 0; j < k; ++j) total += lam[j];
    for (std::int64_t j = 0; j < k; ++j) lam[j] /= total;
}

struct StationaryInfo {
    std::int64_t n_iter = 0;
    bool fallback = false;
    double residual = 0.0;
};

// lam: in (warm start, a distribution) / out (k,).
inline StationaryInfo stationary_distribution(const double* M, std::int64_t k, double* lam,
                                              double tol, std::int64_t max_iter) {
    StationaryInfo info;
    std::vector<double> next(static_cast<std::size_t>(k));
    for (std::int64_t it = 0;; ++it) {
        matvec(M, lam, k, next.data());
        double res = 0.0, total = 0.0;
        for (std::int64_t j = 0; j < k; ++j) {
            res += std::fabs(next[j] - lam[j]);
            total += next[j];
        }
        if (res <= tol) {
            info.n_iter = it;
            info.residual = res;
            return info;
        }
        if (it >= max_iter) break;
        // Renormalize: M preserves the sum exactly in exact arithmetic only.
        for (std::int64_t j = 0; j < k; ++j) lam[j] = next[j] / total;
    }
    info.n_iter = max_iter;
    info.fallback = true;
    stationary_gth(M, k, lam);
    info.residual = stationary_residual(M, lam, k);
    return info;
}

}  // namespace rateopt
