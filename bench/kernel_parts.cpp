// Where the two-class fused pass spends its time (issue 35 item 4): a standalone
// diagnostic, not part of the library. It times, at 1 thread and in thread CPU
// time (so that other processes' time slices do not count), medians of
// interleaved repeats over one CSR matrix (float32 values, int32 ids, 50
// stratified random columns per row, as bench/kernel.py builds it):
//
//   full       rateopt::rate_kernel, one hinge combination (the model step), m = 10
//   dot        the score gather alone: x_j . theta for every row
//   axpy       the gradient scatter alone: grad += 0.3 x_j for every row
//   dot+axpy   score, then the scatter when the hinge is active (no atoms)
//   branchfree full's row logic written without branches on the sign of u and
//              with the axpy done for every row (d = 0 adds exact zeros)
//   lookahead  full's single-combination row logic with the next row's score
//              computed before this row's axpy (a one-row software pipeline;
//              the same operations in the same order per accumulator)
//   stripes    dot+axpy over row blocks of B rows and column stripes of W
//              columns (theta and grad stripes L1-resident; per-row cursors)
//   floor      rateopt::stream_checksum over X's arrays (the memory floor)
//
// Build and run from the repository root (OpenMP is only needed for the floor's
// parallel path; everything here runs at 1 thread):
//   g++ -O3 -fopenmp -DROPT_HAVE_OPENMP=1 -Icpp/include bench/kernel_parts.cpp -o /tmp/kernel_parts
//   /tmp/kernel_parts [rows=500000] [repeats=7] [n_features=20000]     (B, W from the environment)
// Results: bench/results/kernel_parts.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "rateopt/rate_kernel.hpp"
#include "rateopt/validate.hpp"

using namespace rateopt;

static double cpu_s() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char** argv) {
    const long n = argc > 1 ? atol(argv[1]) : 500000;
    const int reps = argc > 2 ? atoi(argv[2]) : 7;
    const int F = argc > 3 ? atoi(argv[3]) : 20000;
    const int K = 50;
    const int B = getenv("B") ? atoi(getenv("B")) : 256;
    const int W = getenv("W") ? atoi(getenv("W")) : 2048;
    std::mt19937_64 rng(1);
    std::normal_distribution<float> nd;
    std::uniform_real_distribution<double> ud;
    std::vector<float> data(n * K);
    std::vector<int32_t> idx(n * K), ip(n + 1);
    for (long j = 0; j < n; j++) {
        ip[j] = j * K;
        for (int q = 0; q < K; q++) {
            const long lo = (long)q * F / K, hi = (long)(q + 1) * F / K;
            idx[j * K + q] = lo + (long)(ud(rng) * (hi - lo));
            data[j * K + q] = nd(rng);
        }
    }
    ip[n] = n * K;
    CsrView<float, int32_t> X{data.data(), idx.data(), ip.data(), n, F};
    std::vector<double> theta(F);
    for (auto& t : theta) t = nd(rng);
    {  // scores of unit spread, as bench/kernel.py
        double s = 0, s2 = 0;
        for (long j = 0; j < 20000; j++) {
            const double v = X.dot(j, theta.data());
            s += v;
            s2 += v * v;
        }
        const double sd = std::sqrt(s2 / 20000 - (s / 20000) * (s / 20000));
        for (auto& t : theta) t /= sd;
    }
    // m = 10 groups + label atoms, weights 1/|S_a|, as bench/kernel.py
    const int m = 10, na = m + 2;
    std::vector<int64_t> aip(n + 1);
    std::vector<int32_t> aix(2 * n);
    std::vector<double> aw(2 * n), coef(na), sz(na);
    for (long j = 0; j < n; j++) {
        aip[j] = 2 * j;
        const int g = rng() % m, y = ud(rng) < 0.3;
        aix[2 * j] = g;
        aix[2 * j + 1] = m + y;
        sz[g]++;
        sz[m + y]++;
    }
    aip[n] = 2 * n;
    for (long e = 0; e < 2 * n; e++) aw[e] = 1.0 / sz[aix[e]];
    for (auto& c : coef) c = nd(rng);
    const AtomView av{aip.data(), aix.data(), aw.data(), n, na};
    int32_t kind = 0;
    double gw = 1.0;
    std::vector<double> rates(na), pp(na), pn(na), pv(1), val(1), grad(F), gb(1), g2(F);
    double sink = 0;
    const double margin = 1.0, bias = 0.1;

    auto full = [&] {
        Combinations cb;
        cb.k = 1;
        cb.coef = coef.data();
        cb.kinds = &kind;
        cb.grad_weights = &gw;
        RateKernelOutput out{rates.data(), pp.data(), pn.data(), pv.data(), val.data(), grad.data(), gb.data()};
        rate_kernel(X, theta.data(), bias, av, cb, margin, nullptr, 0, 1, out);
        sink += grad[0];
    };
    auto dot = [&] {
        double s = 0;
        for (long j = 0; j < n; j++) s += X.dot(j, theta.data()) >= 0;
        sink += s;
    };
    auto axpy = [&] {
        std::fill(g2.begin(), g2.end(), 0.0);
        for (long j = 0; j < n; j++) X.axpy(j, 0.3, g2.data());
        sink += g2[0];
    };
    auto dotaxpy = [&] {
        std::fill(g2.begin(), g2.end(), 0.0);
        for (long j = 0; j < n; j++) {
            const double s = X.dot(j, theta.data()) + bias;
            const double d = s > -margin ? (j & 1 ? 0.3 : -0.2) : 0.0;
            if (d != 0) X.axpy(j, d, g2.data());
        }
        sink += g2[0];
    };
    std::vector<double> R(na), PP(na), PN(na);
    auto branchfree = [&] {
        std::fill(g2.begin(), g2.end(), 0.0);
        std::fill(R.begin(), R.end(), 0.0);
        std::fill(PP.begin(), PP.end(), 0.0);
        std::fill(PN.begin(), PN.end(), 0.0);
        double proxy = 0, gbias = 0;
        for (long j = 0; j < n; j++) {
            const double s = X.dot(j, theta.data()) + bias;
            if (!std::isfinite(s)) continue;
            const double hp = std::max(0.0, margin + s), hn = std::max(0.0, margin - s);
            double u = 0;
            for (long e = aip[j]; e < aip[j + 1]; e++) {
                const int a = aix[e];
                const double v = aw[e];
                R[a] += v * (s >= 0 ? 1.0 : 0.0);
                PP[a] += v * hp;
                PN[a] += v * hn;
                u += coef[a] * v;
            }
            const double up = u > 0 ? u : 0, un = u < 0 ? u : 0;
            proxy += up * hp - un * hn + un;
            const double d = up * (margin + s > 0 ? 1.0 : 0.0) + un * (margin - s > 0 ? 1.0 : 0.0);
            X.axpy(j, d, g2.data());
            gbias += d;
        }
        sink += g2[0] + proxy + gbias + R[0] + PP[0] + PN[0];
    };
    auto lookahead = [&] {
        std::fill(g2.begin(), g2.end(), 0.0);
        std::fill(R.begin(), R.end(), 0.0);
        std::fill(PP.begin(), PP.end(), 0.0);
        std::fill(PN.begin(), PN.end(), 0.0);
        double proxy = 0, gbias = 0;
        double s_next = X.dot(0, theta.data()) + bias;
        for (long j = 0; j < n; j++) {
            const double s = s_next;
            if (j + 1 < n) s_next = X.dot(j + 1, theta.data()) + bias;
            if (!std::isfinite(s)) continue;
            const double hp = std::max(0.0, margin + s), hn = std::max(0.0, margin - s);
            double u = 0;
            for (long e = aip[j]; e < aip[j + 1]; e++) {
                const int a = aix[e];
                const double v = aw[e];
                R[a] += v * (s >= 0 ? 1.0 : 0.0);
                PP[a] += v * hp;
                PN[a] += v * hn;
                u += coef[a] * v;
            }
            double d = 0.0;
            if (u > 0.0) { proxy += u * hp; if (margin + s > 0.0) d = u; }
            else if (u < 0.0) { proxy += -u * hn + u; if (margin - s > 0.0) d = u; }
            if (d != 0.0) { X.axpy(j, d, g2.data()); gbias += d; }
        }
        sink += g2[0] + proxy + gbias + R[0] + PP[0] + PN[0];
    };
    std::vector<int64_t> cur(B);
    std::vector<double> sc(4 * B), dd(B);
    auto stripes = [&] {
        std::fill(g2.begin(), g2.end(), 0.0);
        const double* th = theta.data();
        double* g = g2.data();
        for (long r0 = 0; r0 < n; r0 += B) {
            const long nb = std::min(n, r0 + B) - r0;
            for (long r = 0; r < nb; r++) {
                cur[r] = ip[r0 + r];
                sc[4 * r] = sc[4 * r + 1] = sc[4 * r + 2] = sc[4 * r + 3] = 0;
            }
            for (int b = W; b < F + W; b += W)
                for (long r = 0; r < nb; r++) {
                    long p = cur[r];
                    const long e = ip[r0 + r + 1], st = ip[r0 + r];
                    double* a = &sc[4 * r];
                    while (p < e && idx[p] < b) {
                        a[(p - st) & 3] += (double)data[p] * th[idx[p]];
                        p++;
                    }
                    cur[r] = p;
                }
            for (long r = 0; r < nb; r++) {
                const double s = (sc[4 * r] + sc[4 * r + 1]) + (sc[4 * r + 2] + sc[4 * r + 3]) + bias;
                dd[r] = s > -margin ? ((r0 + r) & 1 ? 0.3 : -0.2) : 0.0;
                cur[r] = ip[r0 + r];
            }
            for (int b = W; b < F + W; b += W)
                for (long r = 0; r < nb; r++) {
                    long p = cur[r];
                    const long e = ip[r0 + r + 1];
                    const double d = dd[r];
                    while (p < e && idx[p] < b) {
                        g[idx[p]] += d * (double)data[p];
                        p++;
                    }
                    cur[r] = p;
                }
        }
        sink += g2[0];
    };
    auto floor1 = [&] {
        sink += stream_checksum((const unsigned char*)data.data(), data.size() * 4, 1) +
                stream_checksum((const unsigned char*)idx.data(), idx.size() * 4, 1) +
                stream_checksum((const unsigned char*)ip.data(), ip.size() * 4, 1);
    };
    std::vector<std::pair<std::string, std::function<void()>>> V = {
        {"full", full},       {"dot", dot},         {"axpy", axpy},   {"dot+axpy", dotaxpy},
        {"branchfree", branchfree}, {"lookahead", lookahead}, {"stripes", stripes}, {"floor", floor1}};
    std::vector<std::vector<double>> T(V.size());
    for (int r = 0; r < reps + 1; r++)  // round 0 is the warm-up
        for (size_t c = 0; c < V.size(); c++) {
            const double t0 = cpu_s();
            V[c].second();
            const double t = cpu_s() - t0;
            if (r) T[c].push_back(t);
        }
    auto med = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2] * 1e3;
    };
    double load[3] = {0, 0, 0};
    if (FILE* f = fopen("/proc/loadavg", "r")) {
        if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
        fclose(f);
    }
    const double fl = med(T.back());
    printf("rows %ld, features %d, 50 nnz/row, m = %d; B = %d, W = %d; %d repeats; load average %.1f\n", n, F, m, B,
           W, reps, load[0]);
    printf("| part | ms (thread CPU, median) | / floor | ns per nnz |\n|---|---|---|---|\n");
    for (size_t c = 0; c < V.size(); c++)
        printf("| %s | %.1f | %.2f | %.2f |\n", V[c].first.c_str(), med(T[c]), med(T[c]) / fl,
               med(T[c]) * 1e6 / (n * K));
    fprintf(stderr, "checksum %g\n", sink);
    return 0;
}
