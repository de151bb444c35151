// The one pybind11 module, rateopt._core. It only converts, checks cheap
// invariants (dtypes, contiguity, lengths), allocates outputs while holding the
// GIL, releases the GIL around the core call, and maps errors. The expensive
// checks (finiteness, index ranges) are separate functions that the Python
// boundary (rateopt.core) calls once per data object. No math lives here.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>

#include "rateopt/kernel_block.hpp"
#include "rateopt/lambda_player.hpp"
#include "rateopt/matrix_view.hpp"
#include "rateopt/parallel.hpp"
#include "rateopt/rate_kernel.hpp"
#include "rateopt/simplex.hpp"
#include "rateopt/validate.hpp"

namespace py = pybind11;
using std::int32_t;
using std::int64_t;

namespace {

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

struct AtomArgs {
    py::array_t<int64_t, py::array::c_style> indptr;
    py::array_t<int32_t, py::array::c_style> indices;
    darray weights;
    rateopt::AtomView view;
};

AtomArgs atom_args(const py::array& indptr, const py::array& indices, const py::array& weights,
                   int64_t n_atoms, int64_t n_rows) {
    AtomArgs a{borrow<int64_t>(indptr, "atoms.indptr", 1), borrow<int32_t>(indices, "atoms.indices", 1),
               borrow<double>(weights, "atoms.weights", 1), {}};
    check_len(a.indptr.shape(0), n_rows + 1, "atoms.indptr (n_samples + 1)");
    check_len(a.weights.shape(0), a.indices.shape(0), "atoms.weights (nnz of atoms.indices)");
    const int64_t nnz = a.indices.shape(0);
    if (a.indptr.at(0) != 0 || a.indptr.at(n_rows) != nnz)
        value_error("atoms.indptr must start at 0 and end at len(atoms.indices)");
    if (n_atoms < 0 || n_atoms > std::numeric_limits<int32_t>::max())
        value_error("atoms.n_atoms out of range");
    a.view = rateopt::AtomView{a.indptr.data(), a.indices.data(), a.weights.data(), n_rows, n_atoms};
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

template <class Matrix>
py::tuple run_kernel(const Matrix& X, const py::array& theta_in, double bias, const AtomArgs& atoms,
                     const CombinationArgs& cb, double margin, const py::object& rows_in, int n_threads) {
    auto theta = borrow<double>(theta_in, "theta", 1);
    check_len(theta.shape(0), X.n_cols, "theta (n_features)");
    const int64_t* rows = nullptr;
    int64_t n_batch = 0;
    py::array_t<int64_t, py::array::c_style> rows_arr;
    if (!rows_in.is_none()) {
        rows_arr = borrow<int64_t>(rows_in.cast<py::array>(), "rows", 1);
        rows = rows_arr.data();
        n_batch = rows_arr.shape(0);
        if (n_batch == 0) value_error("rows must not be empty");
        if (rateopt::first_out_of_range(rows, n_batch, X.n_rows, 1) >= 0)
            value_error("rows holds a row index outside [0, n_samples)");
    }
    check_threads(n_threads);
    const int64_t n_atoms = atoms.view.n_atoms;
    const int64_t k = cb.view.k;
    const int64_t n_grads = cb.view.separate_gradients ? k : 1;
    darray rates(n_atoms), ppos(n_atoms), pneg(n_atoms), proxy_values(k), values(k), grad_bias(n_grads);
    darray grad({n_grads, X.n_cols});
    rateopt::RateKernelOutput out{rates.mutable_data(), ppos.mutable_data(), pneg.mutable_data(),
                                  proxy_values.mutable_data(), values.mutable_data(), grad.mutable_data(),
                                  grad_bias.mutable_data()};
    {
        py::gil_scoped_release release;
        rateopt::rate_kernel(X, theta.data(), bias, atoms.view, cb.view, margin, rows, n_batch, n_threads, out);
    }
    return py::make_tuple(rates, ppos, pneg, proxy_values, values, grad, grad_bias, out.n_nonfinite_scores);
}

py::tuple rate_kernel_dense(const py::array& X, const py::array& theta, double bias,
                            const py::array& atom_indptr, const py::array& atom_indices,
                            const py::array& atom_weights, int64_t n_atoms, const py::array& coef_in,
                            const py::array& proxies, const py::array& grad_weights, bool separate,
                            double margin, const py::object& rows, int n_threads) {
    if (X.ndim() != 2) value_error("X must be 2-D, got " + std::to_string(X.ndim()) + "-D");
    const int64_t n = X.shape(0), d = X.shape(1);
    AtomArgs atoms = atom_args(atom_indptr, atom_indices, atom_weights, n_atoms, n);
    CombinationArgs coef = combination_args(coef_in, proxies, grad_weights, separate, atoms.view.n_atoms);
    if (is_exact<float>(X)) {
        auto x = borrow<float>(X, "X", 2);
        return run_kernel(rateopt::DenseView<float>{x.data(), n, d}, theta, bias, atoms, coef, margin, rows, n_threads);
    }
    auto x = borrow<double>(X, "X", 2);
    return run_kernel(rateopt::DenseView<double>{x.data(), n, d}, theta, bias, atoms, coef, margin, rows, n_threads);
}

template <class T, class I>
py::tuple csr_dispatch(const py::array& data, const py::array& indices, const py::array& indptr,
                       int64_t n, int64_t d, const py::array& theta, double bias, const AtomArgs& atoms,
                       const CombinationArgs& coef, double margin, const py::object& rows, int n_threads) {
    auto x = borrow<T>(data, "X.data", 1);
    auto ind = borrow<I>(indices, "X.indices", 1);
    auto ptr = borrow<I>(indptr, "X.indptr", 1);
    check_len(ptr.shape(0), n + 1, "X.indptr (n_samples + 1)");
    check_len(x.shape(0), ind.shape(0), "X.data (nnz of X.indices)");
    if (static_cast<int64_t>(ptr.at(0)) != 0 || static_cast<int64_t>(ptr.at(n)) > ind.shape(0))
        value_error("X.indptr must start at 0 and end at most at len(X.indices)");
    return run_kernel(rateopt::CsrView<T, I>{x.data(), ind.data(), ptr.data(), n, d}, theta, bias, atoms,
                      coef, margin, rows, n_threads);
}

py::tuple rate_kernel_csr(const py::array& data, const py::array& indices, const py::array& indptr,
                          int64_t n, int64_t d, const py::array& theta, double bias,
                          const py::array& atom_indptr, const py::array& atom_indices,
                          const py::array& atom_weights, int64_t n_atoms, const py::array& coef_in,
                          const py::array& proxies, const py::array& grad_weights, bool separate,
                          double margin, const py::object& rows, int n_threads) {
    AtomArgs atoms = atom_args(atom_indptr, atom_indices, atom_weights, n_atoms, n);
    CombinationArgs coef = combination_args(coef_in, proxies, grad_weights, separate, atoms.view.n_atoms);
    const bool f32 = is_exact<float>(data);
    const bool i32 = is_exact<int32_t>(indices);
    if (f32 && i32) return csr_dispatch<float, int32_t>(data, indices, indptr, n, d, theta, bias, atoms, coef, margin, rows, n_threads);
    if (f32) return csr_dispatch<float, int64_t>(data, indices, indptr, n, d, theta, bias, atoms, coef, margin, rows, n_threads);
    if (i32) return csr_dispatch<double, int32_t>(data, indices, indptr, n, d, theta, bias, atoms, coef, margin, rows, n_threads);
    return csr_dispatch<double, int64_t>(data, indices, indptr, n, d, theta, bias, atoms, coef, margin, rows, n_threads);
}

// ---- one-time checks -------------------------------------------------------

int64_t first_nonfinite(const py::array& a, int n_threads) {
    check_threads(n_threads);
    if (is_exact<float>(a)) {
        auto x = borrow<float>(a, "array", 1);
        py::gil_scoped_release release;
        return rateopt::first_nonfinite(x.data(), x.shape(0), n_threads);
    }
    auto x = borrow<double>(a, "array", 1);
    py::gil_scoped_release release;
    return rateopt::first_nonfinite(x.data(), x.shape(0), n_threads);
}

int64_t first_out_of_range(const py::array& a, int64_t bound, int n_threads) {
    check_threads(n_threads);
    if (is_exact<int32_t>(a)) {
        auto x = borrow<int32_t>(a, "array", 1);
        py::gil_scoped_release release;
        return rateopt::first_out_of_range(x.data(), x.shape(0), bound, n_threads);
    }
    auto x = borrow<int64_t>(a, "array", 1);
    py::gil_scoped_release release;
    return rateopt::first_out_of_range(x.data(), x.shape(0), bound, n_threads);
}

int64_t first_decrease(const py::array& a, int n_threads) {
    check_threads(n_threads);
    if (is_exact<int32_t>(a)) {
        auto x = borrow<int32_t>(a, "array", 1);
        py::gil_scoped_release release;
        return x.shape(0) == 0 ? -1 : rateopt::first_decrease(x.data(), x.shape(0) - 1, n_threads);
    }
    auto x = borrow<int64_t>(a, "array", 1);
    py::gil_scoped_release release;
    return x.shape(0) == 0 ? -1 : rateopt::first_decrease(x.data(), x.shape(0) - 1, n_threads);
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

// ---- lambda player ---------------------------------------------------------

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

darray swap_update_multiplicative(const py::array& log_M_in, const py::array& delta_in,
                                  const py::array& lam_in, double eta) {
    auto log_M = borrow<double>(log_M_in, "log_M", 2);
    auto delta = borrow<double>(delta_in, "delta", 1);
    auto lam = borrow<double>(lam_in, "lam", 1);
    const int64_t k = square_side(log_M, "log_M");
    check_len(delta.shape(0), k, "delta");
    check_len(lam.shape(0), k, "lam");
    darray out = copy_of(log_M);
    rateopt::swap_update_multiplicative(out.mutable_data(), delta.data(), lam.data(), k, eta);
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


// ---- kernel blocks ----------------------------------------------------------

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
    const int64_t n = X.shape(0), d = X.shape(1);
    if (is_exact<float>(X)) {
        auto x = borrow<float>(X, "X", 2);
        return run_kernel_block(rateopt::DenseView<float>{x.data(), n, d}, B, p, out_f32, n_threads);
    }
    auto x = borrow<double>(X, "X", 2);
    return run_kernel_block(rateopt::DenseView<double>{x.data(), n, d}, B, p, out_f32, n_threads);
}

template <class T, class I>
py::array csr_kernel_dispatch(const py::array& data, const py::array& indices, const py::array& indptr, int64_t n,
                              int64_t d, const py::array& B, const rateopt::KernelParams& p, bool out_f32,
                              int n_threads) {
    auto x = borrow<T>(data, "X.data", 1);
    auto ind = borrow<I>(indices, "X.indices", 1);
    auto ptr = borrow<I>(indptr, "X.indptr", 1);
    check_len(ptr.shape(0), n + 1, "X.indptr (n_samples + 1)");
    return run_kernel_block(rateopt::CsrView<T, I>{x.data(), ind.data(), ptr.data(), n, d}, B, p, out_f32, n_threads);
}

py::array kernel_block_csr(const py::array& data, const py::array& indices, const py::array& indptr, int64_t n,
                           int64_t d, const py::array& B, int kind, double gamma, double coef0, double degree,
                           bool out_f32, int n_threads) {
    const auto p = kernel_params(kind, gamma, coef0, degree);
    const bool f32 = is_exact<float>(data);
    const bool i32 = is_exact<int32_t>(indices);
    if (f32 && i32) return csr_kernel_dispatch<float, int32_t>(data, indices, indptr, n, d, B, p, out_f32, n_threads);
    if (f32) return csr_kernel_dispatch<float, int64_t>(data, indices, indptr, n, d, B, p, out_f32, n_threads);
    if (i32) return csr_kernel_dispatch<double, int32_t>(data, indices, indptr, n, d, B, p, out_f32, n_threads);
    return csr_kernel_dispatch<double, int64_t>(data, indices, indptr, n, d, B, p, out_f32, n_threads);
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

// ---- test support -------------------------------------------------------------

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

}  // namespace

// --- offset-atom kernel (AUC, issue 11) ---------------------------------------
// rateopt::offset_rate_kernel (offset_kernel.hpp): the rate kernel with a
// trainable score offset per atom. Same conversions and checks as the plain
// kernel, plus offset_ids (int32, one per atom, in [-1, n_offsets)) and
// offsets (float64, finite). Registered by register_offset_kernel below.
#include "rateopt/offset_kernel.hpp"

namespace {

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

template <class Matrix>
py::tuple run_offset_kernel(const Matrix& X, const py::array& theta_in, double bias, const AtomArgs& atoms,
                            const OffsetArgs& off, const CombinationArgs& cb, double margin,
                            const py::object& rows_in, int n_threads) {
    auto theta = borrow<double>(theta_in, "theta", 1);
    check_len(theta.shape(0), X.n_cols, "theta (n_features)");
    const int64_t* rows = nullptr;
    int64_t n_batch = 0;
    py::array_t<int64_t, py::array::c_style> rows_arr;
    if (!rows_in.is_none()) {
        rows_arr = borrow<int64_t>(rows_in.cast<py::array>(), "rows", 1);
        rows = rows_arr.data();
        n_batch = rows_arr.shape(0);
        if (n_batch == 0) value_error("rows must not be empty");
        if (rateopt::first_out_of_range(rows, n_batch, X.n_rows, 1) >= 0)
            value_error("rows holds a row index outside [0, n_samples)");
    }
    check_threads(n_threads);
    if (!std::isfinite(bias)) value_error("bias must be finite");
    if (!(margin > 0.0) || !std::isfinite(margin)) value_error("margin must be a finite number > 0");
    const int64_t n_atoms = atoms.view.n_atoms;
    const int64_t k = cb.view.k;
    const int64_t n_grads = cb.view.separate_gradients ? k : 1;
    darray rates(n_atoms), ppos(n_atoms), pneg(n_atoms), proxy_values(k), values(k), grad_bias(n_grads);
    darray grad({n_grads, X.n_cols});
    darray grad_offsets({n_grads, off.view.n_offsets});
    rateopt::OffsetKernelOutput out{
        rateopt::RateKernelOutput{rates.mutable_data(), ppos.mutable_data(), pneg.mutable_data(),
                                  proxy_values.mutable_data(), values.mutable_data(), grad.mutable_data(),
                                  grad_bias.mutable_data()},
        grad_offsets.mutable_data()};
    {
        py::gil_scoped_release release;
        rateopt::offset_rate_kernel(X, theta.data(), bias, atoms.view, off.view, cb.view, margin, rows, n_batch,
                                    n_threads, out);
    }
    return py::make_tuple(rates, ppos, pneg, proxy_values, values, grad, grad_bias, grad_offsets,
                          out.base.n_nonfinite_scores);
}

py::tuple offset_kernel_dense(const py::array& X, const py::array& theta, double bias,
                              const py::array& atom_indptr, const py::array& atom_indices,
                              const py::array& atom_weights, int64_t n_atoms, const py::array& offset_ids,
                              const py::array& offsets, const py::array& coef_in, const py::array& proxies,
                              const py::array& grad_weights, bool separate, double margin, const py::object& rows,
                              int n_threads) {
    if (X.ndim() != 2) value_error("X must be 2-D, got " + std::to_string(X.ndim()) + "-D");
    const int64_t n = X.shape(0), d = X.shape(1);
    AtomArgs atoms = atom_args(atom_indptr, atom_indices, atom_weights, n_atoms, n);
    OffsetArgs off = offset_args(offset_ids, offsets, atoms.view.n_atoms);
    CombinationArgs coef = combination_args(coef_in, proxies, grad_weights, separate, atoms.view.n_atoms);
    if (is_exact<float>(X)) {
        auto x = borrow<float>(X, "X", 2);
        return run_offset_kernel(rateopt::DenseView<float>{x.data(), n, d}, theta, bias, atoms, off, coef, margin,
                                 rows, n_threads);
    }
    auto x = borrow<double>(X, "X", 2);
    return run_offset_kernel(rateopt::DenseView<double>{x.data(), n, d}, theta, bias, atoms, off, coef, margin, rows,
                             n_threads);
}

template <class T, class I>
py::tuple offset_csr_dispatch(const py::array& data, const py::array& indices, const py::array& indptr, int64_t n,
                              int64_t d, const py::array& theta, double bias, const AtomArgs& atoms,
                              const OffsetArgs& off, const CombinationArgs& coef, double margin,
                              const py::object& rows, int n_threads) {
    auto x = borrow<T>(data, "X.data", 1);
    auto ind = borrow<I>(indices, "X.indices", 1);
    auto ptr = borrow<I>(indptr, "X.indptr", 1);
    check_len(ptr.shape(0), n + 1, "X.indptr (n_samples + 1)");
    check_len(x.shape(0), ind.shape(0), "X.data (nnz of X.indices)");
    if (static_cast<int64_t>(ptr.at(0)) != 0 || static_cast<int64_t>(ptr.at(n)) > ind.shape(0))
        value_error("X.indptr must start at 0 and end at most at len(X.indices)");
    return run_offset_kernel(rateopt::CsrView<T, I>{x.data(), ind.data(), ptr.data(), n, d}, theta, bias, atoms, off,
                             coef, margin, rows, n_threads);
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
    const bool f32 = is_exact<float>(data);
    const bool i32 = is_exact<int32_t>(indices);
    if (f32 && i32)
        return offset_csr_dispatch<float, int32_t>(data, indices, indptr, n, d, theta, bias, atoms, off, coef, margin,
                                                   rows, n_threads);
    if (f32)
        return offset_csr_dispatch<float, int64_t>(data, indices, indptr, n, d, theta, bias, atoms, off, coef, margin,
                                                   rows, n_threads);
    if (i32)
        return offset_csr_dispatch<double, int32_t>(data, indices, indptr, n, d, theta, bias, atoms, off, coef,
                                                    margin, rows, n_threads);
    return offset_csr_dispatch<double, int64_t>(data, indices, indptr, n, d, theta, bias, atoms, off, coef, margin,
                                                rows, n_threads);
}

void register_offset_kernel(py::module_& m) {
    m.def("offset_kernel_dense", &offset_kernel_dense, py::arg("X"), py::arg("theta"), py::arg("bias"),
          py::arg("atom_indptr"), py::arg("atom_indices"), py::arg("atom_weights"), py::arg("n_atoms"),
          py::arg("offset_ids"), py::arg("offsets"), py::arg("coef"), py::arg("proxies"), py::arg("grad_weights"),
          py::arg("separate_gradients"), py::arg("margin"), py::arg("rows"), py::arg("n_threads"));
    m.def("offset_kernel_csr", &offset_kernel_csr, py::arg("data"), py::arg("indices"), py::arg("indptr"),
          py::arg("n_samples"), py::arg("n_features"), py::arg("theta"), py::arg("bias"), py::arg("atom_indptr"),
          py::arg("atom_indices"), py::arg("atom_weights"), py::arg("n_atoms"), py::arg("offset_ids"),
          py::arg("offsets"), py::arg("coef"), py::arg("proxies"), py::arg("grad_weights"),
          py::arg("separate_gradients"), py::arg("margin"), py::arg("rows"), py::arg("n_threads"));
}

}  // namespace
// --- end offset-atom kernel (AUC, issue 11) -----------------------------------

// --- SDCA solver (issue 12) --------------------------------------------------
// sdca_two_sided_hinge_{dense,csr}: borrow, check (lengths, finiteness and
// signs of the weights and starts, the scalar ranges: O(n + d), cheap next to
// one epoch), allocate theta and xi, release the GIL around the solver. X's
// finiteness is the FeatureMatrix's one-time check (rateopt.core).
#include <cmath>

#include "rateopt/sdca.hpp"

namespace {

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
    if (X.ndim() != 2) value_error("X must be 2-D, got " + std::to_string(X.ndim()) + "-D");
    const int64_t n = X.shape(0), d = X.shape(1);
    SdcaArgs args = sdca_args(n, d, A, B, lam, tau, beta, regularized_bias, bias_scale, theta0, bias0, xi0, tol,
                              max_epochs, seed);
    if (is_exact<float>(X)) {
        auto x = borrow<float>(X, "X", 2);
        return run_sdca(rateopt::DenseView<float>{x.data(), n, d}, args);
    }
    auto x = borrow<double>(X, "X", 2);
    return run_sdca(rateopt::DenseView<double>{x.data(), n, d}, args);
}

template <class T, class I>
py::tuple sdca_csr_dispatch(const py::array& data, const py::array& indices, const py::array& indptr, int64_t n,
                            int64_t d, const SdcaArgs& args) {
    auto x = borrow<T>(data, "X.data", 1);
    auto ind = borrow<I>(indices, "X.indices", 1);
    auto ptr = borrow<I>(indptr, "X.indptr", 1);
    check_len(ptr.shape(0), n + 1, "X.indptr (n_samples + 1)");
    check_len(x.shape(0), ind.shape(0), "X.data (nnz of X.indices)");
    if (static_cast<int64_t>(ptr.at(0)) != 0 || static_cast<int64_t>(ptr.at(n)) > ind.shape(0))
        value_error("X.indptr must start at 0 and end at most at len(X.indices)");
    return run_sdca(rateopt::CsrView<T, I>{x.data(), ind.data(), ptr.data(), n, d}, args);
}

py::tuple sdca_csr(const py::array& data, const py::array& indices, const py::array& indptr, int64_t n, int64_t d,
                   const py::array& A, const py::array& B, double lam, double tau, double beta,
                   bool regularized_bias, double bias_scale, const py::object& theta0, double bias0,
                   const py::object& xi0, double tol, int64_t max_epochs, uint64_t seed) {
    SdcaArgs args = sdca_args(n, d, A, B, lam, tau, beta, regularized_bias, bias_scale, theta0, bias0, xi0, tol,
                              max_epochs, seed);
    const bool f32 = is_exact<float>(data);
    const bool i32 = is_exact<int32_t>(indices);
    if (f32 && i32) return sdca_csr_dispatch<float, int32_t>(data, indices, indptr, n, d, args);
    if (f32) return sdca_csr_dispatch<float, int64_t>(data, indices, indptr, n, d, args);
    if (i32) return sdca_csr_dispatch<double, int32_t>(data, indices, indptr, n, d, args);
    return sdca_csr_dispatch<double, int64_t>(data, indices, indptr, n, d, args);
}

void register_sdca(py::module_& m) {
    m.def("sdca_two_sided_hinge_dense", &sdca_dense, py::arg("X"), py::arg("A"), py::arg("B"), py::arg("lam"),
          py::arg("tau"), py::arg("beta"), py::arg("regularized_bias"), py::arg("bias_scale"), py::arg("theta0"),
          py::arg("bias0"), py::arg("xi0"), py::arg("tol"), py::arg("max_epochs"), py::arg("seed"));
    m.def("sdca_two_sided_hinge_csr", &sdca_csr, py::arg("data"), py::arg("indices"), py::arg("indptr"),
          py::arg("n_samples"), py::arg("n_features"), py::arg("A"), py::arg("B"), py::arg("lam"), py::arg("tau"),
          py::arg("beta"), py::arg("regularized_bias"), py::arg("bias_scale"), py::arg("theta0"), py::arg("bias0"),
          py::arg("xi0"), py::arg("tol"), py::arg("max_epochs"), py::arg("seed"));
}

}  // namespace
// --- end of the SDCA solver (issue 12) ---------------------------------------

PYBIND11_MODULE(_core, m) {
    m.doc() = "rateopt's compiled core (private: use rateopt.core).";
    m.def("openmp_enabled", &rateopt::openmp_enabled);
    m.def("default_threads", &rateopt::default_threads);
    m.def("available_cores", &rateopt::available_cores);
    m.def("build_info", &build_info);
    m.def("rate_kernel_dense", &rate_kernel_dense, py::arg("X"), py::arg("theta"), py::arg("bias"),
          py::arg("atom_indptr"), py::arg("atom_indices"), py::arg("atom_weights"), py::arg("n_atoms"),
          py::arg("coef"), py::arg("proxies"), py::arg("grad_weights"), py::arg("separate_gradients"),
          py::arg("margin"), py::arg("rows"), py::arg("n_threads"));
    m.def("rate_kernel_csr", &rate_kernel_csr, py::arg("data"), py::arg("indices"), py::arg("indptr"),
          py::arg("n_samples"), py::arg("n_features"), py::arg("theta"), py::arg("bias"),
          py::arg("atom_indptr"), py::arg("atom_indices"), py::arg("atom_weights"), py::arg("n_atoms"),
          py::arg("coef"), py::arg("proxies"), py::arg("grad_weights"), py::arg("separate_gradients"),
          py::arg("margin"), py::arg("rows"), py::arg("n_threads"));
    m.def("first_nonfinite", &first_nonfinite, py::arg("array"), py::arg("n_threads"));
    m.def("first_out_of_range", &first_out_of_range, py::arg("array"), py::arg("bound"), py::arg("n_threads"));
    m.def("first_decrease", &first_decrease, py::arg("array"), py::arg("n_threads"));
    m.def("first_negative", &first_negative, py::arg("array"), py::arg("n_threads"));
    m.def("memory_floor", &memory_floor, py::arg("array"), py::arg("n_threads"));
    m.def("swap_update_multiplicative", &swap_update_multiplicative, py::arg("log_M"), py::arg("delta"),
          py::arg("lam"), py::arg("eta"));
    m.def("swap_update_additive", &swap_update_additive, py::arg("M"), py::arg("delta"), py::arg("lam"),
          py::arg("eta"));
    m.def("stationary_distribution", &stationary_distribution, py::arg("M"), py::arg("lam0"), py::arg("tol"),
          py::arg("max_iter"));
    m.def("external_update_multiplicative", &external_update_multiplicative, py::arg("log_lam"),
          py::arg("delta"), py::arg("eta"));
    m.def("external_update_additive", &external_update_additive, py::arg("lam"), py::arg("delta"),
          py::arg("eta"), py::arg("simplex"), py::arg("radius"));
    m.def("project_simplex", &project_simplex, py::arg("v"), py::arg("radius"));
    m.def("kernel_block_dense", &kernel_block_dense, py::arg("X"), py::arg("landmarks"), py::arg("kind"),
          py::arg("gamma"), py::arg("coef0"), py::arg("degree"), py::arg("out_f32"), py::arg("n_threads"));
    m.def("kernel_block_csr", &kernel_block_csr, py::arg("data"), py::arg("indices"), py::arg("indptr"),
          py::arg("n_samples"), py::arg("n_features"), py::arg("landmarks"), py::arg("kind"), py::arg("gamma"),
          py::arg("coef0"), py::arg("degree"), py::arg("out_f32"), py::arg("n_threads"));
    m.def("gram_transform", &gram_transform, py::arg("G"), py::arg("xsq"), py::arg("bsq"), py::arg("kind"),
          py::arg("gamma"), py::arg("coef0"), py::arg("degree"), py::arg("n_threads"));
    m.def("project_l1_ball_nonneg", &project_l1_ball_nonneg, py::arg("v"), py::arg("radius"));
    register_offset_kernel(m);  // --- offset-atom kernel (AUC, issue 11)
    register_sdca(m);  // SDCA solver (issue 12)
    m.def("_call_in_parallel_region", &call_in_parallel_region, py::arg("fn"), py::arg("n_outer"));
}
