// The two-class fused pass's row paths on the Adult anchors' data (issue 35): see
// bench/adult_pass_paths.py, which writes the arrays this reads from argv[1] and runs it.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>
#include <algorithm>
#include <string>
#include <cstring>
#include "rateopt/rate_kernel.hpp"
using namespace rateopt;
static const char* g_dir = ".";
template <class T> std::vector<T> load(const char* f) {
    std::string p = std::string(g_dir) + "/" + f; FILE* fp = fopen(p.c_str(), "rb"); fseek(fp, 0, SEEK_END); long n = ftell(fp); fseek(fp, 0, SEEK_SET);
    std::vector<T> v(n / sizeof(T)); fread(v.data(), 1, n, fp); fclose(fp); return v; }
static double cpu_s() { timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char** argv) {
    if (argc > 1) g_dir = argv[1];
    auto xd = load<double>("xd.bin"); auto xi = load<int32_t>("xi.bin"); auto xp = load<int32_t>("xp.bin");
    auto ap = load<int32_t>("ap.bin"); auto ai = load<uint8_t>("ai.bin"); auto aw = load<double>("aw.bin");
    auto c0 = load<double>("c0.bin"); auto c1 = load<double>("c1.bin"); auto th = load<double>("theta.bin"); auto bm = load<double>("bias.bin");
    const long n = xp.size() - 1; const long F = th.size(); const long A = c0.size();
    CsrView<double, int32_t> X{xd.data(), xi.data(), xp.data(), n, F};
    AtomView at; at.indptr32 = ap.data(); at.indices = ai.data(); at.id_width = AtomIdWidth::kU8; at.weights = aw.data(); at.n_rows = n; at.n_atoms = A;
    std::vector<double> coef(3 * A), zero(A, 0.0), one(A);
    for (long a = 0; a < A; ++a) { coef[a] = c0[a]; coef[A + a] = c1[a]; coef[2 * A + a] = c0[a] - c1[a]; one[a] = c0[a] + c1[a]; }
    int32_t kh[3] = {0, 0, 0}, kl[2] = {1, 0}; double gw[3] = {1, 1, 0.5}; uint8_t so[2] = {1, 0};
    Combinations cz{1, zero.data(), kh, gw, false, nullptr}, c1c{1, one.data(), kh, gw, false, nullptr}, c3{3, coef.data(), kh, gw, false, nullptr}, cl{2, coef.data(), kl, gw, false, so};
    Combinations* cbs[4] = {&cz, &c1c, &c3, &cl}; const char* names[4] = {"single zero", "single hinge", "multi k=3", "logistic pair"};
    // a minibatch of rows, some repeated, sorted
    std::vector<int64_t> rows; for (long i = 0; i < 5001; ++i) rows.push_back((i * 7919) % n); std::sort(rows.begin(), rows.end());
    std::vector<double> r(A), pp(A), pn(A), pv(3), v(3), g(3 * F); double gb[3];
    unsigned long long hsh = 1469598103934665603ULL;
    auto mix = [&](const double* p, size_t k) { for (size_t i = 0; i < k; ++i) { unsigned long long u; memcpy(&u, p + i, 8); hsh = (hsh ^ u) * 1099511628211ULL; } };
    std::vector<double> th2 = th; th2[3] = 1e308; th2[5] = 1e308;  // some non-finite scores
    for (int threads : {1, 2, 3}) for (int mb = 0; mb < 2; ++mb) for (int bad = 0; bad < 2; ++bad) for (double bias : {bm[0], 0.0, 3.0}) {
        RateKernelOutput out{r.data(), pp.data(), pn.data(), pv.data(), v.data(), g.data(), gb};
        rate_kernel(X, bad ? th2.data() : th.data(), bias, at, cl, bm[1], mb ? rows.data() : nullptr, mb ? (long)rows.size() : 0, threads, out);
        mix(r.data(), A); mix(pp.data(), A); mix(pn.data(), A); mix(pv.data(), 2); mix(v.data(), 2); mix(g.data(), F); mix(gb, 1);
        hsh ^= out.n_nonfinite_scores;
    }
    std::vector<std::vector<double>> ts(4);
    for (int rep = 0; rep < 200; ++rep) for (int w = 0; w < 4; ++w) {
        RateKernelOutput out{r.data(), pp.data(), pn.data(), pv.data(), v.data(), g.data(), gb};
        double t0 = cpu_s(); rate_kernel(X, th.data(), bm[0], at, *cbs[w], bm[1], nullptr, 0, 1, out); ts[w].push_back(cpu_s() - t0);
    }
    printf("logistic pair output hash %016llx\n", hsh);
    for (int w = 0; w < 4; ++w) { auto x = ts[w]; std::sort(x.begin(), x.end()); printf("%-14s %7.1f us\n", names[w], x[x.size()/2] * 1e6); }
}
