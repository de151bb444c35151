// Design
// ------
// Layer: core (no Python types). The one fast exp of the core, used by the
// kernel blocks (rbf, laplacian: kernel_block.hpp) and by the multiclass
// pass's softmax (multiclass_pass.hpp).
//
// exp_nonpositive(x) = exp(x) for -708 <= x <= 0, without calls, branches or
// double->int64 conversions, so that loops over it vectorize (AVX2 has no such
// conversion). Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, a degree-13
// Taylor polynomial of exp(r) (truncation error < 1e-17 relative), and 2^k
// added to the exponent bits of the polynomial (exact: the result is a normal
// double on the whole domain, exp(-708) ~ 3e-308). Within 2 ulp of numpy.exp
// on the whole domain (1 ulp measured; tests/core/test_fast_exp.py checks it).
// Callers clamp x to the domain, in a loop of their own: with the comparison
// inside, GCC does not vectorize the loop.
//
// Forced inline: the callers' loops are built once per ISA (target_clones),
// and each clone must compile the polynomial for its own ISA (an out-of-line
// copy would be baseline code, and with FMA contraction not bit-identical).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__GNUC__)
#define ROPT_ALWAYS_INLINE inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define ROPT_ALWAYS_INLINE __forceinline
#else
#define ROPT_ALWAYS_INLINE inline
#endif

namespace rateopt {

constexpr double kMaxExpArg = 708.0;  // exp(-708) is still a normal double; beyond, std::exp

ROPT_ALWAYS_INLINE double exp_nonpositive(double x) {
    constexpr double log2e = 1.4426950408889634;
    constexpr double ln2_hi = 6.93147180369123816490e-01;  // the high bits of ln 2 (k ln2_hi exact)
    constexpr double ln2_lo = 1.90821492927058770002e-10;
    constexpr double shifter = 6755399441055744.0;         // 1.5 * 2^52: rounds to nearest integer
    // t's low mantissa bits hold k = round(x log2 e) in two's complement.
    const double t = x * log2e + shifter;
    const double kd = t - shifter;
    const double r = (x - kd * ln2_hi) - kd * ln2_lo;
    double p = 1.0 / 6227020800.0;  // 1/13!
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    std::uint64_t tbits, bits;
    std::memcpy(&tbits, &t, sizeof tbits);
    std::memcpy(&bits, &p, sizeof bits);
    // (k + 2^51) << 52 == k << 52 modulo 2^64: adds k to the exponent of p.
    bits += tbits << 52;
    double out;
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

}  // namespace rateopt
