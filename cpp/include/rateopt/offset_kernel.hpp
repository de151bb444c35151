// Design
// ------
// Layer: core (no Python types). The offset-atom rate kernel: the fused rate
// kernel (rate_kernel.hpp) for problems whose atoms may see the score through
// a trainable offset (methods_spec §D.5: ROC-AUC through thresholded rates).
// Atom a has offset_id[a] in [-1, n_offsets); -1 means no offset. Row j sees
// atom a through the score
//     s_ja = s_j - b[offset_id[a]]      (s_j = x_j . theta + bias; s_j if -1),
// and one pass computes, as the plain kernel does but at s_ja:
//   * every atom's 0-1 rate      sum_j v_ja 1[s_ja >= 0]
//   * its hinge rates            sum_j v_ja max(0, margin +/- s_ja)
//   * for each of k combinations coef_c the proxy value of sum_a coef_c,a p+_a:
//     a row's atoms are grouped by offset id (atoms of one group see the same
//     score); within a group the net rule applies, u_cjg = sum_{a in g}
//     coef_c,a v_ja, and the term u_cjg 1[s_jg >= 0] is replaced by the
//     combination's proxy (proxy.hpp) at s_jg. Across groups the scores differ,
//     so each group is bounded separately. With one atom per group this is the
//     per-atom rule of §D.5 (coef_a v > 0: coef_a v max(0, m + s_ja); < 0:
//     |coef_a v| max(0, m - s_ja) - |coef_a v|); with no offset at all it is
//     the plain kernel's net rule, term for term;
//   * the gradient: each group's slope t adds to the row's d_j (theta and the
//     bias get d_j x_j and d_j) and, since ds_jg/db_g = -1, subtracts from
//     grad_offsets[g]; summed with grad_weights, or one gradient per
//     combination when asked.
// Cost: O(nnz(X) + k nnz(atoms)) per call, one axpy per row (k when separate
// gradients are asked for); the offset gradient is O(k) per group of a row.
// The plain kernel is untouched: the Python layer calls this one only when
// some atom has an offset.
//
// Parallelism and minibatches: as rate_kernel.hpp (contiguous static chunks,
// one per requested thread, private accumulators reduced in chunk order, so a
// fixed requested thread count gives bit-identical results; `rows` visits a
// minibatch and scales every sum by n_rows / n_batch).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "matrix_view.hpp"
#include "parallel.hpp"
#include "proxy.hpp"
#include "rate_kernel.hpp"

namespace rateopt {

// Which offset each atom sees, and the offsets.
struct AtomOffsets {
    const std::int32_t* offset_id = nullptr;  // in: (n_atoms,) in [-1, n_offsets)
    const double* offsets = nullptr;          // in: (n_offsets,) finite
    std::int64_t n_offsets = 0;
};

struct OffsetKernelOutput {
    RateKernelOutput base;   // the plain kernel's outputs, at the shifted scores
    double* grad_offsets;    // out: (n_grads, n_offsets)
};

namespace detail {

struct alignas(64) OffsetScratch {
    KernelScratch base;
    std::vector<double> grad_offsets;  // (n_grads, n_offsets)
    std::vector<double> u;             // (n_offsets + 1, k): net coefficients per group
    std::vector<unsigned char> seen;   // (n_offsets + 1,)
    std::vector<std::int64_t> touched; // groups of the current row, in order of first touch
    void init(std::int64_t n_atoms, std::int64_t n_features, std::int64_t k, std::int64_t n_grads,
              std::int64_t n_offsets) {
        base.init(n_atoms, n_features, k, n_grads);
        grad_offsets.assign(static_cast<std::size_t>(n_grads * n_offsets), 0.0);
        u.assign(static_cast<std::size_t>((n_offsets + 1) * k), 0.0);
        seen.assign(static_cast<std::size_t>(n_offsets + 1), 0);
        touched.clear();
        touched.reserve(8);
    }
};

// Group slot of an atom: 0 for no offset, g + 1 for offset g.
inline std::int64_t offset_slot(const AtomOffsets& off, std::int32_t a) {
    return static_cast<std::int64_t>(off.offset_id[a]) + 1;
}

// The shifted score of a group slot.
inline double slot_score(const AtomOffsets& off, double s, std::int64_t slot) {
    return slot == 0 ? s : s - off.offsets[slot - 1];
}

// coef_t is atom-major (n_atoms, k). Returns 1 if a score of the row is not
// finite (the caller then treats the whole call as failed), else 0.
template <class Matrix>
inline int process_offset_row(const Matrix& X, std::int64_t j, const double* theta, double bias,
                              const AtomView& atoms, const AtomOffsets& off, const double* coef_t,
                              const Combinations& cb, double margin, OffsetScratch& acc) {
    double s;
    if (!row_score(X, j, theta, bias, s)) return 1;
    const std::int64_t k = cb.k;
    KernelScratch& b = acc.base;
    const bool finite = atoms.for_each_entry(j, [&](std::int32_t a, double v) {
        const std::int64_t slot = offset_slot(off, a);
        const double sa = slot_score(off, s, slot);
        if (!std::isfinite(sa)) return false;
        add_atom_rates(b, a, v, RowHinges(sa, margin));
        if (!acc.seen[slot]) {
            acc.seen[slot] = 1;
            acc.touched.push_back(slot);
        }
        double* ug = acc.u.data() + slot * k;
        const double* ca = coef_t + static_cast<std::int64_t>(a) * k;
        for (std::int64_t c = 0; c < k; ++c) ug[c] += ca[c] * v;
        return true;
    });
    if (!finite) return 1;
    double d = 0.0;
    for (const std::int64_t slot : acc.touched) {
        double* ug = acc.u.data() + slot * k;
        // ds_jg/db_g = -1: each slope added for the group also leaves its offset.
        const std::int64_t stride = cb.separate_gradients ? off.n_offsets : 0;  // gradient c's offsets
        add_combination_terms(X, j, ug, slot_score(off, s, slot), margin, cb, b, d, [&](std::int64_t c, double g) {
            if (slot > 0) acc.grad_offsets[static_cast<std::size_t>(c * stride + slot - 1)] -= g;
        });
        std::fill(ug, ug + k, 0.0);
        acc.seen[slot] = 0;
    }
    acc.touched.clear();
    add_row_gradient(X, j, d, b);
    return 0;
}

}  // namespace detail

// Runs the offset-atom kernel. Inputs are assumed validated (shapes,
// finiteness of theta/bias/offsets/coef, offset ids in [-1, n_offsets), atom
// ids, proxy kinds): the binding layer checks them.
template <class Matrix>
void offset_rate_kernel(const Matrix& X,
                        const double* theta,       // in: (n_features,)
                        double bias,
                        const AtomView& atoms,
                        const AtomOffsets& off,
                        const Combinations& cb,
                        double margin,
                        const std::int64_t* rows,  // in: (n_batch,) or null
                        std::int64_t n_batch,
                        int n_threads,
                        OffsetKernelOutput& result) {
    RateKernelOutput& out = result.base;
    const std::int64_t n_visit = rows ? n_batch : X.n_rows;
    const std::int64_t n_atoms = atoms.n_atoms;
    const std::int64_t n_features = X.n_cols;
    const std::int64_t k = cb.k;
    const std::int64_t n_grads = cb.separate_gradients ? k : 1;
    const std::int64_t n_off = off.n_offsets;
    const int threads = effective_threads(n_threads, n_visit, 2048);

    std::vector<double> coef_t(static_cast<std::size_t>(n_atoms * k));
    for (std::int64_t c = 0; c < k; ++c)
        for (std::int64_t a = 0; a < n_atoms; ++a) coef_t[a * k + c] = cb.coef[c * n_atoms + a];

    std::vector<detail::OffsetScratch> scratch(static_cast<std::size_t>(threads));
    parallel_chunks(threads, [&](int t) {
        detail::OffsetScratch& acc = scratch[static_cast<std::size_t>(t)];
        acc.init(n_atoms, n_features, k, n_grads, n_off);
        std::int64_t begin, end;
        chunk_range(n_visit, threads, t, begin, end);
        std::int64_t nonfinite = 0;
        for (std::int64_t r = begin; r < end; ++r) {
            const std::int64_t j = rows ? rows[r] : r;
            nonfinite += detail::process_offset_row(X, j, theta, bias, atoms, off, coef_t.data(), cb, margin, acc);
        }
        acc.base.nonfinite = nonfinite;
    });

    const double scale = detail::pass_scale(rows, n_batch, X.n_rows);
    detail::reduce_outputs(scratch, [](const detail::OffsetScratch& s) -> const detail::KernelScratch& { return s.base; },
                           n_atoms, n_features, cb, scale, out);
    std::fill(result.grad_offsets, result.grad_offsets + n_grads * n_off, 0.0);
    for (const auto& s : scratch)
        for (std::int64_t q = 0; q < n_grads * n_off; ++q) result.grad_offsets[q] += s.grad_offsets[q];
    if (scale != 1.0)
        for (std::int64_t q = 0; q < n_grads * n_off; ++q) result.grad_offsets[q] *= scale;
}

}  // namespace rateopt
