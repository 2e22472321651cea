// softmax_hwy.h's loops called directly, against the naive operators on the same (outer, len,
// inner) tensors along axis 1, at every Highway target: rows (inner 1), and columns (inner > 1)
// both as one call over the whole slice and split into kSoftmaxColumns units as the operator
// splits them over threads. Every length and column count around the vector widths (8 and 16
// lanes) and the column strips (one, two and four vectors), logits that take each of ExpSum's
// splits (all positive, all negative, mixed, a range past exp's), and special values.
#include <cmath>
#include <limits>

#include "neomeg/dnn/operators/norm.h"
#include "src/x86/softmax_hwy.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

struct Dims {
    size_t outer, len, inner;
};

param::Softmax axis1() {
    param::Softmax p;
    p.axis = 1;
    return p;
}

HostTensor tensor(const Dims& d, const std::vector<float>& v) {
    std::vector<double> values(v.begin(), v.end());
    return HostTensor::from({d.outer, d.len, d.inner}, values);
}

template <class Op>
std::vector<double> naive_of(std::vector<HostTensor> inputs) {
    auto naive = Handle::make_naive();
    auto op = naive->create_operator<Op>();
    op->param() = axis1();
    return run_op(*op, inputs)[0].values();
}

// The loops over the whole tensor: rows, or columns in one call per slice (`split`: in units of
// kSoftmaxColumns columns, each its own call, as the operator's threads may take them).
std::vector<float> forward(const Dims& d, const std::vector<float>& x, bool log, bool split) {
    std::vector<float> y(x.size());
    if (d.inner == 1) {
        const auto row = static_cast<ptrdiff_t>(d.len);
        x86::softmax_rows(x.data(), row, y.data(), row, 0, d.outer, d.len, log);
        return y;
    }
    const size_t step = split ? x86::kSoftmaxColumns : d.inner;
    for (size_t o = 0; o < d.outer; ++o)
        for (size_t cb = 0; cb < d.inner; cb += step) {
            size_t off = o * d.len * d.inner;
            x86::softmax_cols(x.data() + off, y.data() + off, d.len, d.inner, cb,
                              std::min(d.inner, cb + step), log);
        }
    return y;
}

std::vector<float> backward(const Dims& d, const std::vector<float>& y,
                            const std::vector<float>& dy, bool log, bool split) {
    std::vector<float> dx(y.size());
    if (d.inner == 1) {
        const auto row = static_cast<ptrdiff_t>(d.len);
        x86::softmax_grad_rows(y.data(), row, dy.data(), row, dx.data(), row, 0, d.outer, d.len,
                               log);
        return dx;
    }
    const size_t step = split ? x86::kSoftmaxColumns : d.inner;
    for (size_t o = 0; o < d.outer; ++o)
        for (size_t cb = 0; cb < d.inner; cb += step) {
            size_t off = o * d.len * d.inner;
            x86::softmax_grad_cols(y.data() + off, dy.data() + off, dx.data() + off, d.len, d.inner,
                                   cb, std::min(d.inner, cb + step), log);
        }
    return dx;
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double eps,
                 const char* what, const Dims& d) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(want[i])) {
            EXPECT_TRUE(std::isnan(got[i])) << what << " element " << i;
            continue;
        }
        if (std::isinf(want[i]) && got[i] == want[i])
            continue;
        ASSERT_LE(std::abs(got[i] - want[i]), eps * std::max(1.0, std::abs(want[i])))
                << what << " element " << i << " of (" << d.outer << ", " << d.len << ", "
                << d.inner << "): " << got[i] << " vs " << want[i];
    }
}

std::vector<float> uniform(size_t n, float lo, float hi, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (float& f : v)
        f = u(rng);
    return v;
}

void check(const Dims& d, const std::vector<float>& x, const std::vector<float>& dy) {
    for (bool log : {false, true}) {
        // The backward from the forward's output as naive computes it.
        std::vector<double> yd = log ? naive_of<LogSoftmaxForward>({tensor(d, x)})
                                     : naive_of<SoftmaxForward>({tensor(d, x)});
        std::vector<float> y(yd.begin(), yd.end());
        auto want = log ? naive_of<LogSoftmaxBackward>({tensor(d, y), tensor(d, dy)})
                        : naive_of<SoftmaxBackward>({tensor(d, y), tensor(d, dy)});
        for (bool split : {false, true}) {
            if (split && d.inner == 1)
                continue;
            expect_near(forward(d, x, log, split), yd, 1e-5, log ? "log fwd" : "fwd", d);
            expect_near(backward(d, y, dy, log, split), want, 1e-5, log ? "log bwd" : "bwd", d);
        }
    }
}

// Runs body at AVX-512, AVX2, the emulated 128-bit target and scalar (those the CPU has).
template <class F>
void at_every_target(F&& body) {
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR},
                                         [&](int64_t) { body(); });
    EXPECT_GE(ran, 1u);  // an ISA cap leaves fewer targets
}

}  // namespace

TEST_F(X86, SoftmaxLoopsMatchNaive) {
    std::vector<Dims> dims;
    for (size_t n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 100})
        dims.push_back({3, n, 1});
    // Columns: one vector and its partial last strip, two and four vectors side by side, their
    // remainders, long columns (the backward's four-vector strips past 256 rows).
    for (size_t inner : {2, 5, 8, 9, 15, 16, 17, 31, 33, 48, 63, 64, 65, 100, 257})
        dims.push_back({2, 7, inner});
    for (size_t len : {1, 2, 300})
        for (size_t inner : {15, 16, 17, 64, 65})
            dims.push_back({2, len, inner});
    dims.push_back({1, 1, 40});
    dims.push_back({1, 50000, 1});
    dims.push_back({1, 3000, 20});
    at_every_target([&] {
        std::mt19937 rng(7);
        for (const Dims& d : dims) {
            size_t n = d.outer * d.len * d.inner;
            // Mixed signs (ExpSum's min/max split), positive (|max| >= |x|), negative
            // (|x| >= |max|), a range past exp's float range (-87: lanes below it take std::exp,
            // the log's deep terms) and all equal.
            check(d, uniform(n, -5, 5, rng), uniform(n, -1, 1, rng));
            check(d, uniform(n, 0.5f, 9, rng), uniform(n, -1, 1, rng));
            check(d, uniform(n, -40, -2, rng), uniform(n, -1, 1, rng));
            check(d, uniform(n, -100, 100, rng), uniform(n, -1, 1, rng));
            check(d, std::vector<float>(n, 3.5f), uniform(n, -1, 1, rng));
        }
    });
}

// -inf (exp gives 0), a line of -inf only (NaN, as naive), NaN and +inf (NaN throughout, as
// naive), the float range's ends: as rows and as columns, in the vector body of a strip and in
// its partial tail.
TEST_F(X86, SoftmaxLoopsSpecialValues) {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    at_every_target([&] {
        std::mt19937 rng(8);
        for (const Dims& d :
             {Dims{9, 11, 1}, Dims{1, 11, 9}, Dims{2, 11, 20}, Dims{2, 11, 17}, Dims{1, 11, 70}}) {
            // Element (line, k) of line `line` (an (outer, inner) pair) at position k.
            size_t lines = d.outer * d.inner;
            auto at = [&](size_t line, size_t k) {
                size_t o = line / d.inner, i = line % d.inner;
                return (o * d.len + k) * d.inner + i;
            };
            std::vector<float> x = uniform(d.outer * d.len * d.inner, -3, 3, rng);
            for (size_t line : {size_t(1), lines - 1}) {  // a strip's first lane, the last line
                for (size_t k = 0; k < d.len; ++k)
                    x[at(line % lines, k)] = k % 2 ? -inf : x[at(line % lines, k)];
            }
            for (size_t k = 0; k < d.len; ++k)
                x[at(2 % lines, k)] = -inf;
            x[at(3 % lines, 4)] = nan;
            x[at(4 % lines, 5)] = inf;
            x[at(5 % lines, 0)] = 3e38f;
            x[at(5 % lines, 1)] = -3e38f;
            x[at((lines - 2) % lines, 7)] = nan;  // in a partial strip where there is one
            check(d, x, uniform(x.size(), -1, 1, rng));
        }
    });
}
