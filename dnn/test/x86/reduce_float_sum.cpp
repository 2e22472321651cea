// SUM, MEAN and SUM_SQR along rows add in float blocks (reduce_hwy.h): their results checked
// against the exact sum (long double, computed here) within the stated bound, at every Highway
// target, on random rows of every axis of the shared shapes and on rows built against float
// summation: values that round one way in every addition once a float partial sum reaches a given
// size (a longer float run than kReduceFloatSteps per lane breaks the bound on them), large
// cancellation (alternating and half-and-half signs of 1e4 with small noise), magnitudes spread
// over 2^-30..2^30, and lengths at vector-width edges; infinities, NaN and sums near float's
// limit, as naive gives them.
#include <cmath>
#include <limits>
#include <random>

#include "neomeg/dnn/operators/reduce.h"
#include "src/x86/reduce_hwy.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Reduce::Mode;

HostTensor reduce(Handle& handle, Mode m, int32_t axis, const HostTensor& x) {
    auto op = handle.create_operator<Reduce>();
    op->param().mode = m;
    op->param().axis = axis;
    return run_op(*op, {x})[0];
}

// Every output of x reduced along `axis` within the bound of reduce_hwy.h of the exact result.
void expect_within_bound(Handle& handle, Mode m, int32_t axis, const HostTensor& x) {
    const TensorShape& s = x.shape();
    size_t a = static_cast<size_t>(axis < 0 ? axis + int32_t(s.ndim) : axis);
    size_t outer = 1, n = s[a], inner = 1;
    for (size_t d = 0; d < a; ++d)
        outer *= s[d];
    for (size_t d = a + 1; d < s.ndim; ++d)
        inner *= s[d];
    std::vector<double> v = x.values(), got = reduce(handle, m, axis, x).values();
    const double u = std::ldexp(1.0, -24);
    for (size_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < inner; ++i) {
            long double sum = 0, abs = 0;
            for (size_t k = 0; k < n; ++k) {
                long double t = v[(o * n + k) * inner + i];
                if (m == Mode::SUM_SQR)
                    t *= t;
                sum += t;
                abs += std::fabs(t);
            }
            double scale = m == Mode::MEAN ? double(n) : 1.0;
            double want = double(sum) / scale, sum_abs = double(abs) / scale;
            double bound = double(x86::kReduceFloatSteps) * u * sum_abs + u * std::fabs(want) +
                           double(n) * std::ldexp(1.0, -52) * sum_abs;
            double g = got[o * inner + i];
            ASSERT_LE(std::fabs(g - want), bound * (1 + 1e-6) + 1e-45)
                    << param::to_string(m) << " of " << s.to_string() << " axis " << axis
                    << ", output " << o * inner + i << ": " << g << " vs exact " << want;
        }
}

const std::vector<TensorShape> kShapes = {{1},        {7},          {1000},     {13, 17},
                                          {3, 1, 5},  {2, 3, 5, 7}, {64, 1024}, {3, 257, 129},
                                          {1, 70001}, {300, 301},   {4, 70001}, {512, 300}};

// Rows of 65536 values 1 + 2^(k-23) (half an ulp of a partial sum in [2^k, 2^(k+1))) less 2^-23,
// k = 2..14: adding one to a float partial sum in that octave loses just under half its ulp, every
// time. Some row meets its octave late in each lane's run at every vector width (4 lanes for the
// scalar target to 64 for AVX-512, 16384 to 1024 values each); with kReduceFloatSteps values per
// lane no partial sum gets past 8 and these rows sum exactly.
HostTensor one_way_rows() {
    const size_t n = 65536;
    std::vector<double> v;
    for (int k = 2; k <= 14; ++k) {
        float x = float(1.0 + std::ldexp(1.0, k - 24) - std::ldexp(1.0, -23));
        v.insert(v.end(), n, double(x));
    }
    return HostTensor::from({v.size() / n, n}, v);
}

HostTensor cancelling_rows(size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<double> noise(-1e-2, 1e-2);
    std::vector<double> v;
    for (size_t k = 0; k < n; ++k)  // alternating signs
        v.push_back((k % 2 ? -1e4 : 1e4) + noise(rng));
    for (size_t k = 0; k < n; ++k)  // the first half positive, the second negative
        v.push_back((k < n / 2 ? 1e4 : -1e4) + noise(rng));
    std::uniform_int_distribution<int> expo(-30, 30), sign(0, 1);
    for (size_t k = 0; k < n; ++k)  // magnitudes far apart
        v.push_back((sign(rng) ? -1.0 : 1.0) * std::ldexp(1.0 + noise(rng), expo(rng)));
    return HostTensor::from({3, n}, v);
}

}  // namespace

TEST_F(X86, ReduceFloatSumsMeetTheirBound) {
#ifdef NEOMEG_WITH_DNNL
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t t) {
                SCOPED_TRACE(testing::Message() << "Highway target " << hwy::TargetName(t));
                std::mt19937 rng(11);
                for (Mode m : {Mode::SUM, Mode::MEAN, Mode::SUM_SQR}) {
                    for (const TensorShape& s : kShapes)
                        for (int32_t a = 0; a < int32_t(s.ndim); ++a) {
                            HostTensor x(s, dtype::Float32);
                            fill_uniform(x, -1, 1, rng);
                            expect_within_bound(*handle, m, a, x);
                        }
                    expect_within_bound(*handle, m, 1, one_way_rows());
                    for (size_t n :
                         {63, 64, 65, 255, 256, 257, 1023, 1024, 1025, 4099, 65537, 262147})
                        expect_within_bound(*handle, m, 1, cancelling_rows(n, rng));
                }
            });
    EXPECT_GE(ran, 1u);
#endif
}

// A float block that overflows where naive's double sum does not (a mean of values near float's
// limit), and infinities and NaN, as naive gives them; in rows read as one stream and in rows long
// enough to be read as four (kStreamsFrom), there in the later quarters too.
TEST_F(X86, ReduceFloatSumsKeepNaivesLimits) {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (size_t n : {size_t(1031), size_t(70001)}) {
        std::vector<double> v(5 * n, 1.0);
        for (size_t k = 0; k < n; ++k)
            v[k] = 3.0e38;   // row 0: a mean of 3e38 (every float block overflows)
        v[n + n / 2] = inf;  // row 1: inf
        v[2 * n + 7] = inf;
        v[2 * n + n - 131] = -inf;        // row 2: inf - inf
        v[3 * n + n - 1] = nan;           // row 3: NaN, in the tail
        v[4 * n + 3 * n / 4 + 3] = -nan;  // row 4: NaN, in a block
        for (Mode m : {Mode::SUM, Mode::MEAN, Mode::SUM_SQR}) {
            Checker<Reduce> c(handle.get());
            param::Reduce p;
            p.mode = m;
            p.axis = 1;
            c.set_param(p).set_epsilon(1e-6).set_values(0, v).execs({{5, n}});
        }
    }
}
