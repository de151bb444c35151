// Design
// ------
// Layer: core (no Python types). An exact solver of the weighted two-sided
// hinge problem by stochastic dual coordinate ascent (SDCA; Shalev-Shwartz &
// Zhang 2013), the primitive P1 of methods_spec.md §1.4:
//
//   P(theta) = (1/n) sum_j l_j(s_j) + (lam/2) ||theta||^2,    s_j = x_j.theta + beta
//   l_j(s)   = A_j max(0, tau + s) + B_j max(0, tau - s),     A_j, B_j >= 0, tau > 0
//
// Dual, with one variable xi_j in the box [-B_j, A_j] per row (xi_j is a
// subgradient of l_j at the optimum):
//
//   l_j*(xi) = tau (|xi - (A_j - B_j)| - (A_j + B_j))
//   D(xi)    = -(1/n) sum_j l_j*(xi_j) - (lam/2) ||theta(xi)||^2 + (beta/n) sum_j xi_j
//   theta(xi) = -(1/(lam n)) sum_j xi_j x_j,          gap = P(theta(xi)) - D(xi) >= 0.
//
// Each coordinate step maximizes D exactly over one xi_e (closed form, §1.4):
// with z = x_e.theta + beta, q = ||x_e||^2 / (lam n), c = A_e - B_e,
//   xa = xi_e + (z - tau)/q:  if xa > c, xi_new = min(xa, A_e)
//   else xb = xi_e + (z + tau)/q:  if xb < c, xi_new = max(xb, -B_e)  else xi_new = c,
// and theta moves by -(xi_new - xi_e) x_e / (lam n), so theta == theta(xi) is
// an invariant of the loop (up to rounding; theta is recomputed from xi
// before the final gap is reported, see below). A row with x_e = 0 (q = 0)
// takes the limit of the same rule: A_e if z > tau, -B_e if z < -tau, else c.
//
// Bias. Fixed: s_j = x_j.theta + beta with a given beta (0 by default; the
// outer cutting plane over beta of seed 004 Alg. 3 uses dD/dbeta =
// (1/n) sum xi). Regularized: every row gets a constant feature of value
// bias_scale with its own weight w_c, penalized like theta (LIBLINEAR's
// bias=bias_scale); the model's bias is bias_scale * w_c and beta must be 0.
//
// Starts. The dual iterate is the state; theta is always theta(xi):
//   * cold: xi = 0, theta = 0;
//   * dual warm start: xi = xi0 clipped into each row's box (a previous
//     solution for other weights A, B is still a valid start), theta = theta(xi);
//   * primal warm start: xi_j = the subgradient of l_j at s_j(theta0, bias0)
//     (A_j above tau, -B_j below -tau, c between and at the kinks), then
//     theta = theta(xi). From an exact solution this lands on it except for
//     rows sitting on a kink, whose xi the primal does not determine.
//
// Order and determinism. Rows with A_j = B_j = 0 never move (xi_j = 0) and
// are left out of the visiting order. The active rows are visited in an order
// reshuffled before every epoch by a Fisher-Yates shuffle of the previous
// order, driven by splitmix64 seeded with `seed` and unbiased bounded draws by
// rejection (no std:: distribution, whose output is implementation-defined),
// so a seed gives the same iterates on every platform and compiler (up to the
// floating-point contraction a compiler may apply to the row operations).
// The solver is sequential: coordinate steps depend on each other.
//
// Shrinking (as LIBLINEAR's dual coordinate descent, Hsieh et al. 2008).
// Near the optimum most rows sit at an end of their box or on the kink
// xi = A - B, and stay there. A row whose score could move by more than the
// previous epoch's largest optimality violation without its xi moving is
// dropped from the visiting list; an epoch is one pass over the rows still in
// it. Shrinking only decides which coordinates are visited: every stop is
// decided by the duality gap over all rows.
//
// Stopping. The gap (one more pass over all rows: P and D) is computed after
// every epoch that visited every row, and after a shrunk epoch whose largest
// violation fell below a tenth of the one at the previous gap check; a check
// that fails puts every row back in the list. The solver stops when
// gap <= tol * max(1, |P|), or after max_epochs epochs. When the tolerance is
// met, theta is recomputed from xi in one pass (removing the rounding drift of
// the incremental updates) and P, D and the gap are evaluated again at that
// theta; if the gap no longer meets the tolerance and epochs remain, the
// epochs go on. Cost: O(nnz of the visited rows) per epoch, plus O(nnz(X))
// per gap check.
//
// Memory layout: X through the row views of matrix_view.hpp (dense row-major
// or CSR, float32/float64 values, all arithmetic in float64). Outputs are
// caller-allocated: theta (n_features,), xi (n_rows,).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "matrix_view.hpp"

namespace rateopt {

// The splitmix64 generator (Steele, Lea & Flood 2014): a fixed, documented
// stream for a given seed on every platform.
class SplitMix64 {
  public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    // Uniform on [0, bound), bound >= 1, without modulo bias: draws below
    // 2^64 mod bound are rejected.
    std::uint64_t below(std::uint64_t bound) {
        const std::uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
        for (;;) {
            const std::uint64_t r = next();
            if (r >= threshold) return r % bound;
        }
    }

  private:
    std::uint64_t state_;
};

enum class SdcaStatus : int { converged = 0, max_epochs = 1, nonfinite = 2 };

enum class SdcaStart : int { cold = 0, dual = 1, primal = 2 };

struct SdcaParams {
    const double* A = nullptr;   // in: (n_rows,) weights of max(0, tau + s), >= 0
    const double* B = nullptr;   // in: (n_rows,) weights of max(0, tau - s), >= 0
    double lam = 1.0;            // > 0
    double tau = 1.0;            // > 0
    double beta = 0.0;           // the fixed bias (0 when regularized_bias)
    bool regularized_bias = false;
    double bias_scale = 1.0;     // > 0, the constant feature's value
    SdcaStart start = SdcaStart::cold;
    const double* xi0 = nullptr;     // in: (n_rows,) for SdcaStart::dual
    const double* theta0 = nullptr;  // in: (n_features,) for SdcaStart::primal
    double bias0 = 0.0;              // the model's bias for SdcaStart::primal with regularized_bias
    double tol = 1e-8;
    std::int64_t max_epochs = 1000;
    std::uint64_t seed = 0;
};

struct SdcaResult {
    double bias = 0.0;   // beta, or bias_scale * w_c
    double primal = 0.0;
    double dual = 0.0;
    double gap = 0.0;
    double sum_xi = 0.0;
    std::int64_t epochs = 0;
    SdcaStatus status = SdcaStatus::max_epochs;
};

namespace detail {

// ||x_i||^2 of a row as the matrix means it (CSR duplicates summed first).
template <class T>
double row_sq_norm(const DenseView<T>& X, std::int64_t i, std::vector<double>&) {
    const T* x = X.data + i * X.n_cols;
    double s = 0.0;
    for (std::int64_t k = 0; k < X.n_cols; ++k) s += static_cast<double>(x[k]) * static_cast<double>(x[k]);
    return s;
}

template <class T, class I>
double row_sq_norm(const CsrView<T, I>& X, std::int64_t i, std::vector<double>& scratch) {
    // scratch holds zeros on entry and on exit: sum the duplicates of each
    // column, read each column once (then clear it).
    const std::int64_t begin = static_cast<std::int64_t>(X.indptr[i]);
    const std::int64_t end = static_cast<std::int64_t>(X.indptr[i + 1]);
    for (std::int64_t p = begin; p < end; ++p) scratch[static_cast<std::size_t>(X.indices[p])] += X.data[p];
    double s = 0.0;
    for (std::int64_t p = begin; p < end; ++p) {
        double& v = scratch[static_cast<std::size_t>(X.indices[p])];
        s += v * v;
        v = 0.0;
    }
    return s;
}

// Fenchel conjugate of l_j on its box (xi is always inside it here):
// tau (|xi - c| - (a + b)), c = a - b, written branch by branch as
// tau (xi - 2a) or tau (-xi - 2b) so that weights far larger than xi do not
// cancel away xi's contribution (one-sided rows give exactly -tau xi or tau xi).
inline double hinge_conjugate(double xi, double a, double b, double tau) {
    return xi > a - b ? tau * ((xi - a) - a) : tau * ((-xi - b) - b);
}

inline double two_sided_hinge(double s, double a, double b, double tau) {
    double v = 0.0;
    if (a != 0.0) v += a * std::max(0.0, tau + s);
    if (b != 0.0) v += b * std::max(0.0, tau - s);
    return v;
}

// The exact maximizer of the dual along one coordinate (see the Design block).
inline double coordinate_step(double xi, double z, double q, double a, double b, double tau) {
    const double c = a - b;
    if (q > 0.0) {
        const double xa = xi + (z - tau) / q;
        if (xa > c) return std::min(xa, a);
        const double xb = xi + (z + tau) / q;
        if (xb < c) return std::max(xb, -b);
        return c;
    }
    if (z > tau) return a;
    if (z < -tau) return -b;
    return c;
}

// A subgradient of l_j at s (the primal warm start).
inline double hinge_subgradient(double s, double a, double b, double tau) {
    if (s > tau) return a;
    if (s < -tau) return -b;
    return a - b;
}

// The row's dual optimality at the current score z: the one-sided derivatives
// of its coordinate function at xi are R = z - tau (xi >= c) or z + tau
// (xi < c) to the right and L = z - tau (xi > c) or z + tau to the left.
// `violation` is how far xi is from optimal along its coordinate (0 when it
// would not move); `margin` > 0 says by how much the score could change
// before xi would move off an end of its box or off the kink c (rows inside a
// linear piece have margin <= 0: they are never shrunk).
struct Violation {
    double violation, margin;
};

inline Violation violation(double xi, double z, double a, double b, double tau) {
    const double c = a - b;
    const double right = xi >= c ? z - tau : z + tau;
    const double left = xi > c ? z - tau : z + tau;
    const bool at_top = xi >= a, at_bottom = xi <= -b;
    const double up = at_top ? 0.0 : std::max(0.0, right);
    const double down = at_bottom ? 0.0 : std::max(0.0, -left);
    const double inf = std::numeric_limits<double>::infinity();
    const double margin = std::min(at_top ? inf : -right, at_bottom ? inf : left);
    return {std::max(up, down), margin};
}

struct Objectives {
    double primal, dual, sum_xi;
};

// P and D at the current (theta, w_c) == theta(xi): one pass over the active rows.
template <class Matrix>
Objectives objectives(const Matrix& X, const SdcaParams& p, const std::vector<std::int64_t>& active,
                      const double* theta, double w_c, const double* xi) {
    const double n = static_cast<double>(X.n_rows);
    const double offset = p.beta + (p.regularized_bias ? p.bias_scale * w_c : 0.0);
    double loss = 0.0, conj = 0.0, sum_xi = 0.0;
    for (const std::int64_t j : active) {
        const double s = X.dot(j, theta) + offset;
        loss += two_sided_hinge(s, p.A[j], p.B[j], p.tau);
        conj += hinge_conjugate(xi[j], p.A[j], p.B[j], p.tau);
        sum_xi += xi[j];
    }
    double sq = 0.0;
    for (std::int64_t k = 0; k < X.n_cols; ++k) sq += theta[k] * theta[k];
    if (p.regularized_bias) sq += w_c * w_c;
    const double reg = 0.5 * p.lam * sq;
    return {loss / n + reg, -conj / n - reg + p.beta * sum_xi / n, sum_xi};
}

// theta = theta(xi) and w_c = w_c(xi), from scratch.
template <class Matrix>
void theta_of_xi(const Matrix& X, const SdcaParams& p, const std::vector<std::int64_t>& active, const double* xi,
                 double* theta, double& w_c) {
    const double inv = 1.0 / (p.lam * static_cast<double>(X.n_rows));
    std::fill(theta, theta + X.n_cols, 0.0);
    double sum_xi = 0.0;
    for (const std::int64_t j : active) {
        if (xi[j] == 0.0) continue;
        X.axpy(j, -xi[j] * inv, theta);
        sum_xi += xi[j];
    }
    w_c = p.regularized_bias ? -p.bias_scale * sum_xi * inv : 0.0;
}

}  // namespace detail

// Solves the problem of the Design block. Inputs are assumed validated (the
// binding checks lengths, finiteness, signs and ranges).
template <class Matrix>
SdcaResult sdca_two_sided_hinge(const Matrix& X, const SdcaParams& p,
                                double* theta,  // out: (n_features,)
                                double* xi) {   // out: (n_rows,)
    const std::int64_t n = X.n_rows;
    const double inv_lam_n = 1.0 / (p.lam * static_cast<double>(n));
    const double bs = p.regularized_bias ? p.bias_scale : 0.0;

    std::vector<std::int64_t> active;
    active.reserve(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j)
        if (p.A[j] > 0.0 || p.B[j] > 0.0) active.push_back(j);

    // The starting dual point (zero-weight rows: xi = 0 always).
    std::fill(xi, xi + n, 0.0);
    if (p.start == SdcaStart::dual) {
        for (const std::int64_t j : active) xi[j] = std::min(p.A[j], std::max(-p.B[j], p.xi0[j]));
    } else if (p.start == SdcaStart::primal) {
        const double offset = p.beta + (p.regularized_bias ? p.bias0 : 0.0);
        for (const std::int64_t j : active)
            xi[j] = detail::hinge_subgradient(X.dot(j, p.theta0) + offset, p.A[j], p.B[j], p.tau);
    }
    double w_c = 0.0;
    detail::theta_of_xi(X, p, active, xi, theta, w_c);

    // q_j = ||(x_j, bias_scale)||^2 / (lam n) of the active rows (indexed by row).
    std::vector<double> q(static_cast<std::size_t>(n), 0.0);
    {
        std::vector<double> scratch(static_cast<std::size_t>(X.n_cols), 0.0);
        for (const std::int64_t j : active)
            q[static_cast<std::size_t>(j)] = (detail::row_sq_norm(X, j, scratch) + bs * bs) * inv_lam_n;
    }

    // ||x_j||^2 / (lam n) beyond the float64 range would freeze every step (q = inf).
    bool q_overflow = false;
    for (const std::int64_t j : active) q_overflow |= !std::isfinite(q[static_cast<std::size_t>(j)]);

    SdcaResult res;
    SplitMix64 rng(p.seed);
    const auto gap_met = [&p](const detail::Objectives& o) {
        return o.primal - o.dual <= p.tol * std::max(1.0, std::abs(o.primal));
    };
    // The visiting list: the active rows not shrunk (see "Shrinking" above).
    std::vector<std::int64_t> order = active;
    const double inf = std::numeric_limits<double>::infinity();
    double shrink_above = inf;  // the largest violation of the previous epoch
    double check_below = inf;   // check the gap once a shrunk epoch's violation is this small
    detail::Objectives obj{0.0, 0.0, 0.0};
    bool met = false, nonfinite = q_overflow;
    while (!nonfinite && res.epochs < p.max_epochs) {
        const bool full = order.size() == active.size();
        for (std::size_t i = order.size(); i > 1; --i)
            std::swap(order[i - 1], order[static_cast<std::size_t>(rng.below(i))]);
        double max_violation = 0.0;
        std::size_t kept = 0;
        for (std::size_t k = 0; k < order.size(); ++k) {
            const std::int64_t j = order[k];
            const double z = X.dot(j, theta) + p.beta + bs * w_c;
            const double a = p.A[j], b = p.B[j], x = xi[j];
            const detail::Violation v = detail::violation(x, z, a, b, p.tau);
            max_violation = std::max(max_violation, v.violation);
            if (v.margin > shrink_above) continue;  // optimal with room to spare: skip until the next full pass
            order[kept++] = j;
            const double updated = detail::coordinate_step(x, z, q[static_cast<std::size_t>(j)], a, b, p.tau);
            const double delta = updated - x;
            if (delta == 0.0) continue;
            xi[j] = updated;
            X.axpy(j, -delta * inv_lam_n, theta);
            w_c -= delta * bs * inv_lam_n;
        }
        order.resize(kept);
        ++res.epochs;
        if (!std::isfinite(max_violation) || !std::isfinite(w_c)) {
            nonfinite = true;
            break;
        }
        shrink_above = max_violation;
        if (!full && max_violation > check_below) continue;
        // A full pass, or the shrunk problem is nearly solved: the gap over every row.
        obj = detail::objectives(X, p, active, theta, w_c, xi);
        if (!std::isfinite(obj.primal) || !std::isfinite(obj.dual)) {
            nonfinite = true;
            break;
        }
        if (gap_met(obj)) {
            // Confirm at theta recomputed from xi (no accumulated drift).
            detail::theta_of_xi(X, p, active, xi, theta, w_c);
            obj = detail::objectives(X, p, active, theta, w_c, xi);
            if (gap_met(obj)) {
                met = true;
                break;
            }
        }
        if (!full) {  // unshrink: the next epoch visits every active row again
            order = active;
            shrink_above = inf;
        }
        check_below = 0.1 * max_violation;
    }
    if (!met && !nonfinite) {
        detail::theta_of_xi(X, p, active, xi, theta, w_c);
        obj = detail::objectives(X, p, active, theta, w_c, xi);
        met = gap_met(obj);
    }
    if (nonfinite) obj.primal = obj.dual = inf;
    res.primal = obj.primal;
    res.dual = obj.dual;
    res.gap = obj.primal - obj.dual;
    res.sum_xi = obj.sum_xi;
    res.bias = p.regularized_bias ? p.bias_scale * w_c : p.beta;
    if (!std::isfinite(res.primal) || !std::isfinite(res.dual) || !std::isfinite(res.bias))
        res.status = SdcaStatus::nonfinite;
    else
        res.status = met ? SdcaStatus::converged : SdcaStatus::max_epochs;
    return res;
}

}  // namespace rateopt
