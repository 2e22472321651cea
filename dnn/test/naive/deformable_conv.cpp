// DeformableConvForward and its gradients (naive): zero offsets with unit masks equal the plain
// convolution, integer offsets equal a convolution of the shifted input, a hand-computed
// half-pixel shift, the sampled range's edges, finite differences for every gradient, strided
// layouts, an empty batch and bad input.
#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/convolution.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

struct Geo {
    std::vector<int32_t> stride{1, 1}, padding{0, 0}, dilation{1, 1};
    uint32_t group = 1;
};

param::DeformableConv deform_param(const Geo& g) {
    param::DeformableConv p;
    p.stride = g.stride;
    p.padding = g.padding;
    p.dilation = g.dilation;
    p.group = g.group;
    return p;
}

param::Convolution conv_param(const Geo& g) {
    param::Convolution p;
    p.stride = g.stride;
    p.padding = g.padding;
    p.dilation = g.dilation;
    p.group = g.group;
    return p;
}

HostTensor deform(const std::vector<HostTensor>& in, const Geo& g) {
    auto h = Handle::make_naive();
    return std::move(run_op(*make_op<DeformableConvForward>(h.get(), deform_param(g)), in)[0]);
}

HostTensor conv(const HostTensor& x, const HostTensor& w, const Geo& g) {
    auto h = Handle::make_naive();
    return std::move(run_op(*make_op<ConvolutionForward>(h.get(), conv_param(g)), {x, w})[0]);
}

HostTensor random(const TensorShape& s, std::mt19937& rng, double lo = -1, double hi = 1) {
    HostTensor t(s, dtype::Float32);
    fill_uniform(t, lo, hi, rng);
    return t;
}

HostTensor constant(const TensorShape& s, double v) {
    return HostTensor::from(s, std::vector<double>(s.total_nr_elems(), v));
}

// Offsets of whole pixels in [-2, 2] plus fractions in [0.2, 0.8]: no sample near a kink of the
// bilinear interpolation, which finite differences would straddle.
HostTensor smooth_offsets(const TensorShape& s, std::mt19937& rng) {
    std::uniform_int_distribution<int> whole(-2, 2);
    std::uniform_real_distribution<double> frac(0.2, 0.8);
    std::vector<double> v(s.total_nr_elems());
    for (auto& x : v)
        x = whole(rng) + frac(rng);
    return HostTensor::from(s, v);
}

}  // namespace

TEST(DeformableConv, ZeroOffsetsUnitMaskIsConvolution) {
    std::mt19937 rng(3);
    Geo g{{2, 1}, {1, 2}, {1, 2}, 2};
    auto x = random({2, 4, 7, 8}, rng), w = random({6, 2, 3, 2}, rng);
    auto y = conv(x, w, g);
    size_t oh = y.shape()[2], ow = y.shape()[3];
    for (size_t dg : {1, 2, 4}) {
        auto got = deform(
                {x, w, constant({2, 2 * dg * 6, oh, ow}, 0), constant({2, dg * 6, oh, ow}, 1)}, g);
        EXPECT_TRUE(tensors_near(got, y, 1e-5)) << "dg " << dg;
    }
}

TEST(DeformableConv, IntegerOffsetsShiftTheInput) {
    std::mt19937 rng(5);
    Geo g;  // no padding: a tap in the padding would read the image once shifted
    auto x = random({1, 2, 6, 7}, rng), w = random({3, 2, 3, 3}, rng);
    // Every tap moved by (+1, -2) reads x[h + 1, w - 2]; zeros where that leaves x.
    std::vector<double> shifted(x.shape().total_nr_elems(), 0.0);
    for (size_t c = 0; c < 2; ++c)
        for (size_t r = 0; r + 1 < 6; ++r)
            for (size_t q = 2; q < 7; ++q)
                shifted[(c * 6 + r) * 7 + q] = x.at({0, c, r + 1, q - 2});
    std::vector<double> off(18 * 4 * 5);
    for (size_t ch = 0; ch < 18; ++ch)
        for (size_t i = 0; i < 20; ++i)
            off[ch * 20 + i] = ch % 2 == 0 ? 1 : -2;
    auto got = deform({x, w, HostTensor::from({1, 18, 4, 5}, off), constant({1, 9, 4, 5}, 1)}, g);
    EXPECT_TRUE(tensors_near(got, conv(HostTensor::from(x.shape(), shifted), w, g), 1e-5));
}

TEST(DeformableConv, HandComputedAndSampledRange) {
    std::vector<double> ramp(9);
    for (size_t i = 0; i < 9; ++i)
        ramp[i] = static_cast<double>(i);
    auto x = HostTensor::from({1, 1, 3, 3}, ramp);
    auto one = constant({1, 1, 1, 1}, 1);
    // Half a pixel right: the mean of two neighbours, half the last column at the edge.
    std::vector<double> off(18, 0.0);
    for (size_t i = 9; i < 18; ++i)
        off[i] = 0.5;
    EXPECT_EQ(deform({x, one, HostTensor::from({1, 2, 3, 3}, off), constant({1, 1, 3, 3}, 1)}, {})
                      .values(),
              (std::vector<double>{0.5, 1.5, 1, 3.5, 4.5, 2.5, 6.5, 7.5, 4}));
    // Rows h = -1 and h = H read 0; h = -0.5 and h = H - 0.5 half the edge row; the mask scales.
    auto ones = constant({1, 1, 2, 2}, 1);
    auto offh = HostTensor::from({1, 2, 2, 2}, {-1, -0.5, 1, 0.5, 0, 0, 0, 0});
    auto mask = HostTensor::from({1, 1, 2, 2}, {1, 2, 1, 3});
    EXPECT_EQ(deform({ones, one, offh, mask}, {}).values(), (std::vector<double>{0, 1, 0, 1.5}));
}

TEST(DeformableConv, GradientsMatchFiniteDifferences) {
    std::mt19937 rng(7);
    Geo g{{1, 2}, {1, 1}, {2, 1}, 2};
    auto x = random({2, 4, 6, 7}, rng), w = random({4, 2, 2, 3}, rng);
    auto y0 = conv(x, w, g);
    size_t oh = y0.shape()[2], ow = y0.shape()[3];
    auto offset = smooth_offsets({2, 2 * 2 * 6, oh, ow}, rng);
    auto mask = random({2, 2 * 6, oh, ow}, rng, 0, 1);
    auto dy = random(y0.shape(), rng);
    auto h = Handle::make_naive();
    auto f = [&](const std::vector<HostTensor>& in) { return deform(in, g); };
    auto data = run_op(*make_op<DeformableConvBackwardData>(h.get(), deform_param(g)),
                       {x, w, offset, mask, dy});
    ASSERT_EQ(data.size(), 3u);
    std::vector<HostTensor> in{x, w, offset, mask};
    EXPECT_TRUE(tensors_near(data[0], numeric_grad(f, in, 0, dy), 1e-3));
    EXPECT_TRUE(tensors_near(data[1], numeric_grad(f, in, 2, dy), 1e-3));
    EXPECT_TRUE(tensors_near(data[2], numeric_grad(f, in, 3, dy), 1e-3));
    auto filter = run_op(*make_op<DeformableConvBackwardFilter>(h.get(), deform_param(g)),
                         {x, offset, mask, dy}, {w.shape()})[0];
    EXPECT_TRUE(tensors_near(filter, numeric_grad(f, in, 1, dy), 1e-3));
}

TEST(DeformableConv, StridedLayouts) {
    auto naive = Handle::make_naive();
    Geo g{{1, 1}, {1, 0}, {1, 1}, 2};
    auto p = deform_param(g);
    // src (1, 4, 5, 4), filter (2, 2, 3, 3): output (1, 2, 5, 2); dg 2.
    Checker<DeformableConvForward> f(naive.get());
    f.set_param(p).set_range(2, -2, 2).set_noncontiguous(true);
    f.execs({{1, 4, 5, 4}, {2, 2, 3, 3}, {1, 36, 5, 2}, {1, 18, 5, 2}});
    Checker<DeformableConvBackwardData> d(naive.get());
    d.set_param(p).set_range(2, -2, 2).set_noncontiguous(true);
    d.execs({{1, 4, 5, 4}, {2, 2, 3, 3}, {1, 36, 5, 2}, {1, 18, 5, 2}, {1, 2, 5, 2}});
    Checker<DeformableConvBackwardFilter> w(naive.get());
    w.set_param(p).set_range(1, -2, 2).set_output_shapes({{2, 2, 3, 3}}).set_noncontiguous(true);
    w.execs({{1, 4, 5, 4}, {1, 36, 5, 2}, {1, 18, 5, 2}, {1, 2, 5, 2}});
}

TEST(DeformableConv, EmptyBatch) {
    auto y = deform(
            {HostTensor({0, 2, 4, 4}, dtype::Float32), HostTensor({3, 2, 3, 3}, dtype::Float32),
             HostTensor({0, 18, 2, 2}, dtype::Float32), HostTensor({0, 9, 2, 2}, dtype::Float32)},
            {});
    EXPECT_EQ(y.shape().to_string(), TensorShape({0, 3, 2, 2}).to_string());
    auto h = Handle::make_naive();
    auto w = run_op(
            *make_op<DeformableConvBackwardFilter>(h.get()),
            {HostTensor({0, 2, 4, 4}, dtype::Float32), HostTensor({0, 18, 2, 2}, dtype::Float32),
             HostTensor({0, 9, 2, 2}, dtype::Float32), HostTensor({0, 3, 2, 2}, dtype::Float32)},
            {{3, 2, 3, 3}})[0];
    for (double v : w.values())
        EXPECT_EQ(v, 0);
}

TEST(DeformableConv, BadInput) {
    auto f32 = [](const TensorShape& s) { return HostTensor(s, dtype::Float32); };
    auto x = f32({1, 4, 5, 5}), w = f32({2, 4, 3, 3});
    auto off = f32({1, 18, 3, 3}), mask = f32({1, 9, 3, 3});
    expect_error<ShapeError>(
            [&] {
                deform({f32({4, 5, 5}), w, off, mask}, {});
            },
            {"DeformableConvForward", "src must be NCHW"});
    expect_error<ShapeError>(
            [&] {
                deform({x, w, f32({1, 17, 3, 3}), mask}, {});
            },
            {"offset must have 2 * deformable_group * FH * FW channels"});
    expect_error<ShapeError>(
            [&] {
                deform({x, w, off, f32({1, 18, 3, 3})}, {});
            },
            {"mask must have deformable_group * FH * FW channels"});
    expect_error<ShapeError>(
            [&] {
                deform({x, w, f32({1, 18, 3, 2}), f32({1, 9, 3, 2})}, {});
            },
            {"offset and mask must be (N, C, OH, OW) = (1, C, 3, 3)"});
    expect_error<ShapeError>(
            [&] {
                deform({x, w, f32({1, 54, 3, 3}), f32({1, 27, 3, 3})}, {});
            },
            {"deformable_group 3 must divide the input channels 4"});
    expect_error<DTypeError>(
            [&] {
                deform({x, w, HostTensor({1, 18, 3, 3}, dtype::Float16), mask}, {});
            },
            {"offset and mask must have src's dtype"});
    expect_error<ParamError>(
            [&] {
                deform({x, w, off, mask}, Geo{{0, 1}, {0, 0}, {1, 1}, 1});
            },
            {"stride entries must be >= 1"});
    auto h = Handle::make_naive();
    expect_error<ShapeError>(
            [&] {
                run_op(*make_op<DeformableConvBackwardFilter>(h.get()),
                       {x, off, mask, f32({1, 2, 3, 3})});
            },
            {"must be preset"});
    expect_error<ShapeError>(
            [&] {
                run_op(*make_op<DeformableConvBackwardData>(h.get()),
                       {x, w, off, mask, f32({1, 2, 3, 4})});
            },
            {"diff must be (N, OC, OH, OW)"});
}
