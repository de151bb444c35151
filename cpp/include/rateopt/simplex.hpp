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

// out may alias v.
inline void project_simplex(const double* v,  // in: (k,)
                            std::int64_t k, double radius,
                            double* out) {     // out: (k,)
    std::vector<double> u(v, v + k);
    std::sort(u.begin(), u.end(), std::greater<double>());
    double cumsum = 0.0, tau = 0.0;
    for (std::int64_t j = 0; j < k; ++j) {
        cumsum += u[j];
        const double t = (cumsum - radius) / static_cast<double>(j + 1);
        // The support is the longest prefix whose entries stay above the threshold.
        if (u[j] - t > 0.0) tau = t;
    }
    for (std::int64_t j = 0; j < k; ++j) out[j] = std::max(v[j] - tau, 0.0);
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
