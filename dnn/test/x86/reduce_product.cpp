// PRODUCT along rows carries exact float pairs on AVX-512 and multiplies in double on AVX2 and
// without FMA (reduce_hwy.h): results checked against the exact product (long double, computed
// here) within u |P| + n 2^-43 |P| for the pairs and u |P| + n 2^-53 |P| for the doubles, at every
// Highway target, on rows near 1 at vector-width edges (of the pairs' four vectors and the double
// loop's eight) and long enough that a float running product (a pair without its low part) drifts
// past the bound, on rows whose partial products leave float's range inside a block (tiny values
// three steps apart in one lane for every vector width, balanced by huge ones), and with zeros,
// infinities and NaN in long rows, as naive gives them; and the same bits at 1, 2 and 3 threads
// where long rows split across threads.
#include <cmath>
#include <limits>
#include <random>

#include "neomeg/dnn/operators/reduce.h"
#include "x86/highway_targets.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Reduce::Mode;

param::Reduce product_param(int32_t axis) {
    param::Reduce p;
    p.mode = Mode::PRODUCT;
    p.axis = axis;
    return p;
}

HostTensor product(Handle& handle, const HostTensor& x) {
    auto op = handle.create_operator<Reduce>();
    op->param() = product_param(1);
    return run_op(*op, {x})[0];
}

// Each row of x (rows, n) within the bound of its exact product, u |P| + n step |P| (step: 2^-43
// for the float pairs, 2^-53 for products in double); a result below float's normal range may also
// be off by its rounding there (half of 2^-149).
void expect_within_bound(Handle& handle, const HostTensor& x, double step = 0x1p-43) {
    size_t rows = x.shape()[0], n = x.shape()[1];
    std::vector<double> v = x.values(), got = product(handle, x).values();
    const double u = std::ldexp(1.0, -24);
    for (size_t r = 0; r < rows; ++r) {
        long double p = 1;
        for (size_t k = 0; k < n; ++k)
            p *= v[r * n + k];
        double want = double(p);
        double bound = (u + double(n) * step) * std::fabs(want) + 0x1p-150;
        ASSERT_LE(std::fabs(got[r] - want), bound * (1 + 1e-6))
                << "row " << r << " of " << rows << "x" << n << ": " << got[r] << " vs exact "
                << want;
    }
}

// Rows of values 1 + d with d uniform in +-2^-8: every float product rounds, in no pattern.
HostTensor near_one_rows(size_t rows, size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<double> d(-1.0 / 256, 1.0 / 256);
    std::vector<double> v(rows * n);
    for (double& x : v)
        x = double(float(1 + d(rng)));
    return HostTensor::from({rows, n}, v);
}

// A row of 257 near 1 with 2^-50 (times 1 + noise) at 0, 4, 8, 16, 32, 64 and 128: for vector
// steps of 4, 16, 32 and 64 values (the scalar target to AVX-512, four vectors a step) some lane's
// running product meets three of them in one block and drops below float's range, and seven
// 2^50 at the end bring the product back near 1 (in double every order stays in range).
HostTensor out_of_float_range_row(std::mt19937& rng) {
    std::uniform_real_distribution<double> d(-0.25, 0.25);
    HostTensor x = near_one_rows(1, 257, rng);
    std::vector<double> v = x.values();
    for (size_t k : {0, 4, 8, 16, 32, 64, 128})
        v[k] = double(float(std::ldexp(1 + d(rng), -50)));
    for (size_t k = 250; k < 257; ++k)
        v[k] = double(float(std::ldexp(1 + d(rng), 50)));
    return HostTensor::from({1, 257}, v);
}

}  // namespace

TEST_F(X86, ReduceProductMeetsItsBound) {
#ifdef NEOMEG_WITH_DNNL
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t t) {
                SCOPED_TRACE(testing::Message() << "Highway target " << hwy::TargetName(t));
                // The float pairs run on AVX-512 only; elsewhere naive's double products.
                const double step = t == HWY_AVX3 ? 0x1p-43 : 0x1p-53;
                std::mt19937 rng(5);
                for (size_t n :
                     {1,    2,    3,    7,    8,    9,    15,   16,   17,   31,   32,   33,  35,
                      63,   64,   65,   127,  128,  129,  255,  256,  257,  511,  512,  513, 1023,
                      1024, 1025, 2047, 2048, 2049, 4096, 4099, 8191, 8192, 8193, 65537})
                    expect_within_bound(*handle, near_one_rows(3, n, rng), step);
                for (int k = 0; k < 5; ++k)
                    expect_within_bound(*handle, out_of_float_range_row(rng), step);
            });
    EXPECT_GE(ran, 1u);
#endif
}

// Zeros, infinities, NaN, and float overflow inside a block of a long row, at every target,
// against naive (0 x inf is NaN and NaN stays in any order).
TEST_F(X86, ReduceProductSpecialValuesInLongRows) {
#ifdef NEOMEG_WITH_DNNL
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const size_t n = 1031, rows = 15;
    std::vector<double> v(rows * n, 1.0);
    for (size_t k = 0; k < n; ++k)
        v[k] = k % 2 ? 1.0009765625 : 0.9990234375;  // row 0: plain, a control
    v[n + 700] = 0.0;                                // row 1: a zero
    v[2 * n + 9] = -inf;                             // row 2: -inf and zero: NaN
    v[2 * n + 900] = 0.0;
    for (size_t k = 0; k < 16; ++k) {
        v[3 * n + k] = 1e30;  // row 3: 1e480 in float lanes, back to 1 by the end
        v[3 * n + 1000 + k] = 1e-30;
    }
    v[4 * n + 17] = 1e-30;  // row 4: below float's range in one lane, then back
    v[4 * n + 81] = 1e-30;
    v[4 * n + 145] = 1e-30;
    v[4 * n + 1030] = 1e30;
    v[4 * n + 1029] = 1e30;
    // Rows 5-14: inf or NaN alone at positions in each of the four accumulators at some vector
    // width (16, 8 and 1 lanes: 53 is the fourth at 16 lanes, 31 at 8 and 1).
    size_t r = 5;
    for (double special : {inf, nan})
        for (size_t k : {2, 31, 53, 300, 1030})
            v[r++ * n + k] = special;
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t t) {
                SCOPED_TRACE(testing::Message() << "Highway target " << hwy::TargetName(t));
                Checker<Reduce> c(handle.get());
                c.set_param(product_param(1)).set_epsilon(1e-6).set_values(0, v).execs({{rows, n}});
            });
    EXPECT_GE(ran, 1u);
#endif
}

// Rows long enough to split across threads (one row: chunks combine) and many rows: the same
// results at 1, 2 and 3 threads, each within naive's tolerance.
TEST_F(X86, ReduceProductThreadCountsAgree) {
    std::mt19937 rng(9);
    for (const TensorShape& s : {TensorShape{1, 300007}, TensorShape{1024, 2048}}) {
        HostTensor x = near_one_rows(s[0], s[1], rng);
        std::vector<double> first;
        for (int threads : {1, 2, 3}) {
            ScopedOmpThreads scope(threads);
            std::vector<double> got = product(*handle, x).values();
            if (first.empty())
                first = got;
            for (size_t r = 0; r < got.size(); ++r)
                ASSERT_NEAR(got[r], first[r], 1e-6 * std::fabs(first[r]))
                        << s.to_string() << " row " << r << " at " << threads << " threads";
        }
        expect_within_bound(*handle, x);
    }
}
