// RegionRestrictedConvolutionForward and its gradients (naive): one region everywhere is the plain
// convolution, a per-tap reference over random regions (int32 and uint8 ids), finite differences
// and the adjoint identity for the gradients, strided layouts and bad input.
#include <algorithm>
#include <cmath>

#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/param_base.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::RegionRestrictedConvolution rr_param(std::vector<int32_t> stride,
                                            std::vector<int32_t> padding,
                                            std::vector<int32_t> dilation, uint32_t group) {
    param::RegionRestrictedConvolution p;
    p.stride = stride;
    p.padding = padding;
    p.dilation = dilation;
    p.group = group;
    return p;
}

HostTensor rr(const std::vector<HostTensor>& in, const param::RegionRestrictedConvolution& p) {
    auto h = Handle::make_naive();
    return std::move(run_op(*make_op<RegionRestrictedConvolutionForward>(h.get(), p), in)[0]);
}

HostTensor random(const TensorShape& s, std::mt19937& rng, DType dt = dtype::Float32) {
    HostTensor t(s, dt);
    fill_uniform(t, dt == dtype::Float32 ? -1 : 0, dt == dtype::Float32 ? 1 : 3, rng);
    return t;
}

// dst by definition: every tap inside src whose region ids match.
std::vector<double> reference(const HostTensor& x, const HostTensor& w, const HostTensor& rin,
                              const HostTensor& rout, const param::RegionRestrictedConvolution& p) {
    auto &xs = x.shape(), &ws = w.shape(), &os = rout.shape();
    size_t n = xs[0], ih = xs[2], iw = xs[3], oc = ws[0], icg = ws[1], oh = os[1], ow = os[2];
    size_t ocg = oc / p.group;
    std::vector<double> out;
    for (size_t b = 0; b < n; ++b)
        for (size_t o = 0; o < oc; ++o)
            for (size_t y = 0; y < oh; ++y)
                for (size_t z = 0; z < ow; ++z) {
                    double s = 0;
                    for (size_t i = 0; i < ws[2]; ++i)
                        for (size_t j = 0; j < ws[3]; ++j) {
                            long r = long(y) * p.stride[0] - p.padding[0] + long(i) * p.dilation[0];
                            long c = long(z) * p.stride[1] - p.padding[1] + long(j) * p.dilation[1];
                            if (r < 0 || c < 0 || r >= long(ih) || c >= long(iw) ||
                                rin.at({b, size_t(r), size_t(c)}) != rout.at({b, y, z}))
                                continue;
                            for (size_t k = 0; k < icg; ++k)
                                s += x.at({b, o / ocg * icg + k, size_t(r), size_t(c)}) *
                                     w.at({o, k, i, j});
                        }
                    out.push_back(s);
                }
    return out;
}

}  // namespace

TEST(RegionRestrictedConv, OneRegionIsConvolution) {
    std::mt19937 rng(11);
    auto p = rr_param({2, 1}, {1, 2}, {1, 2}, 2);
    auto x = random({2, 4, 7, 6}, rng), w = random({6, 2, 3, 3}, rng);
    param::Convolution cp;
    cp.stride = p.stride;
    cp.padding = p.padding;
    cp.dilation = p.dilation;
    cp.group = p.group;
    auto h = Handle::make_naive();
    auto y = run_op(*make_op<ConvolutionForward>(h.get(), cp), {x, w})[0];
    TensorShape rout{2, y.shape()[2], y.shape()[3]};
    for (DType dt : {dtype::Int32, dtype::Uint8}) {
        HostTensor rin0({2, 7, 6}, dt), rout0(rout, dt);
        rin0.set_values(std::vector<double>(rin0.shape().total_nr_elems(), 2));
        rout0.set_values(std::vector<double>(rout.total_nr_elems(), 2));
        EXPECT_TRUE(tensors_near(rr({x, w, rin0, rout0}, p), y, 1e-5));
    }
}

TEST(RegionRestrictedConv, MatchesPerTapReference) {
    std::mt19937 rng(13);
    for (DType dt : {dtype::Int32, dtype::Uint8})
        for (auto p : {rr_param({1, 1}, {1, 1}, {1, 1}, 1), rr_param({2, 1}, {0, 2}, {2, 1}, 2),
                       rr_param({1, 2}, {2, 0}, {1, 1}, 4)}) {
            size_t oh = (6 + 2 * p.padding[0] - p.dilation[0] - 1) / p.stride[0] + 1;
            size_t ow = (7 + 2 * p.padding[1] - 2 * p.dilation[1] - 1) / p.stride[1] + 1;
            auto x = random({2, 4, 6, 7}, rng), w = random({4, 4 / p.group, 2, 3}, rng);
            auto rin = random({2, 6, 7}, rng, dt), rout = random({2, oh, ow}, rng, dt);
            auto got = rr({x, w, rin, rout}, p);
            auto want = HostTensor::from(got.shape(), reference(x, w, rin, rout, p));
            EXPECT_TRUE(tensors_near(got, want, 1e-5)) << param::to_string(p);
        }
}

TEST(RegionRestrictedConv, GradientsMatchFiniteDifferencesAndAdjoint) {
    std::mt19937 rng(17);
    auto p = rr_param({2, 1}, {1, 1}, {1, 2}, 2);
    auto x = random({2, 4, 5, 6}, rng), w = random({4, 2, 3, 2}, rng);
    auto rin = random({2, 5, 6}, rng, dtype::Int32);
    size_t oh = 3, ow = 6;  // (5 + 2 - 2 - 1) / 2 + 1, (6 + 2 - 2 - 1) / 1 + 1
    auto rout = random({2, oh, ow}, rng, dtype::Int32);
    auto dy = random({2, 4, oh, ow}, rng);
    auto f = [&](const std::vector<HostTensor>& in) { return rr({in[0], in[1], rin, rout}, p); };
    auto h = Handle::make_naive();
    auto gx = run_op(*make_op<RegionRestrictedConvolutionBackwardData>(h.get(), p),
                     {w, dy, rin, rout}, {x.shape()})[0];
    auto gw = run_op(*make_op<RegionRestrictedConvolutionBackwardFilter>(h.get(), p),
                     {x, dy, rin, rout}, {w.shape()})[0];
    EXPECT_TRUE(tensors_near(gx, numeric_grad(f, {x, w}, 0, dy), 1e-3));
    EXPECT_TRUE(tensors_near(gw, numeric_grad(f, {x, w}, 1, dy), 1e-3));
    // Bilinear: <dy, conv(x, w)> = <x, BD(w, dy)> = <w, BF(x, dy)>.
    auto dot = [](const HostTensor& a, const HostTensor& b) {
        double s = 0;
        auto av = a.values(), bv = b.values();
        for (size_t i = 0; i < av.size(); ++i)
            s += av[i] * bv[i];
        return s;
    };
    double lhs = dot(dy, f({x, w}));
    EXPECT_NEAR(dot(x, gx), lhs, 1e-4 * std::max(1.0, std::fabs(lhs)));
    EXPECT_NEAR(dot(w, gw), lhs, 1e-4 * std::max(1.0, std::fabs(lhs)));
}

TEST(RegionRestrictedConv, StridedLayouts) {
    auto naive = Handle::make_naive();
    auto p = rr_param({1, 1}, {1, 1}, {1, 1}, 2);
    Checker<RegionRestrictedConvolutionForward> f(naive.get());
    f.set_param(p).set_dtype(2, dtype::Int32).set_dtype(3, dtype::Int32);
    f.set_range(2, 0, 2).set_range(3, 0, 2).set_noncontiguous(true);
    f.execs({{2, 4, 5, 4}, {2, 2, 3, 3}, {2, 5, 4}, {2, 5, 4}});
    Checker<RegionRestrictedConvolutionBackwardData> d(naive.get());
    d.set_param(p).set_dtype(2, dtype::Uint8).set_dtype(3, dtype::Uint8);
    d.set_range(2, 0, 2).set_range(3, 0, 2).set_output_shapes({{2, 4, 5, 4}});
    d.set_noncontiguous(true).execs({{2, 2, 3, 3}, {2, 2, 5, 4}, {2, 5, 4}, {2, 5, 4}});
    Checker<RegionRestrictedConvolutionBackwardFilter> w(naive.get());
    w.set_param(p).set_dtype(2, dtype::Int32).set_dtype(3, dtype::Int32);
    w.set_range(2, 0, 2).set_range(3, 0, 2).set_output_shapes({{2, 2, 3, 3}});
    w.set_noncontiguous(true).execs({{2, 4, 5, 4}, {2, 2, 5, 4}, {2, 5, 4}, {2, 5, 4}});
}

TEST(RegionRestrictedConv, BadInput) {
    auto p = rr_param({1, 1}, {0, 0}, {1, 1}, 1);
    HostTensor x({1, 2, 4, 4}, dtype::Float32), w({3, 2, 3, 3}, dtype::Float32);
    HostTensor rin({1, 4, 4}, dtype::Int32), rout({1, 2, 2}, dtype::Int32);
    expect_error<DTypeError>(
            [&] {
                rr({x, w, HostTensor({1, 4, 4}, dtype::Float32), rout}, p);
            },
            {"RegionRestrictedConvolutionForward",
             "rin and rout must both be int32 or both uint8"});
    expect_error<DTypeError>(
            [&] {
                rr({x, w, rin, HostTensor({1, 2, 2}, dtype::Uint8)}, p);
            },
            {"rin and rout must both be int32 or both uint8"});
    expect_error<ShapeError>(
            [&] {
                rr({x, w, HostTensor({1, 4, 3}, dtype::Int32), rout}, p);
            },
            {"rin must be (N, IH, IW) = (1, 4, 4)"});
    expect_error<ShapeError>(
            [&] {
                rr({x, w, rin, HostTensor({1, 2, 3}, dtype::Int32)}, p);
            },
            {"rout must be (N, OH, OW) = (1, 2, 2)"});
    expect_error<ShapeError>(
            [&] {
                rr({x, HostTensor({3, 1, 3, 3}, dtype::Float32), rin, rout}, p);
            },
            {"input channels per group"});
    auto h = Handle::make_naive();
    expect_error<ShapeError>(
            [&] {
                run_op(*make_op<RegionRestrictedConvolutionBackwardData>(h.get(), p),
                       {w, HostTensor({1, 3, 2, 2}, dtype::Float32), rin, rout});
            },
            {"must be preset"});
}
