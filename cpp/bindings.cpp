// rateopt._core, the one pybind11 module. It only converts and checks the
// arguments (dtypes, contiguity, lengths, cheap ranges), allocates outputs while
// holding the GIL, releases the GIL around the core call, and maps errors. The
// math lives in the headers under cpp/include/rateopt/ (no Python types there).
// The expensive checks (finiteness, index ranges) are separate functions that
// the Python boundary (rateopt.core) calls once per data object.
//
// Sections, in order (PYBIND11_MODULE at the end registers them in the same order):
//   1. argument conversion and validation helpers
//   2. the feature matrix: one dense/CSR dispatch to the concrete matrix view
//   3. one-time data checks
//   4. rate kernels (plain, offsets), the fused K-column multiclass pass, the boosting pass
//   5. kernel blocks (kernel models' features)
//   6. multiplier updates, stationary distribution, projections
//   7. SDCA
//   8. the training loop
//   9. build info, threads and test support
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rateopt/boosting_multiclass_pass.hpp"
#include "rateopt/boosting_pass.hpp"
#include "rateopt/kernel_block.hpp"
#include "rateopt/lambda_player.hpp"
#include "rateopt/matrix_view.hpp"
#include "rateopt/multiclass_pass.hpp"
#include "rateopt/offset_kernel.hpp"
#include "rateopt/parallel.hpp"
#include "rateopt/rate_kernel.hpp"
#include "rateopt/sdca.hpp"
#include "rateopt/simplex.hpp"
#include "rateopt/train_loop.hpp"
#include "rateopt/validate.hpp"

namespace py = pybind11;
using std::int32_t;
using std::int64_t;

namespace {

// ============================================================================
// 1. Argument conversion and validation helpers
// ============================================================================

using darray = py::array_t<double, py::array::c_style>;

[[noreturn]] void type_error(const std::string& msg) { throw py::type_error(msg); }
[[noreturn]] void value_error(const std::string& msg) { throw py::value_error(msg); }

template <class T>
bool is_exact(const py::array& a) {
    return py::isinstance<py::array_t<T>>(a) && (a.flags() & py::array::c_style);
}

// Borrow a C-contiguous array of exactly dtype T and ndim, or raise TypeError.
// Never converts: the Python layer does the (warned) conversions.
template <class T>
py::array_t<T, py::array::c_style> borrow(const py::array& a, const char* name, int ndim) {
    if (!is_exact<T>(a))
        type_error(std::string(name) + " must be a C-contiguous array of dtype " +
                   py::str(py::dtype::of<T>()).cast<std::string>() + ", got dtype " +
                   py::str(a.dtype()).cast<std::string>());
    if (a.ndim() != ndim)
        value_error(std::string(name) + " must be " + std::to_string(ndim) + "-D, got " +
                    std::to_string(a.ndim()) + "-D");
    return py::reinterpret_borrow<py::array_t<T, py::array::c_style>>(a);
}

void check_len(int64_t got, int64_t want, const std::string& what) {
    if (got != want)
        value_error(what + " has length " + std::to_string(got) + ", expected " + std::to_string(want));
}

int check_threads(int n_threads) {
    if (n_threads < 1) value_error("n_threads must be >= 1 at the core boundary, got " + std::to_string(n_threads));
    return n_threads;
}

int64_t square_side(const darray& M, const char* name) {
    if (M.ndim() != 2 || M.shape(0) != M.shape(1) || M.shape(0) < 1)
        value_error(std::string(name) + " must be a non-empty square matrix");
    return M.shape(0);
}

darray copy_of(const darray& a) {
    darray out(std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()));
    std::copy(a.data(), a.data() + a.size(), out.mutable_data());
    return out;
}

// ---- the arguments of the rate kernels and the training loop's datasets ------

struct AtomArgs {
    py::array indptr;   // int32 or int64
    py::array indices;  // uint8, uint16 or int32
    darray weights;
    rateopt::AtomView view;
};

// The narrow atom table (matrix_view.hpp AtomView): int32 or int64 row pointers,
// uint8, uint16 or int32 atom ids, float64 weights; each borrowed, never converted.
AtomArgs atom_args(const py::array& indptr, const py::array& indices, const py::array& weights,
                   int64_t n_atoms, int64_t n_rows) {
    AtomArgs a{indptr, indices, borrow<double>(weights, "atoms.weights", 1), {}};
    rateopt::AtomView& v = a.view;
    int64_t first = 0, last = 0, n_ptr = 0;
    if (is_exact<int32_t>(indptr)) {
        const auto p = borrow<int32_t>(indptr, "atoms.indptr", 1);
        v.indptr32 = p.data();
        n_ptr = p.shape(0);
        if (n_ptr > 0) first = p.at(0), last = p.at(n_ptr - 1);
    } else {
        const auto p = borrow<int64_t>(indptr, "atoms.indptr", 1);  // raises for any other dtype
        v.indptr64 = p.data();
        n_ptr = p.shape(0);
        if (n_ptr > 0) first = p.at(0), last = p.at(n_ptr - 1);
    }
    int64_t nnz = 0;
    if (is_exact<uint8_t>(indices)) {
        v.indices = borrow<uint8_t>(indices, "atoms.indices", 1).data();
        v.id_width = rateopt::AtomIdWidth::kU8;
    } else if (is_exact<uint16_t>(indices)) {
        v.indices = borrow<uint16_t>(indices, "atoms.indices", 1).data();
        v.id_width = rateopt::AtomIdWidth::kU16;
    } else {
        if (!is_exact<int32_t>(indices))
            type_error("atoms.indices must be a C-contiguous array of dtype uint8, uint16 or int32, got dtype " +
                       py::str(indices.dtype()).cast<std::string>());
        v.indices = borrow<int32_t>(indices, "atoms.indices", 1).data();
        v.id_width = rateopt::AtomIdWidth::kI32;
    }
    nnz = indices.shape(0);
    check_len(n_ptr, n_rows + 1, "atoms.indptr (n_samples + 1)");
    check_len(a.weights.shape(0), nnz, "atoms.weights (nnz of atoms.indices)");
    if (first != 0 || last != nnz) value_error("atoms.indptr must start at 0 and end at len(atoms.indices)");
    if (n_atoms < 0 || n_atoms > std::numeric_limits<int32_t>::max())
        value_error("atoms.n_atoms out of range");
    v.weights = a.weights.data();
    v.n_rows = n_rows;
    v.n_atoms = n_atoms;
    return a;
}

// The k combinations of one kernel call, borrowed and checked against n_atoms.
struct CombinationArgs {
    darray coef;
    py::array_t<int32_t, py::array::c_style> kinds;
    darray grad_weights;
    rateopt::Combinations view;
};

CombinationArgs combination_args(const py::array& coef_in, const py::array& kinds_in,
                                 const py::array& weights_in, bool separate, int64_t n_atoms) {
    CombinationArgs c{borrow<double>(coef_in, "coef", 2), borrow<int32_t>(kinds_in, "proxies", 1),
                      borrow<double>(weights_in, "grad_weights", 1), {}};
    const int64_t k = c.coef.shape(0);
    if (k < 1) value_error("coef must hold at least one combination");
    check_len(c.coef.shape(1), n_atoms, "coef rows (n_atoms)");
    check_len(c.kinds.shape(0), k, "proxies (one per combination)");
    check_len(c.grad_weights.shape(0), k, "grad_weights (one per combination)");
    for (int64_t i = 0; i < k; ++i)
        if (!rateopt::valid_proxy_kind(c.kinds.at(i)))
            value_error("proxies holds an unknown proxy kind " + std::to_string(c.kinds.at(i)));
    c.view = rateopt::Combinations{k, c.coef.data(), c.kinds.data(), c.grad_weights.data(), separate};
    return c;
}

// The per-atom score offsets of the offset kernel: offset_ids (int32, one per
// atom, in [-1, n_offsets)) and offsets (float64, finite).
struct OffsetArgs {
    py::array_t<int32_t, py::array::c_style> offset_ids;
    darray offsets;
    rateopt::AtomOffsets view;
};

OffsetArgs offset_args(const py::array& ids_in, const py::array& offsets_in, int64_t n_atoms) {
    OffsetArgs o{borrow<int32_t>(ids_in, "offset_ids", 1), borrow<double>(offsets_in, "offsets", 1), {}};
    check_len(o.offset_ids.shape(0), n_atoms, "offset_ids (n_atoms)");
    const int64_t n_off = o.offsets.shape(0);
    if (n_off > std::numeric_limits<int32_t>::max() - 1) value_error("offsets is too long");
    for (int64_t i = 0; i < n_off; ++i)
        if (!std::isfinite(o.offsets.at(i)))
            value_error("offsets holds a non-finite value at position " + std::to_string(i));
    for (int64_t a = 0; a < n_atoms; ++a) {
        const int32_t g = o.offset_ids.at(a);
        if (g < -1 || g >= n_off)
            value_error("offset_ids holds " + std::to_string(g) + " at atom " + std::to_string(a) +
                        ", outside [-1, n_offsets=" + std::to_string(n_off) + ")");
    }
    o.view = rateopt::AtomOffsets{o.offset_ids.data(), o.offsets.data(), n_off};
    return o;
}

// The optional minibatch rows of a kernel pass (None: every row), borrowed and range-checked.
struct RowsArg {
    py::array_t<int64_t, py::array::c_style> arr;
    const int64_t* rows = nullptr;
    int64_t n_batch = 0;

    RowsArg(const py::object& rows_in, int64_t n_rows) {
        if (rows_in.is_none()) return;
        arr = borrow<int64_t>(rows_in.cast<py::array>(), "rows", 1);
        rows = arr.data();
        n_batch = arr.shape(0);
        if (n_batch == 0) value_error("rows must not be empty");
        if (rateopt::first_out_of_range(rows, n_batch, n_rows, 1) >= 0)
            value_error("rows holds a row index outside [0, n_samples)");
    }
};

// ============================================================================
// 2. The feature matrix: one dispatch to the concrete matrix view
// ============================================================================
// with_dense and with_csr borrow X and call f with its concrete view, so f (a
// generic lambda) is instantiated once per layout: DenseView<float|double>,
// CsrView<float|double, int32_t|int64_t>.

// X's ndim, checked by the dense entry points before anything else.
void check_matrix_ndim(const py::array& X) {
    if (X.ndim() != 2) value_error("X must be 2-D, got " + std::to_string(X.ndim()) + "-D");
}

// Calls f with the concrete view of a dense X (2-D, float32 or float64, C-contiguous).
template <class F>
auto with_dense(const py::array& X, F&& f) {
    if (is_exact<float>(X)) {
        const auto x = borrow<float>(X, "X", 2);
        return f(rateopt::DenseView<float>{x.data(), x.shape(0), x.shape(1)});
    }
    const auto x = borrow<double>(X, "X", 2);
    return f(rateopt::DenseView<double>{x.data(), x.shape(0), x.shape(1)});
}

// X in scipy's CSR layout as the *_csr entry points receive it. `structure`:
// also check nnz (len(data) == len(indices)) and indptr's ends; kernel_block_csr
// checks only indptr's length (its caller's FeatureMatrix checks the rest once).
struct CsrArg {
    const py::array& data;
    const py::array& indices;
    const py::array& indptr;
    int64_t n_rows;
    int64_t n_cols;
    bool structure = true;
};

template <class T, class I>
rateopt::CsrView<T, I> csr_view(const CsrArg& X) {
    const auto x = borrow<T>(X.data, "X.data", 1);
    const auto ind = borrow<I>(X.indices, "X.indices", 1);
    const auto ptr = borrow<I>(X.indptr, "X.indptr", 1);
    const int64_t n = X.n_rows;
    check_len(ptr.shape(0), n + 1, "X.indptr (n_samples + 1)");
    if (X.structure) {
        check_len(x.shape(0), ind.shape(0), "X.data (nnz of X.indices)");
        if (static_cast<int64_t>(ptr.at(0)) != 0 || static_cast<int64_t>(ptr.at(n)) > ind.shape(0))
            value_error("X.indptr must start at 0 and end at most at len(X.indices)");
    }
    // The pointers stay valid after x, ind and ptr go: they borrow X's arrays.
    return {x.data(), ind.data(), ptr.data(), n, X.n_cols};
}

// Calls f with the concrete view of a CSR X: float32/float64 data, int32/int64 indices and indptr.
template <class F>
auto with_csr(const CsrArg& X, F&& f) {
    const bool f32 = is_exact<float>(X.data), i32 = is_exact<int32_t>(X.indices);
    if (f32 && i32) return f(csr_view<float, int32_t>(X));
    if (f32) return f(csr_view<float, int64_t>(X));
    if (i32) return f(csr_view<double, int32_t>(X));
    return f(csr_view<double, int64_t>(X));
}

// ============================================================================
// 3. One-time data checks (the Python boundary runs them once per data object)
// ============================================================================

// Call f with the 1-D array borrowed at its dtype: float32 or else float64
// (floats), int32 or else int64 (indices). f releases the GIL itself.
template <class F>
auto with_float_array(const py::array& a, F&& f) {
    if (is_exact<float>(a)) return f(borrow<float>(a, "array", 1));
    return f(borrow<double>(a, "array", 1));
}

template <class F>
auto with_index_array(const py::array& a, F&& f) {
    if (is_exact<int32_t>(a)) return f(borrow<int32_t>(a, "array", 1));
    return f(borrow<int64_t>(a, "array", 1));
}

int64_t first_nonfinite(const py::array& a, int n_threads) {
    check_threads(n_threads);
    return with_float_array(a, [&](const auto& x) {
        py::gil_scoped_release release;
        return rateopt::first_nonfinite(x.data(), x.shape(0), n_threads);
    });
}

int64_t first_out_of_range(const py::array& a, int64_t bound, int n_threads) {
    check_threads(n_threads);
    return with_index_array(a, [&](const auto& x) {
        py::gil_scoped_release release;
        return rateopt::first_out_of_range(x.data(), x.shape(0), bound, n_threads);
    });
}

int64_t first_decrease(const py::array& a, int n_threads) {
    check_threads(n_threads);
    return with_index_array(a, [&](const auto& x) {
        py::gil_scoped_release release;
        return x.shape(0) == 0 ? -1 : rateopt::first_decrease(x.data(), x.shape(0) - 1, n_threads);
    });
}

int64_t first_negative(const py::array& a, int n_threads) {
    check_threads(n_threads);
    auto x = borrow<double>(a, "array", 1);
    py::gil_scoped_release release;
    return rateopt::first_negative(x.data(), x.shape(0), n_threads);
}

uint64_t memory_floor(const py::array& a, int n_threads) {
    check_threads(n_threads);
    if (!(a.flags() & py::array::c_style)) type_error("memory_floor needs a C-contiguous array");
    const auto* bytes = static_cast<const unsigned char*>(a.data());
    const int64_t n_bytes = a.nbytes();
    py::gil_scoped_release release;
    return rateopt::stream_checksum(bytes, n_bytes, n_threads);
}

// ============================================================================
// 4. Rate kernels: plain, with per-atom offsets (AUC, issue 11), multiclass
// ============================================================================
// The combinations' proxies (hinge, logistic, ramp) and the k-combination
// gradients are the core's (rate_kernel.hpp, offset_kernel.hpp).

// One pass of a combination kernel: rate_kernel.hpp's, or offset_kernel.hpp's when `off` is given (which
// also checks the bias and margin). The tuple holds the outputs, then grad_offsets (the offset kernel's),
// then the count of non-finite scores.
template <class Matrix>
py::tuple run_kernel(const Matrix& X, const py::array& theta_in, double bias, const AtomArgs& atoms,
                     const OffsetArgs* off, const CombinationArgs& cb, double margin, const py::object& rows_in,
                     int n_threads) {
    auto theta = borrow<double>(theta_in, "theta", 1);
    check_len(theta.shape(0), X.n_cols, "theta (n_features)");
    const RowsArg batch(rows_in, X.n_rows);
    const int64_t* rows = batch.rows;
    const int64_t n_batch = batch.n_batch;
    check_threads(n_threads);
    if (off != nullptr) {
        if (!std::isfinite(bias)) value_error("bias must be finite");
        if (!(margin > 0.0) || !std::isfinite(margin)) value_error("margin must be a finite number > 0");
    }
    const int64_t n_atoms = atoms.view.n_atoms;
    const int64_t k = cb.view.k;
    const int64_t n_grads = cb.view.separate_gradients ? k : 1;
    darray rates(n_atoms), ppos(n_atoms), pneg(n_atoms), proxy_values(k), values(k), grad_bias(n_grads);
    darray grad({n_grads, X.n_cols});
    rateopt::RateKernelOutput out{rates.mutable_data(), ppos.mutable_data(), pneg.mutable_data(),
                                  proxy_values.mutable_data(), values.mutable_data(), grad.mutable_data(),
                                  grad_bias.mutable_data()};
    if (off == nullptr) {
        {
            py::gil_scoped_release release;
            rateopt::rate_kernel(X, theta.data(), bias, atoms.view, cb.view, margin, rows, n_batch, n_threads, out);
        }
        return py::make_tuple(rates, ppos, pneg, proxy_values, values, grad, grad_bias, out.n_nonfinite_scores);
    }
    darray grad_offsets({n_grads, off->view.n_offsets});
    rateopt::OffsetKernelOutput off_out{out, grad_offsets.mutable_data()};
    {
        py::gil_scoped_release release;
        rateopt::offset_rate_kernel(X, theta.data(), bias, atoms.view, off->view, cb.view, margin, rows, n_batch,
                                    n_threads, off_out);
    }
    return py::make_tuple(rates, ppos, pneg, proxy_values, values, grad, grad_bias, grad_offsets,
                          off_out.base.n_nonfinite_scores);
}

py::tuple rate_kernel_dense(const py::array& X, const py::array& theta, double bias,
                            const py::array& atom_indptr, const py::array& atom_indices,
                            const py::array& atom_weights, int64_t n_atoms, const py::array& coef_in,
                            const py::array& proxies, const py::array& grad_weights, bool separate,
                            double margin, const py::object& rows, int n_threads) {
    check_matrix_ndim(X);
    AtomArgs atoms = atom_args(atom_indptr, atom_indices, atom_weights, n_atoms, X.shape(0));
    CombinationArgs coef = combination_args(coef_in, proxies, grad_weights, separate, atoms.view.n_atoms);
    return with_dense(X, [&](const auto& Xv) {
        return run_kernel(Xv, theta, bias, atoms, nullptr, coef, margin, rows, n_threads);
    });
}

py::tuple rate_kernel_csr(const py::array& data, const py::array& indices, const py::array& indptr,
                          int64_t n, int64_t d, const py::array& theta, double bias,
                          const py::array& atom_indptr, const py::array& atom_indices,
                          const py::array& atom_weights, int64_t n_atoms, const py::array& coef_in,
                          const py::array& proxies, const py::array& grad_weights, bool separate,
                          double margin, const py::object& rows, int n_threads) {
    AtomArgs atoms = atom_args(atom_indptr, atom_indices, atom_weights, n_atoms, n);
    CombinationArgs coef = combination_args(coef_in, proxies, grad_weights, separate, atoms.view.n_atoms);
    return with_csr({data, indices, indptr, n, d}, [&](const auto& Xv) {
        return run_kernel(Xv, theta, bias, atoms, nullptr, coef, margin, rows, n_threads);
    });
}

py::tuple offset_kernel_dense(const py::array& X, const py::array& theta, double bias,
                              const py::array& atom_indptr, const py::array& atom_indices,
                              const py::array& atom_weights, int64_t n_atoms, const py::array& offset_ids,
                              const py::array& offsets, const py::array& coef_in, const py::array& proxies,
                              const py::array& grad_weights, bool separate, double margin, const py::object& rows,
                              int n_threads) {
    check_matrix_ndim(X);
    AtomArgs atoms = atom_args(atom_indptr, atom_indices, atom_weights, n_atoms, X.shape(0));
    OffsetArgs off = offset_args(offset_ids, offsets, atoms.view.n_atoms);
    CombinationArgs coef = combination_args(coef_in, proxies, grad_weights, separate, atoms.view.n_atoms);
    return with_dense(X, [&](const auto& Xv) {
        return run_kernel(Xv, theta, bias, atoms, &off, coef, margin, rows, n_threads);
    });
}

py::tuple offset_kernel_csr(const py::array& data, const py::array& indices, const py::array& indptr, int64_t n,
                            int64_t d, const py::array& theta, double bias, const py::array& atom_indptr,
                            const py::array& atom_indices, const py::array& atom_weights, int64_t n_atoms,
                            const py::array& offset_ids, const py::array& offsets, const py::array& coef_in,
                            const py::array& proxies, const py::array& grad_weights, bool separate, double margin,
                            const py::object& rows, int n_threads) {
    AtomArgs atoms = atom_args(atom_indptr, atom_indices, atom_weights, n_atoms, n);
    OffsetArgs off = offset_args(offset_ids, offsets, atoms.view.n_atoms);
    CombinationArgs coef = combination_args(coef_in, proxies, grad_weights, separate, atoms.view.n_atoms);
    return with_csr({data, indices, indptr, n, d}, [&](const auto& Xv) {
        return run_kernel(Xv, theta, bias, atoms, &off, coef, margin, rows, n_threads);
    });
}

// ---- the fused K-column multiclass pass (multiclass_pass.hpp) ----------------
// The cells (int32) and their weights are a ClassCells, validated once (ids in
// [0, n_cells), weights finite and >= 0); here only lengths and shapes are
// checked, and the proxy codes.

struct MulticlassArgs {
    darray coef, intercept, cost_objective, cost_constraints, weights;
    py::array_t<int32_t, py::array::c_style> cells;
    rateopt::MulticlassModel model;
    rateopt::ClassCellsView cell_view;
    rateopt::MulticlassCosts costs;
};

// coef (n_features, K), K >= 2, and intercept (K,).
rateopt::MulticlassModel multiclass_model(const darray& coef, const darray& intercept, int64_t n_features) {
    if (coef.shape(0) != n_features || coef.shape(1) < 2)
        value_error("coef must have shape (n_features=" + std::to_string(n_features) + ", n_classes >= 2), got (" +
                    std::to_string(coef.shape(0)) + ", " + std::to_string(coef.shape(1)) + ")");
    check_len(intercept.shape(0), coef.shape(1), "intercept (n_classes)");
    return {coef.data(), intercept.data(), coef.shape(1)};
}

rateopt::MulticlassProxy multiclass_proxy(int code, const char* name) {
    if (!rateopt::valid_multiclass_proxy(code))
        value_error(std::string(name) + " holds an unknown multiclass proxy code " + std::to_string(code));
    return static_cast<rateopt::MulticlassProxy>(code);
}

MulticlassArgs multiclass_args(const py::array& coef, const py::array& intercept, const py::array& cells,
                               const py::array& cell_weights, int64_t n_cells, const py::array& cost_objective,
                               const py::array& cost_constraints, int objective_proxy, int constraint_proxy,
                               int64_t n_rows, int64_t n_features) {
    MulticlassArgs a{borrow<double>(coef, "coef", 2),
                     borrow<double>(intercept, "intercept", 1),
                     borrow<double>(cost_objective, "cost_objective", 2),
                     borrow<double>(cost_constraints, "cost_constraints", 2),
                     borrow<double>(cell_weights, "cells.weights", 1),
                     borrow<int32_t>(cells, "cells.cells", 1),
                     {},
                     {},
                     {}};
    a.model = multiclass_model(a.coef, a.intercept, n_features);
    const int64_t K = a.model.n_classes;
    check_len(a.cells.shape(0), n_rows, "cells.cells (n_samples)");
    check_len(a.weights.shape(0), n_rows, "cells.weights (n_samples)");
    if (n_cells < 1 || n_cells > std::numeric_limits<int32_t>::max()) value_error("cells.n_cells out of range");
    for (const darray* cost : {&a.cost_objective, &a.cost_constraints}) {
        const char* name = cost == &a.cost_objective ? "cost_objective" : "cost_constraints";
        if (cost->shape(0) != n_cells || cost->shape(1) != K)
            value_error(std::string(name) + " must have shape (n_cells=" + std::to_string(n_cells) +
                        ", n_classes=" + std::to_string(K) + ")");
    }
    a.cell_view = rateopt::ClassCellsView{a.cells.data(), a.weights.data(), n_cells};
    a.costs = rateopt::MulticlassCosts{a.cost_objective.data(), a.cost_constraints.data(),
                                       multiclass_proxy(objective_proxy, "objective_proxy"),
                                       multiclass_proxy(constraint_proxy, "constraint_proxy")};
    return a;
}

template <class Matrix>
py::tuple run_multiclass_pass(const Matrix& X, const MulticlassArgs& a, bool gradient, double margin,
                              const py::object& rows_in, int n_threads, bool value) {
    check_threads(n_threads);
    if (!(margin > 0.0) || !std::isfinite(margin)) value_error("margin must be a finite number > 0");
    const RowsArg batch(rows_in, X.n_rows);
    const int64_t K = a.model.n_classes;
    darray counts({a.cell_view.n_cells, K});
    py::object grad = py::none(), grad_intercept = py::none();
    rateopt::MulticlassPassOutput out{counts.mutable_data(), nullptr, nullptr};
    out.want_proxy_value = value;
    if (gradient) {
        darray g({X.n_cols, K}), gi(K);
        out.grad = g.mutable_data();
        out.grad_intercept = gi.mutable_data();
        grad = g;
        grad_intercept = gi;
    }
    {
        py::gil_scoped_release release;
        rateopt::multiclass_pass(X, a.model, a.cell_view, a.costs, margin, batch.rows, batch.n_batch, n_threads,
                                 out);
    }
    return py::make_tuple(counts, out.proxy_value, out.objective_value, out.constraint_value, grad, grad_intercept,
                          out.n_nonfinite_scores);
}

py::tuple multiclass_pass_dense(const py::array& X, const py::array& coef, const py::array& intercept,
                                const py::array& cells, const py::array& cell_weights, int64_t n_cells,
                                const py::array& cost_objective, const py::array& cost_constraints,
                                int objective_proxy, int constraint_proxy, bool gradient, double margin,
                                const py::object& rows, int n_threads, bool value) {
    check_matrix_ndim(X);
    const MulticlassArgs a = multiclass_args(coef, intercept, cells, cell_weights, n_cells, cost_objective,
                                             cost_constraints, objective_proxy, constraint_proxy, X.shape(0),
                                             X.shape(1));
    return with_dense(X,
                      [&](const auto& Xv) {
                          return run_multiclass_pass(Xv, a, gradient, margin, rows, n_threads, value);
                      });
}

py::tuple multiclass_pass_csr(const py::array& data, const py::array& indices, const py::array& indptr, int64_t n,
                              int64_t d, const py::array& coef, const py::array& intercept, const py::array& cells,
                              const py::array& cell_weights, int64_t n_cells, const py::array& cost_objective,
                              const py::array& cost_constraints, int objective_proxy, int constraint_proxy,
                              bool gradient, double margin, const py::object& rows, int n_threads, bool value) {
    const MulticlassArgs a = multiclass_args(coef, intercept, cells, cell_weights, n_cells, cost_objective,
                                             cost_constraints, objective_proxy, constraint_proxy, n, d);
    return with_csr({data, indices, indptr, n, d},
                    [&](const auto& Xv) {
                        return run_multiclass_pass(Xv, a, gradient, margin, rows, n_threads, value);
                    });
}

template <class Matrix>
py::tuple run_multiclass_scores(const Matrix& X, const py::array& coef_in, const py::array& intercept_in,
                                int n_threads) {
    check_threads(n_threads);
    const auto coef = borrow<double>(coef_in, "coef", 2);
    const auto intercept = borrow<double>(intercept_in, "intercept", 1);
    const rateopt::MulticlassModel model = multiclass_model(coef, intercept, X.n_cols);
    darray scores({X.n_rows, model.n_classes});
    int64_t nonfinite;
    {
        py::gil_scoped_release release;
        nonfinite = rateopt::multiclass_scores(X, model, n_threads, scores.mutable_data());
    }
    return py::make_tuple(scores, nonfinite);
}

py::tuple multiclass_scores_dense(const py::array& X, const py::array& coef, const py::array& intercept,
                                  int n_threads) {
    check_matrix_ndim(X);
    return with_dense(X, [&](const auto& Xv) { return run_multiclass_scores(Xv, coef, intercept, n_threads); });
}

py::tuple multiclass_scores_csr(const py::array& data, const py::array& indices, const py::array& indptr, int64_t n,
                                int64_t d, const py::array& coef, const py::array& intercept, int n_threads) {
    return with_csr({data, indices, indptr, n, d},
                    [&](const auto& Xv) { return run_multiclass_scores(Xv, coef, intercept, n_threads); });
}

// ---- the boosting pass (boosting_pass.hpp) -----------------------------------
// scores (float32 or float64, one per row of the atom table), the combination's
// coefficients (one per atom, finite), and grad/hess: writable, C-contiguous,
// both float32 or both float64, written in place (the arrays the boosting
// backend consumes); hess_coef: None, or a curvature coefficient per atom
// (finite, >= 0) that replaces |u| in the Hessian. Returns (rates,
// n_nonfinite_scores).

template <class S, class G>
py::tuple run_boosting_pass(const py::array& scores_in, const AtomArgs& atoms, const darray& coef,
                            const double* hess_coef, int kind, double scale, py::array& grad_in, py::array& hess_in,
                            int n_threads) {
    const auto scores = borrow<S>(scores_in, "scores", 1);
    auto grad = borrow<G>(grad_in, "grad", 1);
    auto hess = borrow<G>(hess_in, "hess", 1);
    const int64_t n = atoms.view.n_rows;
    check_len(scores.shape(0), n, "scores (n_samples)");
    check_len(grad.shape(0), n, "grad (n_samples)");
    check_len(hess.shape(0), n, "hess (n_samples)");
    if (!grad.writeable() || !hess.writeable()) value_error("grad and hess must be writable");
    darray rates(atoms.view.n_atoms);
    rateopt::BoostingPassOutput<G> out{rates.mutable_data(), grad.mutable_data(), hess.mutable_data()};
    {
        py::gil_scoped_release release;
        rateopt::boosting_pass(scores.data(), atoms.view, coef.data(), hess_coef,
                               static_cast<rateopt::BoostingProxy>(kind), scale, n_threads, out);
    }
    return py::make_tuple(rates, out.n_nonfinite_scores);
}

py::tuple boosting_pass(const py::array& scores, const py::array& atom_indptr, const py::array& atom_indices,
                        const py::array& atom_weights, int64_t n_atoms, const py::array& coef_in, int proxy,
                        double scale, py::array grad, py::array hess, int n_threads, const py::object& hess_coef_in) {
    check_threads(n_threads);
    if (scores.ndim() != 1) value_error("scores must be 1-D, got " + std::to_string(scores.ndim()) + "-D");
    const AtomArgs atoms = atom_args(atom_indptr, atom_indices, atom_weights, n_atoms, scores.shape(0));
    const darray coef = borrow<double>(coef_in, "coef", 1);
    check_len(coef.shape(0), n_atoms, "coef (n_atoms)");
    for (int64_t a = 0; a < n_atoms; ++a)
        if (!std::isfinite(coef.at(a))) value_error("coef holds a non-finite value at atom " + std::to_string(a));
    darray hess_coef;  // empty: the Hessian's coefficient is |u|
    if (!hess_coef_in.is_none()) {
        hess_coef = borrow<double>(hess_coef_in.cast<py::array>(), "hess_coef", 1);
        check_len(hess_coef.shape(0), n_atoms, "hess_coef (n_atoms)");
        for (int64_t a = 0; a < n_atoms; ++a)
            if (!(std::isfinite(hess_coef.at(a)) && hess_coef.at(a) >= 0.0))
                value_error("hess_coef must be finite and >= 0, got a bad value at atom " + std::to_string(a));
    }
    const double* hc = hess_coef_in.is_none() ? nullptr : hess_coef.data();
    if (!rateopt::valid_boosting_proxy(proxy)) value_error("unknown boosting proxy code " + std::to_string(proxy));
    if (!std::isfinite(scale)) value_error("scale must be finite");
    const bool s32 = is_exact<float>(scores), g32 = is_exact<float>(grad);
    if (g32 != is_exact<float>(hess)) type_error("grad and hess must have the same dtype (float32 or float64)");
    if (s32 && g32)
        return run_boosting_pass<float, float>(scores, atoms, coef, hc, proxy, scale, grad, hess, n_threads);
    if (s32) return run_boosting_pass<float, double>(scores, atoms, coef, hc, proxy, scale, grad, hess, n_threads);
    if (g32) return run_boosting_pass<double, float>(scores, atoms, coef, hc, proxy, scale, grad, hess, n_threads);
    return run_boosting_pass<double, double>(scores, atoms, coef, hc, proxy, scale, grad, hess, n_threads);
}

// ---- the kept bins' codes (boosting_pass.hpp) ---------------------------------
// scores and lows: 1-D, C-contiguous, both float32 or both float64; lows: 1 to
// 256 finite bounds, strictly ascending. Returns the uint8 codes.

template <class S>
py::array_t<uint8_t> run_kept_bin_codes(const py::array& scores_in, const py::array& lows_in) {
    const auto scores = borrow<S>(scores_in, "scores", 1);
    const auto lows = borrow<S>(lows_in, "lows", 1);
    const int64_t L = lows.shape(0);
    if (L < 1 || L > 256) value_error("lows must hold 1 to 256 bounds, got " + std::to_string(L));
    for (int64_t b = 0; b < L; ++b)
        if (!std::isfinite(lows.at(b)) || (b > 0 && !(lows.at(b - 1) < lows.at(b))))
            value_error("lows must be finite and strictly ascending (at bound " + std::to_string(b) + ")");
    py::array_t<uint8_t> codes(scores.shape(0));
    {
        py::gil_scoped_release release;
        rateopt::kept_bin_codes(scores.data(), scores.shape(0), lows.data(), static_cast<int>(L),
                                codes.mutable_data());
    }
    return codes;
}

py::array_t<uint8_t> kept_bin_codes(const py::array& scores, const py::array& lows) {
    if (is_exact<float>(scores)) return run_kept_bin_codes<float>(scores, lows);
    return run_kept_bin_codes<double>(scores, lows);  // raises for any other dtype
}

// ---- the K-class boosting pass (boosting_multiclass_pass.hpp) ----------------
// scores (float32 or float64), C-contiguous 2-D: (n, K) row-major, or (K, n)
// with class_major (LightGBM's layout); grad and hess of the same shape, both
// float32 or both float64, written in place. The cells are a ClassCells
// (validated once); the cost table (n_cells, K) finite. Returns (counts,
// n_nonfinite_scores).

template <class S, class G>
py::tuple run_boosting_multiclass_pass(const py::array& scores_in, bool class_major,
                                       const rateopt::ClassCellsView& cells, const darray& cost, double scale,
                                       py::array& grad_in, py::array& hess_in, int n_threads) {
    const auto scores = borrow<S>(scores_in, "scores", 2);
    auto grad = borrow<G>(grad_in, "grad", 2);
    auto hess = borrow<G>(hess_in, "hess", 2);
    const int64_t n = class_major ? scores.shape(1) : scores.shape(0);
    const int64_t K = class_major ? scores.shape(0) : scores.shape(1);
    for (const py::array* a : {static_cast<const py::array*>(&grad), static_cast<const py::array*>(&hess)})
        if (a->shape(0) != scores.shape(0) || a->shape(1) != scores.shape(1))
            value_error("grad and hess must have the shape of scores");
    if (!grad.writeable() || !hess.writeable()) value_error("grad and hess must be writable");
    darray counts({cells.n_cells, K});
    rateopt::BoostingMulticlassOutput<G> out{counts.mutable_data(), grad.mutable_data(), hess.mutable_data()};
    (void)n;
    {
        py::gil_scoped_release release;
        rateopt::boosting_multiclass_pass(scores.data(), n, K, class_major ? 1 : K, class_major ? n : 1, cells,
                                          cost.data(), scale, n_threads, out);
    }
    return py::make_tuple(counts, out.n_nonfinite_scores);
}

py::tuple boosting_multiclass_pass(const py::array& scores, bool class_major, const py::array& cells_in,
                                   const py::array& cell_weights, int64_t n_cells, const py::array& cost_in,
                                   double scale, py::array grad, py::array hess, int n_threads) {
    check_threads(n_threads);
    if (scores.ndim() != 2) value_error("scores must be 2-D, got " + std::to_string(scores.ndim()) + "-D");
    const int64_t n = class_major ? scores.shape(1) : scores.shape(0);
    const int64_t K = class_major ? scores.shape(0) : scores.shape(1);
    if (K < 2) value_error("scores must have n_classes >= 2 columns");
    const auto cells = borrow<int32_t>(cells_in, "cells.cells", 1);
    const darray weights = borrow<double>(cell_weights, "cells.weights", 1);
    check_len(cells.shape(0), n, "cells.cells (n_samples)");
    check_len(weights.shape(0), n, "cells.weights (n_samples)");
    if (n_cells < 1 || n_cells > std::numeric_limits<int32_t>::max()) value_error("cells.n_cells out of range");
    const darray cost = borrow<double>(cost_in, "cost", 2);
    if (cost.shape(0) != n_cells || cost.shape(1) != K)
        value_error("cost must have shape (n_cells=" + std::to_string(n_cells) + ", n_classes=" + std::to_string(K) +
                    ")");
    for (int64_t j = 0; j < n_cells * K; ++j)
        if (!std::isfinite(cost.data()[j])) value_error("cost holds a non-finite value");
    if (!std::isfinite(scale)) value_error("scale must be finite");
    const rateopt::ClassCellsView view{cells.data(), weights.data(), n_cells};
    const bool s32 = is_exact<float>(scores), g32 = is_exact<float>(grad);
    if (g32 != is_exact<float>(hess)) type_error("grad and hess must have the same dtype (float32 or float64)");
    if (s32 && g32)
        return run_boosting_multiclass_pass<float, float>(scores, class_major, view, cost, scale, grad, hess, n_threads);
    if (s32)
        return run_boosting_multiclass_pass<float, double>(scores, class_major, view, cost, scale, grad, hess,
                                                           n_threads);
    if (g32)
        return run_boosting_multiclass_pass<double, float>(scores, class_major, view, cost, scale, grad, hess,
                                                           n_threads);
    return run_boosting_multiclass_pass<double, double>(scores, class_major, view, cost, scale, grad, hess, n_threads);
}

// ============================================================================
// 5. Kernel blocks: K(X, landmarks) and the Gram transform (kernel models)
// ============================================================================

rateopt::KernelParams kernel_params(int kind, double gamma, double coef0, double degree) {
    if (kind < 0 || kind > 3) value_error("kernel kind must be 0..3 (linear, poly, rbf, laplacian)");
    rateopt::KernelParams p;
    p.kind = static_cast<rateopt::KernelKind>(kind);
    p.gamma = gamma;
    p.coef0 = coef0;
    p.degree = degree;
    return p;
}

template <class Matrix>
py::array run_kernel_block(const Matrix& X, const py::array& B_in, const rateopt::KernelParams& p, bool out_f32,
                           int n_threads) {
    auto B = borrow<double>(B_in, "landmarks", 2);
    if (B.shape(1) != X.n_cols)
        value_error("landmarks have " + std::to_string(B.shape(1)) + " features, X has " + std::to_string(X.n_cols));
    check_threads(n_threads);
    const int64_t r = B.shape(0);
    if (out_f32) {
        py::array_t<float, py::array::c_style> out({X.n_rows, r});
        float* o = out.mutable_data();
        {
            py::gil_scoped_release release;
            rateopt::kernel_block(X, B.data(), r, p, n_threads, o);
        }
        return out;
    }
    darray out({X.n_rows, r});
    double* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        rateopt::kernel_block(X, B.data(), r, p, n_threads, o);
    }
    return out;
}

py::array kernel_block_dense(const py::array& X, const py::array& B, int kind, double gamma, double coef0,
                             double degree, bool out_f32, int n_threads) {
    const auto p = kernel_params(kind, gamma, coef0, degree);
    if (X.ndim() != 2) value_error("X must be 2-D");
    return with_dense(X, [&](const auto& Xv) { return run_kernel_block(Xv, B, p, out_f32, n_threads); });
}

py::array kernel_block_csr(const py::array& data, const py::array& indices, const py::array& indptr, int64_t n,
                           int64_t d, const py::array& B, int kind, double gamma, double coef0, double degree,
                           bool out_f32, int n_threads) {
    const auto p = kernel_params(kind, gamma, coef0, degree);
    return with_csr({data, indices, indptr, n, d, /*structure=*/false},
                    [&](const auto& Xv) { return run_kernel_block(Xv, B, p, out_f32, n_threads); });
}

void gram_transform(const py::array& G, const py::object& xsq_in, const py::object& bsq_in, int kind, double gamma,
                    double coef0, double degree, int n_threads) {
    const auto p = kernel_params(kind, gamma, coef0, degree);
    check_threads(n_threads);
    if (G.ndim() != 2) value_error("G must be 2-D");
    const int64_t n = G.shape(0), r = G.shape(1);
    darray xsq, bsq;
    const double* xs = nullptr;
    const double* bs = nullptr;
    if (!xsq_in.is_none()) {
        xsq = borrow<double>(xsq_in.cast<py::array>(), "xsq", 1);
        check_len(xsq.shape(0), n, "xsq");
        xs = xsq.data();
    }
    if (!bsq_in.is_none()) {
        bsq = borrow<double>(bsq_in.cast<py::array>(), "bsq", 1);
        check_len(bsq.shape(0), r, "bsq");
        bs = bsq.data();
    }
    if (p.kind == rateopt::KernelKind::rbf && (!xs || !bs)) value_error("the rbf kernel needs xsq and bsq");
    if (!G.writeable()) value_error("G must be writeable");
    if (is_exact<float>(G)) {
        auto g = py::reinterpret_borrow<py::array_t<float, py::array::c_style>>(G);
        float* gp = g.mutable_data();
        py::gil_scoped_release release;
        rateopt::gram_transform(gp, n, r, xs, bs, p, n_threads);
        return;
    }
    auto g = borrow<double>(G, "G", 2);
    double* gp = g.mutable_data();
    py::gil_scoped_release release;
    rateopt::gram_transform(gp, n, r, xs, bs, p, n_threads);
}

// ============================================================================
// 6. Multiplier updates, stationary distribution, projections
// ============================================================================

darray swap_update_multiplicative(const py::array& log_M_in, const py::array& delta_in,
                                  const py::array& lam_in, double eta, double floor) {
    auto log_M = borrow<double>(log_M_in, "log_M", 2);
    auto delta = borrow<double>(delta_in, "delta", 1);
    auto lam = borrow<double>(lam_in, "lam", 1);
    const int64_t k = square_side(log_M, "log_M");
    check_len(delta.shape(0), k, "delta");
    check_len(lam.shape(0), k, "lam");
    if (!(floor >= 0.0 && floor * static_cast<double>(k) < 1.0))
        value_error("floor must be >= 0 and below 1 / k (k = " + std::to_string(k) + ")");
    darray out = copy_of(log_M);
    rateopt::swap_update_multiplicative(out.mutable_data(), delta.data(), lam.data(), k, eta,
                                        rateopt::log_floor_of(floor));
    return out;
}

darray swap_update_additive(const py::array& M_in, const py::array& delta_in, const py::array& lam_in,
                            double eta) {
    auto M = borrow<double>(M_in, "M", 2);
    auto delta = borrow<double>(delta_in, "delta", 1);
    auto lam = borrow<double>(lam_in, "lam", 1);
    const int64_t k = square_side(M, "M");
    check_len(delta.shape(0), k, "delta");
    check_len(lam.shape(0), k, "lam");
    darray out = copy_of(M);
    rateopt::swap_update_additive(out.mutable_data(), delta.data(), lam.data(), k, eta);
    return out;
}

py::tuple stationary_distribution(const py::array& M_in, const py::array& lam0_in, double tol,
                                  int64_t max_iter) {
    auto M = borrow<double>(M_in, "M", 2);
    auto lam0 = borrow<double>(lam0_in, "lam0", 1);
    const int64_t k = square_side(M, "M");
    check_len(lam0.shape(0), k, "lam0");
    if (max_iter < 0) value_error("max_iter must be >= 0");
    darray lam = copy_of(lam0);
    rateopt::StationaryInfo info;
    {
        py::gil_scoped_release release;
        info = rateopt::stationary_distribution(M.data(), k, lam.mutable_data(), tol, max_iter);
    }
    return py::make_tuple(lam, info.n_iter, info.fallback, info.residual);
}

darray external_update_multiplicative(const py::array& log_lam_in, const py::array& delta_in, double eta) {
    auto log_lam = borrow<double>(log_lam_in, "log_lam", 1);
    auto delta = borrow<double>(delta_in, "delta", 1);
    check_len(delta.shape(0), log_lam.shape(0), "delta");
    darray out = copy_of(log_lam);
    rateopt::external_update_multiplicative(out.mutable_data(), delta.data(), out.shape(0), eta);
    return out;
}

darray external_update_additive(const py::array& lam_in, const py::array& delta_in, double eta, bool simplex,
                                double radius) {
    auto lam = borrow<double>(lam_in, "lam", 1);
    auto delta = borrow<double>(delta_in, "delta", 1);
    check_len(delta.shape(0), lam.shape(0), "delta");
    darray out = copy_of(lam);
    rateopt::external_update_additive(out.mutable_data(), delta.data(), out.shape(0), eta, simplex, radius);
    return out;
}

darray project_simplex(const py::array& v_in, double radius) {
    auto v = borrow<double>(v_in, "v", 1);
    darray out = copy_of(v);
    rateopt::project_simplex(v.data(), v.shape(0), radius, out.mutable_data());
    return out;
}

darray project_l1_ball_nonneg(const py::array& v_in, double radius) {
    auto v = borrow<double>(v_in, "v", 1);
    darray out = copy_of(v);
    rateopt::project_l1_ball_nonneg(v.data(), v.shape(0), radius, out.mutable_data());
    return out;
}

// ============================================================================
// 7. SDCA: the weighted two-sided hinge solver (issue 12)
// ============================================================================
// Borrow, check (lengths, finiteness and signs of the weights and starts, the
// scalar ranges: O(n + d), cheap next to one epoch), allocate theta and xi,
// release the GIL around the solver. X's finiteness is the FeatureMatrix's
// one-time check (rateopt.core).

struct SdcaArgs {
    darray A, B, xi0, theta0;
    rateopt::SdcaParams params;
};

void check_finite_nonneg(const darray& a, const char* name) {
    const int64_t bad = rateopt::first_nonfinite(a.data(), a.shape(0), 1);
    if (bad >= 0) value_error(std::string(name) + " holds a non-finite value at position " + std::to_string(bad));
    const int64_t neg = rateopt::first_negative(a.data(), a.shape(0), 1);
    if (neg >= 0) value_error(std::string(name) + " holds a negative weight at position " + std::to_string(neg));
}

SdcaArgs sdca_args(int64_t n, int64_t d, const py::array& A_in, const py::array& B_in, double lam, double tau,
                   double beta, bool regularized_bias, double bias_scale, const py::object& theta0_in,
                   double bias0, const py::object& xi0_in, double tol, int64_t max_epochs, uint64_t seed) {
    SdcaArgs a;
    a.A = borrow<double>(A_in, "A", 1);
    a.B = borrow<double>(B_in, "B", 1);
    check_len(a.A.shape(0), n, "A (n_samples)");
    check_len(a.B.shape(0), n, "B (n_samples)");
    check_finite_nonneg(a.A, "A");
    check_finite_nonneg(a.B, "B");
    if (!(std::isfinite(lam) && lam > 0)) value_error("lam must be a positive finite number");
    if (!(std::isfinite(tau) && tau > 0)) value_error("tau must be a positive finite number");
    if (!std::isfinite(beta)) value_error("beta must be finite");
    if (!(std::isfinite(bias_scale) && bias_scale > 0)) value_error("bias_scale must be a positive finite number");
    if (regularized_bias && beta != 0.0) value_error("beta must be 0 with a regularized bias");
    if (!std::isfinite(bias0)) value_error("bias0 must be finite");
    if (!(std::isfinite(tol) && tol >= 0)) value_error("tol must be a non-negative finite number");
    if (max_epochs < 0) value_error("max_epochs must be >= 0");
    rateopt::SdcaParams& p = a.params;
    p.start = rateopt::SdcaStart::cold;
    if (!xi0_in.is_none()) {
        a.xi0 = borrow<double>(xi0_in.cast<py::array>(), "xi0", 1);
        check_len(a.xi0.shape(0), n, "xi0 (n_samples)");
        if (rateopt::first_nonfinite(a.xi0.data(), n, 1) >= 0) value_error("xi0 holds a non-finite value");
        p.start = rateopt::SdcaStart::dual;
        p.xi0 = a.xi0.data();
    } else if (!theta0_in.is_none()) {
        a.theta0 = borrow<double>(theta0_in.cast<py::array>(), "theta0", 1);
        check_len(a.theta0.shape(0), d, "theta0 (n_features)");
        if (rateopt::first_nonfinite(a.theta0.data(), d, 1) >= 0) value_error("theta0 holds a non-finite value");
        p.start = rateopt::SdcaStart::primal;
        p.theta0 = a.theta0.data();
    }
    p.A = a.A.data();
    p.B = a.B.data();
    p.lam = lam;
    p.tau = tau;
    p.beta = beta;
    p.regularized_bias = regularized_bias;
    p.bias_scale = bias_scale;
    p.bias0 = bias0;
    p.tol = tol;
    p.max_epochs = max_epochs;
    p.seed = seed;
    return a;
}

template <class Matrix>
py::tuple run_sdca(const Matrix& X, const SdcaArgs& args) {
    darray theta(X.n_cols), xi(X.n_rows);
    double* t = theta.mutable_data();
    double* x = xi.mutable_data();
    rateopt::SdcaResult r;
    {
        py::gil_scoped_release release;
        r = rateopt::sdca_two_sided_hinge(X, args.params, t, x);
    }
    return py::make_tuple(theta, r.bias, xi, r.primal, r.dual, r.gap, r.epochs, r.sum_xi,
                          static_cast<int>(r.status));
}

py::tuple sdca_dense(const py::array& X, const py::array& A, const py::array& B, double lam, double tau,
                     double beta, bool regularized_bias, double bias_scale, const py::object& theta0, double bias0,
                     const py::object& xi0, double tol, int64_t max_epochs, uint64_t seed) {
    check_matrix_ndim(X);
    SdcaArgs args = sdca_args(X.shape(0), X.shape(1), A, B, lam, tau, beta, regularized_bias, bias_scale, theta0,
                              bias0, xi0, tol, max_epochs, seed);
    return with_dense(X, [&](const auto& Xv) { return run_sdca(Xv, args); });
}

py::tuple sdca_csr(const py::array& data, const py::array& indices, const py::array& indptr, int64_t n, int64_t d,
                   const py::array& A, const py::array& B, double lam, double tau, double beta,
                   bool regularized_bias, double bias_scale, const py::object& theta0, double bias0,
                   const py::object& xi0, double tol, int64_t max_epochs, uint64_t seed) {
    SdcaArgs args = sdca_args(n, d, A, B, lam, tau, beta, regularized_bias, bias_scale, theta0, bias0, xi0, tol,
                              max_epochs, seed);
    return with_csr({data, indices, indptr, n, d}, [&](const auto& Xv) { return run_sdca(Xv, args); });
}

// ============================================================================
// 8. The training loop (issue 14 item 1)
// ============================================================================
// train_loop borrows every dataset (a tuple per block, see core.run_train_loop),
// the game's rate maps, the players' state and the record buffers (all
// caller-owned numpy arrays, written in place), checks shapes and index ranges,
// then runs rateopt::run_train_loop with the GIL released. The callback, when
// given, is called with the GIL taken for the call only; an exception it raises
// stops the loop and is re-raised here. Each dict is converted by its own
// function below, in the order train_loop reads them.

template <class T>
T dict_get(const py::dict& d, const char* group, const char* key) {
    if (!d.contains(key)) value_error(std::string("train_loop: ") + group + " has no entry '" + key + "'");
    return d[key].cast<T>();
}

template <class T>
py::array_t<T, py::array::c_style> writable(const py::dict& d, const char* group, const char* key, int ndim) {
    auto a = borrow<T>(dict_get<py::array>(d, group, key), key, ndim);
    if (!a.writeable()) value_error(std::string(key) + " must be writeable");
    return a;
}

struct LoopBlocks {
    std::vector<std::unique_ptr<rateopt::LoopBlock>> owned;
    std::vector<const rateopt::LoopBlock*> views;
    std::vector<py::object> keep;  // the borrowed arrays
    int64_t n_atoms_total = 0;
};

template <class Matrix>
void add_block(LoopBlocks& out, const Matrix& X, const py::tuple& t, std::size_t first, int64_t n_atoms_total,
               int64_t n_features) {
    if (X.n_cols != n_features)
        value_error("a dataset has " + std::to_string(X.n_cols) + " features, the model " + std::to_string(n_features));
    AtomArgs atoms = atom_args(t[first].cast<py::array>(), t[first + 1].cast<py::array>(),
                               t[first + 2].cast<py::array>(), t[first + 3].cast<int64_t>(), X.n_rows);
    auto ids = borrow<int64_t>(t[first + 4].cast<py::array>(), "atom_ids", 1);
    check_len(ids.shape(0), atoms.view.n_atoms, "atom_ids (the block's n_atoms)");
    if (rateopt::first_out_of_range(ids.data(), ids.shape(0), n_atoms_total, 1) >= 0)
        value_error("atom_ids holds an id outside [0, n_atoms)");
    out.keep.insert(out.keep.end(), {atoms.indptr, atoms.indices, atoms.weights, ids});
    out.owned.push_back(std::make_unique<rateopt::MatrixBlock<Matrix>>(X, atoms.view, ids.data()));
    out.views.push_back(out.owned.back().get());
}

// Each block: ("dense", X, atom_indptr, atom_indices, atom_weights, n_atoms, atom_ids) or
// ("csr", data, indices, indptr, n_samples, n_features, atom_indptr, ..., atom_ids).
LoopBlocks loop_blocks(const py::list& blocks, int64_t n_atoms_total, int64_t n_features, const char* what) {
    LoopBlocks out;
    for (const auto& item : blocks) {
        const auto t = item.cast<py::tuple>();
        const auto kind = t[0].cast<std::string>();
        if (kind == "dense" && t.size() == 7) {
            const auto X = t[1].cast<py::array>();
            check_matrix_ndim(X);
            with_dense(X, [&](const auto& Xv) {
                out.keep.push_back(X);
                add_block(out, Xv, t, 2, n_atoms_total, n_features);
            });
        } else if (kind == "csr" && t.size() == 11) {
            const auto data = t[1].cast<py::array>();
            const auto indices = t[2].cast<py::array>();
            const auto indptr = t[3].cast<py::array>();
            with_csr({data, indices, indptr, t[4].cast<int64_t>(), t[5].cast<int64_t>()}, [&](const auto& Xv) {
                out.keep.insert(out.keep.end(), {data, indices, indptr});
                add_block(out, Xv, t, 6, n_atoms_total, n_features);
            });
        } else {
            value_error(std::string(what) + ": each block must be a ('dense', ...) 7-tuple or a ('csr', ...) 11-tuple");
        }
    }
    out.n_atoms_total = n_atoms_total;
    return out;
}

// The game: its kind, the rate maps (C, kappa, c0), the objective's proxy and margin.
struct LoopGameArgs {
    darray C, kappa, c0;
    rateopt::LoopGameSpec spec;
};

LoopGameArgs loop_game(const py::dict& game) {
    const auto g = dict_get<int32_t>(game, "game", "game");
    if (!rateopt::valid_loop_game(g)) value_error("game must be 0..3 (proxy-swap, proxy-external, lagrangian-hinge, unconstrained)");
    LoopGameArgs a{borrow<double>(dict_get<py::array>(game, "game", "C"), "C", 2),
                   borrow<double>(dict_get<py::array>(game, "game", "kappa"), "kappa", 1),
                   borrow<double>(dict_get<py::array>(game, "game", "c0"), "c0", 1), {}};
    rateopt::LoopGameSpec& spec = a.spec;
    spec.game = static_cast<rateopt::LoopGame>(g);
    spec.n_atoms = a.c0.shape(0);
    spec.n_constraints = a.C.shape(0);
    spec.n_features = dict_get<int64_t>(game, "game", "n_features");
    check_len(a.C.shape(1), spec.n_atoms, "C rows (n_atoms)");
    check_len(a.kappa.shape(0), spec.n_constraints, "kappa (n_constraints)");
    spec.C = a.C.data();
    spec.kappa = a.kappa.data();
    spec.c0 = a.c0.data();
    const auto proxy = dict_get<int32_t>(game, "game", "objective_proxy");
    if (proxy != static_cast<int32_t>(rateopt::ProxyKind::hinge) && proxy != static_cast<int32_t>(rateopt::ProxyKind::logistic))
        value_error("objective_proxy must be the hinge (0) or the logistic (1)");
    spec.objective_proxy = static_cast<rateopt::ProxyKind>(proxy);
    spec.margin = dict_get<double>(game, "game", "margin");
    if (!(std::isfinite(spec.margin) && spec.margin > 0)) value_error("margin must be a positive finite number");
    return a;
}

rateopt::ModelStepSettings model_settings(const py::dict& model) {
    rateopt::ModelStepSettings ms;
    const auto opt = dict_get<int32_t>(model, "model", "optimizer");
    if (!rateopt::valid_loop_optimizer(opt)) value_error("optimizer must be 0..2 (sgd, adagrad, adam)");
    ms.optimizer = static_cast<rateopt::LoopOptimizer>(opt);
    ms.learning_rate = dict_get<double>(model, "model", "learning_rate");
    ms.l2 = dict_get<double>(model, "model", "l2");
    const auto radius = dict_get<py::object>(model, "model", "radius");
    ms.has_radius = !radius.is_none();
    ms.radius = ms.has_radius ? radius.cast<double>() : 0.0;
    ms.fit_intercept = dict_get<bool>(model, "model", "fit_intercept");
    if (!(std::isfinite(ms.learning_rate) && ms.learning_rate > 0)) value_error("learning_rate must be a positive finite number");
    if (!(std::isfinite(ms.l2) && ms.l2 >= 0)) value_error("l2 must be a non-negative finite number");
    if (ms.has_radius && !(ms.radius > 0)) value_error("radius must be > 0");
    return ms;
}

rateopt::MultiplierSettings multiplier_settings(const py::dict& mult, int64_t m) {
    rateopt::MultiplierSettings mu;
    mu.eta = dict_get<double>(mult, "multipliers", "eta");
    mu.multiplicative = dict_get<bool>(mult, "multipliers", "multiplicative");
    const double floor = dict_get<double>(mult, "multipliers", "floor");
    if (!(floor >= 0.0 && floor * static_cast<double>(m + 1) < 1.0))
        value_error("lambda_floor / (m + 1) must be >= 0 and below 1 / (m + 1)");
    mu.log_floor = rateopt::log_floor_of(floor);
    const auto lr = dict_get<py::object>(mult, "multipliers", "lambda_radius");
    if (!lr.is_none()) mu.lambda_radius = lr.cast<double>();
    if (!(std::isfinite(mu.eta) && mu.eta >= 0)) value_error("eta_lambda must be a non-negative finite number");
    if (!(mu.lambda_radius > 0)) value_error("lambda_radius must be > 0");
    return mu;
}

// The players' state (theta, bias, the optimizer's moments, the multipliers), written in place.
struct LoopStateArgs {
    darray theta, bias, opt_m, opt_v;
    py::array_t<int64_t, py::array::c_style> opt_t;
    darray matrix, lam;
    rateopt::LoopState view;
};

LoopStateArgs loop_state(const py::dict& state, const rateopt::LoopGameSpec& spec) {
    const int64_t m = spec.n_constraints, d = spec.n_features, k = m + 1;
    LoopStateArgs a{writable<double>(state, "state", "theta", 1),   writable<double>(state, "state", "bias", 1),
                    writable<double>(state, "state", "opt_m", 1),   writable<double>(state, "state", "opt_v", 1),
                    writable<int64_t>(state, "state", "opt_t", 1),  writable<double>(state, "state", "matrix", 2),
                    writable<double>(state, "state", "lam", 1),     {}};
    check_len(a.theta.shape(0), d, "theta (n_features)");
    check_len(a.bias.shape(0), 1, "bias");
    check_len(a.opt_m.shape(0), d + 1, "opt_m (n_features + 1)");
    check_len(a.opt_v.shape(0), d + 1, "opt_v (n_features + 1)");
    check_len(a.opt_t.shape(0), 1, "opt_t");
    if (spec.game == rateopt::LoopGame::proxy_swap) {
        check_len(a.matrix.shape(0), k, "matrix (n_constraints + 1)");
        check_len(a.matrix.shape(1), k, "matrix columns (n_constraints + 1)");
        check_len(a.lam.shape(0), k, "lam (n_constraints + 1)");
    } else if (spec.game != rateopt::LoopGame::unconstrained) {
        check_len(a.lam.shape(0), m, "lam (n_constraints)");
    }
    a.view = rateopt::LoopState{a.theta.mutable_data(), a.bias.mutable_data(), a.opt_m.mutable_data(),
                                a.opt_v.mutable_data(), a.opt_t.mutable_data(), a.matrix.mutable_data(),
                                a.lam.mutable_data()};
    return a;
}

// The iterations this call runs and, for minibatches, the rows of each sampled block per iteration.
struct LoopScheduleArgs {
    py::array_t<int64_t, py::array::c_style> rows;
    py::array_t<uint8_t, py::array::c_style> sampled;
    rateopt::LoopSchedule view;
};

LoopScheduleArgs loop_schedule(const py::dict& schedule, const LoopBlocks& blocks) {
    LoopScheduleArgs a;
    rateopt::LoopSchedule& sch = a.view;
    auto& rows = a.rows;
    auto& sampled = a.sampled;
    sch.t_begin = dict_get<int64_t>(schedule, "schedule", "t_begin");
    sch.t_end = dict_get<int64_t>(schedule, "schedule", "t_end");
    sch.n_iter = dict_get<int64_t>(schedule, "schedule", "n_iter");
    sch.record_every = dict_get<int64_t>(schedule, "schedule", "record_every");
    sch.n_threads = check_threads(dict_get<int>(schedule, "schedule", "n_threads"));
    sch.progress_every = dict_get<int64_t>(schedule, "schedule", "progress_every");
    if (!(0 <= sch.t_begin && sch.t_begin <= sch.t_end && sch.t_end <= sch.n_iter))
        value_error("the schedule needs 0 <= t_begin <= t_end <= n_iter");
    if (sch.record_every < 1) value_error("record_every must be >= 1");
    if (sch.progress_every < 0) value_error("progress_every must be >= 0");
    const auto rows_in = dict_get<py::object>(schedule, "schedule", "rows");
    if (!rows_in.is_none()) {
        rows = borrow<int64_t>(rows_in.cast<py::array>(), "rows", 3);
        sampled = borrow<uint8_t>(dict_get<py::array>(schedule, "schedule", "sampled"), "sampled", 1);
        check_len(sampled.shape(0), static_cast<int64_t>(blocks.views.size()), "sampled (one flag per block)");
        int64_t n_sampled = 0;
        for (int64_t b = 0; b < sampled.shape(0); ++b) n_sampled += sampled.at(b) ? 1 : 0;
        check_len(rows.shape(0), sch.t_end - sch.t_begin, "rows (one slice per iteration)");
        check_len(rows.shape(1), n_sampled, "rows' second axis (the sampled blocks)");
        if (rows.shape(2) < 1) value_error("rows must hold at least one row per batch");
        sch.batch = rows.shape(2);
        // Every sampled block's ids within its own row range.
        for (int64_t it = 0; it < rows.shape(0); ++it) {
            int64_t s = 0;
            for (std::size_t b = 0; b < blocks.views.size(); ++b) {
                if (!sampled.at(b)) continue;
                const int64_t* r = rows.data() + (it * n_sampled + s++) * sch.batch;
                if (rateopt::first_out_of_range(r, sch.batch, blocks.views[b]->n_rows(), 1) >= 0)
                    value_error("rows holds a row index outside [0, n_samples) of its dataset");
            }
        }
        sch.rows = rows.data();
        sch.sampled = sampled.data();
        sch.sort_rows = dict_get<bool>(schedule, "schedule", "sort_rows");
    }
    return a;
}

// The record buffers (one row per recorded iteration), written in place; val_rates is train_loop's.
struct LoopRecordsArgs {
    darray weights, biases;
    py::array_t<int64_t, py::array::c_style> iterations;
    darray multipliers, rates;
    rateopt::LoopRecords view;
};

LoopRecordsArgs loop_records(const py::dict& records, const rateopt::LoopSchedule& sch, int64_t k, int64_t A,
                             int64_t d) {
    LoopRecordsArgs a{writable<double>(records, "records", "weights", 2),
                      writable<double>(records, "records", "biases", 1),
                      writable<int64_t>(records, "records", "iterations", 1),
                      writable<double>(records, "records", "multipliers", 2),
                      writable<double>(records, "records", "rates", 2), {}};
    rateopt::LoopRecords& rec = a.view;
    auto& w = a.weights;
    auto& b = a.biases;
    auto& its = a.iterations;
    auto& mults = a.multipliers;
    auto& rates = a.rates;
    rec.capacity = w.shape(0);
    rec.count = dict_get<int64_t>(records, "records", "count");
    check_len(w.shape(1), d, "records['weights'] columns (n_features)");
    check_len(b.shape(0), rec.capacity, "records['biases']");
    check_len(its.shape(0), rec.capacity, "records['iterations']");
    check_len(mults.shape(0), rec.capacity, "records['multipliers']");
    check_len(mults.shape(1), k, "records['multipliers'] columns (n_constraints + 1)");
    check_len(rates.shape(0), rec.capacity, "records['rates']");
    check_len(rates.shape(1), A, "records['rates'] columns (n_atoms)");
    if (rec.count < 0 || rec.count > rec.capacity) value_error("records['count'] out of range");
    // Records still to come in [t_begin, t_end) must fit.
    if (rec.count + rateopt::records_in_call(sch) > rec.capacity)
        value_error("the record buffers are too small for the schedule");
    rec.weights = w.mutable_data();
    rec.biases = b.mutable_data();
    rec.iterations = its.mutable_data();
    rec.multipliers = mults.mutable_data();
    rec.rates = rates.mutable_data();
    return a;
}

// The callback as the loop calls it: with the GIL taken for the call; an
// exception it raises is kept in `error` and stops the loop.
rateopt::LoopCallback loop_callback(const py::object& callback, std::exception_ptr& error) {
    rateopt::LoopCallback cb;
    if (!callback.is_none()) {
        cb = [&callback, &error](int64_t t, int64_t n_records) -> bool {
            py::gil_scoped_acquire acquire;
            try {
                const py::object out = callback(t, n_records);
                const int truth = PyObject_IsTrue(out.ptr());
                if (truth < 0) throw py::error_already_set();
                return truth != 0;
            } catch (...) {
                error = std::current_exception();
                return true;
            }
        };
    }
    return cb;
}

py::tuple train_loop(const py::list& blocks_in, const py::list& val_blocks_in, const py::dict& game,
                     const py::dict& model, const py::dict& mult, const py::dict& state, const py::dict& schedule,
                     const py::dict& records, const py::object& callback) {
    const LoopGameArgs game_args = loop_game(game);
    const rateopt::LoopGameSpec& spec = game_args.spec;
    const int64_t m = spec.n_constraints, d = spec.n_features, A = spec.n_atoms;
    const rateopt::ModelStepSettings ms = model_settings(model);
    const rateopt::MultiplierSettings mu = multiplier_settings(mult, m);
    LoopStateArgs st = loop_state(state, spec);

    LoopBlocks blocks = loop_blocks(blocks_in, A, d, "blocks");
    if (blocks.views.empty()) value_error("blocks must hold at least one dataset");

    const LoopScheduleArgs schedule_args = loop_schedule(schedule, blocks);
    const rateopt::LoopSchedule& sch = schedule_args.view;
    LoopRecordsArgs records_args = loop_records(records, sch, m + 1, A, d);
    rateopt::LoopRecords& rec = records_args.view;

    LoopBlocks val_blocks;
    py::array_t<double, py::array::c_style> val_rates;
    if (py::len(val_blocks_in)) {
        val_rates = writable<double>(records, "records", "val_rates", 2);
        check_len(val_rates.shape(0), rec.capacity, "records['val_rates']");
        rec.n_val_atoms = val_rates.shape(1);
        val_blocks = loop_blocks(val_blocks_in, rec.n_val_atoms, d, "val_blocks");
        rec.val_rates = val_rates.mutable_data();
    }

    std::exception_ptr error;
    const rateopt::LoopCallback cb = loop_callback(callback, error);
    rateopt::LoopOutcome outcome;
    {
        py::gil_scoped_release release;
        outcome = rateopt::run_train_loop(blocks.views, val_blocks.views, spec, ms, mu, st.view, sch, rec, cb);
    }
    if (error) std::rethrow_exception(error);
    return py::make_tuple(static_cast<int>(outcome.status), outcome.t, outcome.detail, rec.count);
}

// ============================================================================
// 9. Build info, threads and test support
// ============================================================================

py::dict build_info() {
    py::dict info;
    info["openmp"] = rateopt::openmp_enabled();
#if defined(_OPENMP)
    info["openmp_version"] = static_cast<int>(_OPENMP);
#else
    info["openmp_version"] = py::none();
#endif
#if defined(__clang__)
    info["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
    info["compiler"] = std::string("gcc ") + __VERSION__;
#elif defined(_MSC_VER)
    info["compiler"] = std::string("msvc ") + std::to_string(_MSC_VER);
#else
    info["compiler"] = "unknown";
#endif
    info["cplusplus"] = static_cast<long>(__cplusplus);
#if defined(NDEBUG)
    info["debug"] = false;
#else
    info["debug"] = true;
#endif
    info["version"] = ROPT_VERSION_INFO;
    return info;
}

// Calls fn() on the master thread of an OpenMP parallel region of n_outer
// threads (the GIL released around the region, taken again for the call), and
// returns the outer team's size. Core calls made by fn then run as nested
// regions, which OpenMP gives a team of one by default: the tests use this to
// check every entry point from inside another parallel region.
int call_in_parallel_region(const py::function& fn, int n_outer) {
    check_threads(n_outer);
    int team = 1;
    std::exception_ptr error;
    {
        py::gil_scoped_release release;
#if defined(ROPT_HAVE_OPENMP)
#pragma omp parallel num_threads(n_outer)
#endif
        {
#if defined(ROPT_HAVE_OPENMP)
#pragma omp master
#endif
            {
#if defined(ROPT_HAVE_OPENMP)
                team = omp_get_num_threads();
#endif
                try {
                    py::gil_scoped_acquire acquire;
                    fn();
                } catch (...) {
                    error = std::current_exception();
                }
            }
        }
    }
    if (error) std::rethrow_exception(error);
    return team;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "rateopt's compiled core (private: use rateopt.core).";

    // 3. one-time data checks
    m.def("first_nonfinite", &first_nonfinite, py::arg("array"), py::arg("n_threads"));
    m.def("first_out_of_range", &first_out_of_range, py::arg("array"), py::arg("bound"), py::arg("n_threads"));
    m.def("first_decrease", &first_decrease, py::arg("array"), py::arg("n_threads"));
    m.def("first_negative", &first_negative, py::arg("array"), py::arg("n_threads"));
    m.def("memory_floor", &memory_floor, py::arg("array"), py::arg("n_threads"));

    // 4. rate kernels
    m.def("rate_kernel_dense", &rate_kernel_dense, py::arg("X"), py::arg("theta"), py::arg("bias"),
          py::arg("atom_indptr"), py::arg("atom_indices"), py::arg("atom_weights"), py::arg("n_atoms"),
          py::arg("coef"), py::arg("proxies"), py::arg("grad_weights"), py::arg("separate_gradients"),
          py::arg("margin"), py::arg("rows"), py::arg("n_threads"));
    m.def("rate_kernel_csr", &rate_kernel_csr, py::arg("data"), py::arg("indices"), py::arg("indptr"),
          py::arg("n_samples"), py::arg("n_features"), py::arg("theta"), py::arg("bias"),
          py::arg("atom_indptr"), py::arg("atom_indices"), py::arg("atom_weights"), py::arg("n_atoms"),
          py::arg("coef"), py::arg("proxies"), py::arg("grad_weights"), py::arg("separate_gradients"),
          py::arg("margin"), py::arg("rows"), py::arg("n_threads"));
    m.def("offset_kernel_dense", &offset_kernel_dense, py::arg("X"), py::arg("theta"), py::arg("bias"),
          py::arg("atom_indptr"), py::arg("atom_indices"), py::arg("atom_weights"), py::arg("n_atoms"),
          py::arg("offset_ids"), py::arg("offsets"), py::arg("coef"), py::arg("proxies"), py::arg("grad_weights"),
          py::arg("separate_gradients"), py::arg("margin"), py::arg("rows"), py::arg("n_threads"));
    m.def("offset_kernel_csr", &offset_kernel_csr, py::arg("data"), py::arg("indices"), py::arg("indptr"),
          py::arg("n_samples"), py::arg("n_features"), py::arg("theta"), py::arg("bias"), py::arg("atom_indptr"),
          py::arg("atom_indices"), py::arg("atom_weights"), py::arg("n_atoms"), py::arg("offset_ids"),
          py::arg("offsets"), py::arg("coef"), py::arg("proxies"), py::arg("grad_weights"),
          py::arg("separate_gradients"), py::arg("margin"), py::arg("rows"), py::arg("n_threads"));

    m.def("multiclass_pass_dense", &multiclass_pass_dense, py::arg("X"), py::arg("coef"), py::arg("intercept"),
          py::arg("cells"), py::arg("cell_weights"), py::arg("n_cells"), py::arg("cost_objective"),
          py::arg("cost_constraints"), py::arg("objective_proxy"), py::arg("constraint_proxy"), py::arg("gradient"),
          py::arg("margin"), py::arg("rows"), py::arg("n_threads"), py::arg("value") = true);
    m.def("multiclass_pass_csr", &multiclass_pass_csr, py::arg("data"), py::arg("indices"), py::arg("indptr"),
          py::arg("n_samples"), py::arg("n_features"), py::arg("coef"), py::arg("intercept"), py::arg("cells"),
          py::arg("cell_weights"), py::arg("n_cells"), py::arg("cost_objective"), py::arg("cost_constraints"),
          py::arg("objective_proxy"), py::arg("constraint_proxy"), py::arg("gradient"), py::arg("margin"),
          py::arg("rows"), py::arg("n_threads"), py::arg("value") = true);
    m.def("multiclass_scores_dense", &multiclass_scores_dense, py::arg("X"), py::arg("coef"), py::arg("intercept"),
          py::arg("n_threads"));
    m.def("multiclass_scores_csr", &multiclass_scores_csr, py::arg("data"), py::arg("indices"), py::arg("indptr"),
          py::arg("n_samples"), py::arg("n_features"), py::arg("coef"), py::arg("intercept"), py::arg("n_threads"));
    m.def("boosting_pass", &boosting_pass, py::arg("scores"), py::arg("atom_indptr"), py::arg("atom_indices"),
          py::arg("atom_weights"), py::arg("n_atoms"), py::arg("coef"), py::arg("proxy"), py::arg("scale"),
          py::arg("grad"), py::arg("hess"), py::arg("n_threads"), py::arg("hess_coef") = py::none());
    m.def("kept_bin_codes", &kept_bin_codes, py::arg("scores"), py::arg("lows"));
    m.def("boosting_multiclass_pass", &boosting_multiclass_pass, py::arg("scores"), py::arg("class_major"),
          py::arg("cells"), py::arg("cell_weights"), py::arg("n_cells"), py::arg("cost"), py::arg("scale"),
          py::arg("grad"), py::arg("hess"), py::arg("n_threads"));

    // 5. kernel blocks
    m.def("kernel_block_dense", &kernel_block_dense, py::arg("X"), py::arg("landmarks"), py::arg("kind"),
          py::arg("gamma"), py::arg("coef0"), py::arg("degree"), py::arg("out_f32"), py::arg("n_threads"));
    m.def("kernel_block_csr", &kernel_block_csr, py::arg("data"), py::arg("indices"), py::arg("indptr"),
          py::arg("n_samples"), py::arg("n_features"), py::arg("landmarks"), py::arg("kind"), py::arg("gamma"),
          py::arg("coef0"), py::arg("degree"), py::arg("out_f32"), py::arg("n_threads"));
    m.def("gram_transform", &gram_transform, py::arg("G"), py::arg("xsq"), py::arg("bsq"), py::arg("kind"),
          py::arg("gamma"), py::arg("coef0"), py::arg("degree"), py::arg("n_threads"));

    // 6. multiplier updates, stationary distribution, projections
    m.def("swap_update_multiplicative", &swap_update_multiplicative, py::arg("log_M"), py::arg("delta"),
          py::arg("lam"), py::arg("eta"), py::arg("floor") = 0.0);
    m.def("swap_update_additive", &swap_update_additive, py::arg("M"), py::arg("delta"), py::arg("lam"),
          py::arg("eta"));
    m.def("stationary_distribution", &stationary_distribution, py::arg("M"), py::arg("lam0"), py::arg("tol"),
          py::arg("max_iter"));
    m.def("external_update_multiplicative", &external_update_multiplicative, py::arg("log_lam"),
          py::arg("delta"), py::arg("eta"));
    m.def("external_update_additive", &external_update_additive, py::arg("lam"), py::arg("delta"),
          py::arg("eta"), py::arg("simplex"), py::arg("radius"));
    m.def("project_simplex", &project_simplex, py::arg("v"), py::arg("radius"));
    m.def("project_l1_ball_nonneg", &project_l1_ball_nonneg, py::arg("v"), py::arg("radius"));

    // 7. SDCA
    m.def("sdca_two_sided_hinge_dense", &sdca_dense, py::arg("X"), py::arg("A"), py::arg("B"), py::arg("lam"),
          py::arg("tau"), py::arg("beta"), py::arg("regularized_bias"), py::arg("bias_scale"), py::arg("theta0"),
          py::arg("bias0"), py::arg("xi0"), py::arg("tol"), py::arg("max_epochs"), py::arg("seed"));
    m.def("sdca_two_sided_hinge_csr", &sdca_csr, py::arg("data"), py::arg("indices"), py::arg("indptr"),
          py::arg("n_samples"), py::arg("n_features"), py::arg("A"), py::arg("B"), py::arg("lam"), py::arg("tau"),
          py::arg("beta"), py::arg("regularized_bias"), py::arg("bias_scale"), py::arg("theta0"), py::arg("bias0"),
          py::arg("xi0"), py::arg("tol"), py::arg("max_epochs"), py::arg("seed"));

    // 8. the training loop
    m.def("train_loop", &train_loop, py::arg("blocks"), py::arg("val_blocks"), py::arg("game"), py::arg("model"),
          py::arg("multipliers"), py::arg("state"), py::arg("schedule"), py::arg("records"), py::arg("callback"));

    // 9. build info, threads and test support
    m.def("openmp_enabled", &rateopt::openmp_enabled);
    m.def("default_threads", &rateopt::default_threads);
    m.def("available_cores", &rateopt::available_cores);
    m.def("build_info", &build_info);
    m.def("_call_in_parallel_region", &call_in_parallel_region, py::arg("fn"), py::arg("n_outer"));
}
