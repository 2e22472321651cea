// Correlation and its gradients (naive): MegEngine 1.13's documented outputs, an independent
// reference on zero-padded copies indexed as FlowNet's (window corner, not centre), the
// gradients against finite differences for both inputs in both modes and the adjoint identity
// (linear in each input for products), strided layouts, edge shapes (one output pixel, strides
// past the displacements, 1x1 images with padding) and bad input.
#include <cmath>

#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/vision.h"
#include "neomeg/dnn/param_base.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::Correlation corr_param(uint32_t k, uint32_t md, uint32_t s1, uint32_t s2, uint32_t pad,
                              bool mul) {
    param::Correlation p;
    p.kernel_size = k;
    p.max_displacement = md;
    p.stride1 = s1;
    p.stride2 = s2;
    p.pad_size = pad;
    p.is_multiply = mul;
    return p;
}

HostTensor corr(const HostTensor& a, const HostTensor& b, const param::Correlation& p) {
    auto h = Handle::make_naive();
    return std::move(run_op(*make_op<Correlation>(h.get(), p), {a, b})[0]);
}

template <class Op>
HostTensor corr_grad(const HostTensor& dy, const HostTensor& a, const HostTensor& b,
                     const param::Correlation& p) {
    auto h = Handle::make_naive();
    return std::move(run_op(*make_op<Op>(h.get(), p), {dy, a, b})[0]);
}

// FlowNet's formulation: pad both images by pad_size, then output (y, x) pairs the window whose
// top-left corner is (y, x) * stride1 + max_displacement with the window displaced by
// (p, o) * stride2, o and p in [-R, R].
std::vector<double> reference(const HostTensor& a, const HostTensor& b,
                              const param::Correlation& p) {
    auto s = a.shape();
    long n = s[0], c = s[1], h = s[2], w = s[3], pad = p.pad_size, k = p.kernel_size;
    long md = p.max_displacement, kr = (k - 1) / 2, border = md + kr;
    long ph = h + 2 * pad, pw = w + 2 * pad;
    long oh = static_cast<long>(std::ceil(double(ph - 2 * border) / p.stride1));
    long ow = static_cast<long>(std::ceil(double(pw - 2 * border) / p.stride1));
    long gr = md / p.stride2, gw = 2 * gr + 1;
    auto padded = [&](const HostTensor& t, long b_, long ch, long y, long x) {
        y -= pad;
        x -= pad;
        if (y < 0 || y >= h || x < 0 || x >= w)
            return 0.0;
        return t.at({size_t(b_), size_t(ch), size_t(y), size_t(x)});
    };
    std::vector<double> out;
    for (long b_ = 0; b_ < n; ++b_)
        for (long tc = 0; tc < gw * gw; ++tc)
            for (long i = 0; i < oh; ++i)
                for (long j = 0; j < ow; ++j) {
                    long x1 = j * p.stride1 + md, y1 = i * p.stride1 + md;
                    long x2 = x1 + (tc % gw - gr) * long(p.stride2);
                    long y2 = y1 + (tc / gw - gr) * long(p.stride2);
                    double sum = 0;
                    for (long hh = 0; hh < k; ++hh)
                        for (long ww = 0; ww < k; ++ww)
                            for (long ch = 0; ch < c; ++ch) {
                                double u = padded(a, b_, ch, y1 + hh, x1 + ww);
                                double v = padded(b, b_, ch, y2 + hh, x2 + ww);
                                sum += p.is_multiply ? u * v : std::fabs(u - v);
                            }
                    out.push_back(sum / double(k * k * c));
                }
    return out;
}

// Values away from every kink of |a - b|: data1 in +-[0.5, 1], data2 in +-[0.1, 0.3], so that
// |a - b|, |a| and |b| all stay above 0.1, far beyond the finite differences' step.
HostTensor away_from_kinks(const TensorShape& s, double lo, double hi, std::mt19937& rng) {
    HostTensor t(s, dtype::Float32);
    std::uniform_real_distribution<double> mag(lo, hi);
    std::bernoulli_distribution neg(0.5);
    std::vector<double> v(s.total_nr_elems());
    for (double& x : v)
        x = neg(rng) ? -mag(rng) : mag(rng);
    t.set_values(v);
    return t;
}

const std::vector<param::Correlation>& cases() {
    static const std::vector<param::Correlation> all = {
            corr_param(1, 1, 1, 1, 0, true),  corr_param(3, 2, 1, 1, 2, true),
            corr_param(3, 4, 2, 2, 3, false), corr_param(1, 2, 3, 1, 1, true),
            corr_param(3, 1, 1, 2, 1, false), corr_param(5, 0, 1, 1, 2, true),
            corr_param(3, 3, 2, 2, 3, true),
    };
    return all;
}

}  // namespace

TEST(Correlation, MegEngineDocumentedValues) {
    std::vector<double> ramp(16);
    for (size_t i = 0; i < 16; ++i)
        ramp[i] = static_cast<double>(i);
    auto a = HostTensor::from({1, 1, 4, 4}, ramp);
    auto ones = HostTensor::from({1, 1, 4, 4}, std::vector<double>(16, 1.0));
    // F.vision.correlation(a, b, max_displacement=1) in MegEngine 1.13: (1, 9, 2, 2), the
    // undisplaced channel 4 a's inner 2x2.
    auto out = corr(a, ones, corr_param(1, 1, 1, 1, 0, true));
    ASSERT_EQ(out.shape().to_string(), TensorShape({1, 9, 2, 2}).to_string());
    auto v = out.values();
    EXPECT_EQ(std::vector<double>(v.begin() + 16, v.begin() + 20),
              (std::vector<double>{5, 6, 9, 10}));
    auto twos = HostTensor::from({1, 1, 4, 4}, std::vector<double>(16, 2.0));
    auto d = corr(a, twos, corr_param(1, 1, 1, 1, 0, false)).values();
    EXPECT_EQ(std::vector<double>(d.begin(), d.begin() + 4), (std::vector<double>{3, 4, 7, 8}));
}

TEST(Correlation, MatchesFlowNetReference) {
    std::mt19937 rng(5);
    for (const auto& p : cases())
        for (TensorShape s : {TensorShape{2, 3, 7, 8}, TensorShape{1, 1, 9, 5}}) {
            HostTensor a(s, dtype::Float32), b(s, dtype::Float32);
            fill_uniform(a, -1, 1, rng);
            fill_uniform(b, -1, 1, rng);
            auto got = corr(a, b, p);
            auto want = HostTensor::from(got.shape(), reference(a, b, p));
            EXPECT_TRUE(tensors_near(got, want, 1e-6)) << param::to_string(p);
            auto naive = Handle::make_naive();
            Checker<Correlation> checker(naive.get());
            checker.set_param(p).set_noncontiguous(true).execs({s, s});
        }
}

TEST(Correlation, GradientsMatchFiniteDifferences) {
    std::mt19937 rng(9);
    for (const auto& p : cases()) {
        TensorShape s{2, 2, 6, 7};
        auto a = away_from_kinks(s, 0.5, 1.0, rng), b = away_from_kinks(s, 0.1, 0.3, rng);
        auto y = corr(a, b, p);
        HostTensor dy(y.shape(), dtype::Float32);
        fill_uniform(dy, -1, 1, rng);
        auto f = [&](const std::vector<HostTensor>& in) { return corr(in[0], in[1], p); };
        auto g1 = corr_grad<CorrelationBackwardData1>(dy, a, b, p);
        auto g2 = corr_grad<CorrelationBackwardData2>(dy, a, b, p);
        // Step 1e-2 stays within a kink-free stretch (|a - b| >= 0.2).
        EXPECT_TRUE(tensors_near(g1, numeric_grad(f, {a, b}, 0, dy), 1e-3)) << param::to_string(p);
        EXPECT_TRUE(tensors_near(g2, numeric_grad(f, {a, b}, 1, dy), 1e-3)) << param::to_string(p);
        auto naive = Handle::make_naive();
        for (bool first : {true, false}) {
            auto check = [&](auto checker) {
                checker.set_param(p).set_noncontiguous(true).execs({y.shape(), s, s});
            };
            if (first)
                check(Checker<CorrelationBackwardData1>(naive.get()));
            else
                check(Checker<CorrelationBackwardData2>(naive.get()));
        }
    }
}

// Products are linear in each input: <corr(a, b), dy> = <a, grad1> = <b, grad2>.
TEST(Correlation, GradientsAreAdjoint) {
    std::mt19937 rng(13);
    auto p = corr_param(3, 4, 1, 2, 3, true);
    TensorShape s{1, 3, 8, 9};
    HostTensor a(s, dtype::Float32), b(s, dtype::Float32);
    fill_uniform(a, -1, 1, rng);
    fill_uniform(b, -1, 1, rng);
    auto y = corr(a, b, p);
    HostTensor dy(y.shape(), dtype::Float32);
    fill_uniform(dy, -1, 1, rng);
    auto dot = [](const HostTensor& u, const HostTensor& v) {
        double s_ = 0;
        auto uv = u.values(), vv = v.values();
        for (size_t i = 0; i < uv.size(); ++i)
            s_ += uv[i] * vv[i];
        return s_;
    };
    double lhs = dot(y, dy);
    EXPECT_NEAR(lhs, dot(a, corr_grad<CorrelationBackwardData1>(dy, a, b, p)), 1e-5);
    EXPECT_NEAR(lhs, dot(b, corr_grad<CorrelationBackwardData2>(dy, a, b, p)), 1e-5);
}

TEST(Correlation, EdgeShapes) {
    std::mt19937 rng(17);
    // A 1x1 image padded into a 3x3 window: one output pixel, the displacements reading zeros.
    auto a = HostTensor::from({1, 2, 1, 1}, {0.5, -2}), b = HostTensor::from({1, 2, 1, 1}, {4, 3});
    auto y = corr(a, b, corr_param(3, 1, 1, 1, 2, true));
    ASSERT_EQ(y.shape().to_string(), TensorShape({1, 9, 1, 1}).to_string());
    auto v = y.values();
    for (size_t d = 0; d < 9; ++d)
        EXPECT_FLOAT_EQ(v[d], d == 4 ? (0.5 * 4 - 2 * 3) / 18.0 : 0.0) << d;
    // stride2 past max_displacement: one displacement, the plain windowed product.
    HostTensor x({1, 1, 5, 5}, dtype::Float32), z({1, 1, 5, 5}, dtype::Float32);
    fill_uniform(x, -1, 1, rng);
    fill_uniform(z, -1, 1, rng);
    auto one = corr(x, z, corr_param(1, 2, 1, 3, 0, true));
    ASSERT_EQ(one.shape().to_string(), TensorShape({1, 1, 1, 1}).to_string());
    EXPECT_FLOAT_EQ(one.values()[0], x.at({0, 0, 2, 2}) * z.at({0, 0, 2, 2}));
    // An empty batch.
    auto none = corr(HostTensor({0, 2, 5, 5}, dtype::Float32),
                     HostTensor({0, 2, 5, 5}, dtype::Float32), corr_param(1, 1, 1, 1, 0, true));
    EXPECT_EQ(none.shape().to_string(), TensorShape({0, 9, 3, 3}).to_string());
}

TEST(Correlation, BadInput) {
    auto h = Handle::make_naive();
    HostTensor x({1, 2, 5, 5}, dtype::Float32);
    auto op = make_op<Correlation>(h.get(), corr_param(1, 1, 1, 1, 0, true));
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {HostTensor({2, 5, 5}, dtype::Float32), x});
            },
            {"Correlation", "data1 must be NCHW"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {x, HostTensor({1, 2, 5, 6}, dtype::Float32)});
            },
            {"data2 must have data1's shape"});
    expect_error<DTypeError>(
            [&] {
                run_op(*op, {HostTensor({1, 2, 5, 5}, dtype::Int32),
                             HostTensor({1, 2, 5, 5}, dtype::Int32)});
            },
            {"float only"});
    expect_error<DTypeError>(
            [&] {
                run_op(*op, {x, HostTensor({1, 2, 5, 5}, dtype::Float16)});
            },
            {"must have data1's dtype"});
    auto even = make_op<Correlation>(h.get(), corr_param(2, 1, 1, 1, 0, true));
    expect_error<ParamError>([&] { run_op(*even, {x, x}); }, {"kernel_size must be odd, got 2"});
    auto zero = make_op<Correlation>(h.get(), corr_param(1, 1, 0, 1, 0, true));
    expect_error<ParamError>([&] { run_op(*zero, {x, x}); }, {"stride1 and stride2"});
    auto big = make_op<Correlation>(h.get(), corr_param(3, 2, 1, 1, 0, true));
    expect_error<ShapeError>([&] { run_op(*big, {x, x}); }, {"smaller than the window"});
    auto nhwc_param = corr_param(1, 1, 1, 1, 0, true);
    nhwc_param.format = param::Correlation::Format::NHWC;
    auto nhwc = make_op<Correlation>(h.get(), nhwc_param);
    expect_error<ParamError>([&] { run_op(*nhwc, {x, x}); }, {"only format NCHW"});
    auto bwd = make_op<CorrelationBackwardData1>(h.get(), corr_param(1, 1, 1, 1, 0, true));
    expect_error<ShapeError>(
            [&] {
                run_op(*bwd, {HostTensor({1, 9, 3, 4}, dtype::Float32), x, x});
            },
            {"diff must have the forward's shape {1,9,3,3}"});
}
