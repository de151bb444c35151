// Design
// ------
// Layer: core (no Python types). Euclidean projections used by the lambda
// players:
//   project_simplex          argmin ||x - v||_2  s.t. x >= 0, sum x = radius
//   project_l1_ball_nonneg   argmin ||x - v||_2  s.t. x >= 0, sum x <= radius
// Sort-based algorithm (Held, Wolfe and Crowder 1974; Duchi et al. 2008):
// O(k log k), exact up to rounding. Vectors are short (m + 1 entries).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace rateopt {

// out may alias v. radius must be finite and > 0; v finite.
//
// Computed as radius * P1((v - max v) / radius), P1 the projection onto the
// unit simplex: the projection commutes with adding a constant to every entry
// and scales with the radius. Without the shift and scale, cancellation in
// `cumsum - radius` loses the answer when |v| >> radius (v = [1e17, 0] gave
// [0, 0]). Entries of the scaled vector below -1 are clamped to -2: the
// threshold of P1 is >= -1 (the maximal entry, 0, alone gives sum >= -tau), so
// such entries are outside the support either way, and the clamp keeps every
// partial sum finite whatever the spread of v.
inline void project_simplex(const double* v,  // in: (k,)
                            std::int64_t k, double radius,
                            double* out) {     // out: (k,)
    if (k <= 0) return;
    double mx = v[0];
    for (std::int64_t j = 1; j < k; ++j) mx = std::max(mx, v[j]);
    std::vector<double> w(static_cast<std::size_t>(k));
    for (std::int64_t j = 0; j < k; ++j) {
        const double x = (v[j] - mx) / radius;  // <= 0, possibly -inf
        w[j] = x < -1.0 ? -2.0 : x;
    }
    std::vector<double> u(w);
    std::sort(u.begin(), u.end(), std::greater<double>());
    double cumsum = 0.0, tau = 0.0;
    for (std::int64_t j = 0; j < k; ++j) {
        cumsum += u[j];
        const double t = (cumsum - 1.0) / static_cast<double>(j + 1);
        // The support is the longest prefix whose entries stay above the threshold.
        if (u[j] - t > 0.0) tau = t;
    }
    for (std::int64_t j = 0; j < k; ++j) out[j] = radius * std::max(w[j] - tau, 0.0);
}

inline void project_l1_ball_nonneg(const double* v, std::int64_t k, double radius, double* out) {
    double total = 0.0;
    for (std::int64_t j = 0; j < k; ++j) total += std::max(v[j], 0.0);
    if (total <= radius) {
        for (std::int64_t j = 0; j < k; ++j) out[j] = std::max(v[j], 0.0);
        return;
    }
    project_simplex(v, k, radius, out);
}

}  // namespace rateopt
