// softmax_hwy.h's loops called directly, against the naive operators on the same (outer, len,
// inner) tensors along axis 1, as the operator splits them. Rows (inner 1) and column blocks (inner
// > 1), every length and column count around the vector widths (8 and 16 lanes) and the column
// block, random logits, wide ranges and special values.
#include <cmath>
#include <limits>

#include "neomeg/dnn/operators/norm.h"
#include "src/x86/softmax_hwy.h"
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

// The loops over the whole tensor as the operator splits it: rows, or blocks of columns.
std::vector<float> forward(const Dims& d, const std::vector<float>& x, bool log) {
    std::vector<float> y(x.size());
    if (d.inner == 1) {
        x86::softmax_rows(x.data(), y.data(), 0, d.outer, d.len, log);
        return y;
    }
    for (size_t o = 0; o < d.outer; ++o)
        for (size_t cb = 0; cb < d.inner; cb += x86::kSoftmaxColumns) {
            size_t off = o * d.len * d.inner;
            x86::softmax_cols(x.data() + off, y.data() + off, d.len, d.inner, cb,
                              std::min(d.inner, cb + x86::kSoftmaxColumns), log);
        }
    return y;
}

std::vector<float> backward(const Dims& d, const std::vector<float>& y,
                            const std::vector<float>& dy, bool log) {
    std::vector<float> dx(y.size());
    if (d.inner == 1) {
        x86::softmax_grad_rows(y.data(), dy.data(), dx.data(), 0, d.outer, d.len, log);
        return dx;
    }
    for (size_t o = 0; o < d.outer; ++o)
        for (size_t cb = 0; cb < d.inner; cb += x86::kSoftmaxColumns) {
            size_t off = o * d.len * d.inner;
            x86::softmax_grad_cols(y.data() + off, dy.data() + off, dx.data() + off, d.len, d.inner,
                                   cb, std::min(d.inner, cb + x86::kSoftmaxColumns), log);
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
        auto want_y = log ? naive_of<LogSoftmaxForward>({tensor(d, x)})
                          : naive_of<SoftmaxForward>({tensor(d, x)});
        expect_near(forward(d, x, log), want_y, 1e-5, log ? "log fwd" : "fwd", d);
        // The backward from the forward's output as naive computes it.
        std::vector<double> yd = log ? naive_of<LogSoftmaxForward>({tensor(d, x)})
                                     : naive_of<SoftmaxForward>({tensor(d, x)});
        std::vector<float> y(yd.begin(), yd.end());
        auto want = log ? naive_of<LogSoftmaxBackward>({tensor(d, y), tensor(d, dy)})
                        : naive_of<SoftmaxBackward>({tensor(d, y), tensor(d, dy)});
        expect_near(backward(d, y, dy, log), want, 1e-5, log ? "log bwd" : "bwd", d);
    }
}

}  // namespace

TEST_F(X86, SoftmaxLoopsMatchNaive) {
    std::mt19937 rng(7);
    std::vector<Dims> dims;
    for (size_t n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 100})
        dims.push_back({3, n, 1});
    for (size_t inner : {2, 5, 8, 9, 16, 17, 255, 256, 257, 600})
        dims.push_back({2, 7, inner});
    dims.push_back({1, 1, 40});
    dims.push_back({1, 50000, 1});
    dims.push_back({1, 3000, 20});
    for (const Dims& d : dims) {
        size_t n = d.outer * d.len * d.inner;
        check(d, uniform(n, -5, 5, rng), uniform(n, -1, 1, rng));
        // A range past exp's float range (-87): lanes below it take std::exp.
        check(d, uniform(n, -100, 100, rng), uniform(n, -1, 1, rng));
        check(d, std::vector<float>(n, 3.5f), uniform(n, -1, 1, rng));  // all equal
    }
}

// -inf (exp gives 0), a line of -inf only (NaN, as naive), NaN and +inf (NaN throughout, as
// naive), the float range's ends: as rows and as columns.
TEST_F(X86, SoftmaxLoopsSpecialValues) {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::mt19937 rng(8);
    for (const Dims& d : {Dims{9, 11, 1}, Dims{1, 11, 9}, Dims{2, 11, 20}}) {
        // Element (line, k) of line `line` (an (outer, inner) pair) at position k.
        size_t lines = d.outer * d.inner;
        auto at = [&](size_t line, size_t k) {
            size_t o = line / d.inner, i = line % d.inner;
            return (o * d.len + k) * d.inner + i;
        };
        std::vector<float> x = uniform(d.outer * d.len * d.inner, -3, 3, rng);
        for (size_t k = 0; k < d.len; ++k) {
            x[at(1 % lines, k)] = k % 2 ? -inf : x[at(1 % lines, k)];
            x[at(2 % lines, k)] = -inf;
        }
        x[at(3 % lines, 4)] = nan;
        x[at(4 % lines, 5)] = inf;
        x[at(5 % lines, 0)] = 3e38f;
        x[at(5 % lines, 1)] = -3e38f;
        check(d, x, uniform(x.size(), -1, 1, rng));
    }
}
