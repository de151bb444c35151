// Design
// ------
// Layer: core (no Python types). The proxies of one example's term
// u * 1[s >= 0] of a rate combination, where s is the example's score and u its
// net coefficient (DESIGN.md §1). Each returns the proxy's value and its
// (sub)derivative in s; the model player's gradient is slope * x.
//
//   hinge     u > 0:  u max(0, margin + s)             slope u 1[margin + s > 0]
//             u < 0:  |u| max(0, margin - s) - |u|     slope u 1[margin - s > 0]
//             an upper bound of u 1[s >= 0] for margin >= 1 (the papers' proxy).
//   logistic  u > 0:  u log2(1 + e^s)                  slope u sigmoid(s) / ln 2
//             u < 0:  |u| log2(1 + e^-s) - |u|         slope u sigmoid(-s) / ln 2
//             also an upper bound (log2(1 + e^s) >= 1[s >= 0], equal at s = 0);
//             on the error rate it is the cross-entropy of logistic regression
//             in bits. margin is not used.
//   ramp      u rho(s), rho(s) = clip(1/2 + s, 0, 1)   slope u 1[|s| < 1/2]
//             seed 004's ramp; rho(s) + rho(-s) = 1, so the net rule for u < 0,
//             |u| rho(-s) - |u|, is the same u rho(s). Not a bound: exact on
//             |s| >= 1/2, and the expected rate of the randomized rule
//             P(+|x) = rho(s). margin is not used.
// Softplus and sigmoid are evaluated in their overflow-free forms.
#pragma once

#include <cmath>
#include <cstdint>

namespace rateopt {

enum class ProxyKind : std::int32_t { hinge = 0, logistic = 1, ramp = 2 };

inline bool valid_proxy_kind(std::int32_t k) { return k >= 0 && k <= 2; }

struct ProxyTerm {
    double value;
    double slope;
};

inline ProxyTerm proxy_term(ProxyKind kind, double u, double s, double margin) {
    constexpr double inv_ln2 = 1.4426950408889634;
    switch (kind) {
        case ProxyKind::logistic: {
            // softplus(+-s) = max(+-s, 0) + log1p(e) and sigmoid(+-s), both from
            // one e = exp(-|s|) (overflow-free for every s).
            const double e = std::exp(-std::fabs(s));
            const double tail = std::log1p(e);
            const double big = 1.0 / (1.0 + e), small = e * big;  // sigmoid(|s|), sigmoid(-|s|)
            if (u > 0.0) return {u * ((s > 0.0 ? s : 0.0) + tail) * inv_ln2, u * (s >= 0.0 ? big : small) * inv_ln2};
            return {-u * ((s < 0.0 ? -s : 0.0) + tail) * inv_ln2 + u, u * (s >= 0.0 ? small : big) * inv_ln2};
        }
        case ProxyKind::ramp: {
            const double r = 0.5 + s;
            const double rho = r <= 0.0 ? 0.0 : (r >= 1.0 ? 1.0 : r);
            return {u * rho, (s > -0.5 && s < 0.5) ? u : 0.0};
        }
        case ProxyKind::hinge:
        default:
            if (u > 0.0) {
                const double h = margin + s;
                return {h > 0.0 ? u * h : 0.0, h > 0.0 ? u : 0.0};
            } else {
                const double h = margin - s;
                return {(h > 0.0 ? -u * h : 0.0) + u, h > 0.0 ? u : 0.0};
            }
    }
}

// proxy_term(kind, u, s, margin).slope alone, computed the same way (the same
// bits) without the value's log1p.
inline double proxy_slope(ProxyKind kind, double u, double s, double margin) {
    if (kind != ProxyKind::logistic) return proxy_term(kind, u, s, margin).slope;
    constexpr double inv_ln2 = 1.4426950408889634;
    const double e = std::exp(-std::fabs(s));
    const double big = 1.0 / (1.0 + e), small = e * big;
    if (u > 0.0) return u * (s >= 0.0 ? big : small) * inv_ln2;
    return u * (s >= 0.0 ? small : big) * inv_ln2;
}

}  // namespace rateopt
