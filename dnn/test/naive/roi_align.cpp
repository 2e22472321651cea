// ROIAlign and its gradient (naive): MegEngine's documented outputs, an independent per-sample
// reference (each tap weighted by its distance to the point) for both modes, fixed and dense
// sampling and rois reaching past the image, finite differences (AVERAGE) and the adjoint identity
// (MAX, linear once the argmax is fixed), strided layouts, edge shapes and bad input.
#include <cmath>

#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/vision.h"
#include "neomeg/dnn/param_base.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::ROIAlign::Mode;

param::ROIAlign align_param(Mode mode, uint32_t ph, uint32_t pw, uint32_t sh, uint32_t sw,
                            float offset = 0.5f, float scale = 1.f) {
    param::ROIAlign p;
    p.mode = mode;
    p.pooled_height = ph;
    p.pooled_width = pw;
    p.sample_height = sh;
    p.sample_width = sw;
    p.offset = offset;
    p.spatial_scale = scale;
    return p;
}

std::vector<HostTensor> align(const HostTensor& src, const HostTensor& rois,
                              const param::ROIAlign& p) {
    auto h = Handle::make_naive();
    return run_op(*make_op<ROIAlign>(h.get(), p), {src, rois});
}

HostTensor align_backward(const HostTensor& diff, const HostTensor& rois, const HostTensor& index,
                          const TensorShape& src, const param::ROIAlign& p) {
    auto h = Handle::make_naive();
    return std::move(run_op(*make_op<ROIAlignBackward>(h.get(), p), {diff, rois, index}, {src})[0]);
}

// The image at (y, x): the four pixels around it weighted by 1 - distance along each axis, a
// pixel outside reading 0.
double reference_sample(const HostTensor& src, size_t b, size_t c, double y, double x) {
    long h = static_cast<long>(src.shape()[2]), w = static_cast<long>(src.shape()[3]);
    double v = 0;
    for (long r = static_cast<long>(std::floor(y)); r <= std::floor(y) + 1; ++r)
        for (long q = static_cast<long>(std::floor(x)); q <= std::floor(x) + 1; ++q)
            if (r >= 0 && r < h && q >= 0 && q < w)
                v += (1 - std::fabs(y - r)) * (1 - std::fabs(x - q)) *
                     src.at({b, c, static_cast<size_t>(r), static_cast<size_t>(q)});
    return v;
}

std::vector<double> reference_align(const HostTensor& src, const HostTensor& rois,
                                    const param::ROIAlign& p) {
    std::vector<double> out;
    size_t k = rois.shape()[0], channels = src.shape()[1];
    for (size_t n = 0; n < k; ++n) {
        auto b = static_cast<size_t>(rois.at({n, 0}));
        double s = p.spatial_scale;
        double x1 = rois.at({n, 1}) * s - p.offset, y1 = rois.at({n, 2}) * s - p.offset;
        double x2 = rois.at({n, 3}) * s - p.offset, y2 = rois.at({n, 4}) * s - p.offset;
        double bw = std::max(x2 - x1, 0.0) / p.pooled_width;
        double bh = std::max(y2 - y1, 0.0) / p.pooled_height;
        size_t sh = p.sample_height ? p.sample_height : std::max<size_t>(1, std::ceil(bh));
        size_t sw = p.sample_width ? p.sample_width : std::max<size_t>(1, std::ceil(bw));
        for (size_t c = 0; c < channels; ++c)
            for (size_t ph = 0; ph < p.pooled_height; ++ph)
                for (size_t pw = 0; pw < p.pooled_width; ++pw) {
                    std::vector<double> v;
                    for (size_t iy = 0; iy < sh; ++iy)
                        for (size_t ix = 0; ix < sw; ++ix)
                            v.push_back(reference_sample(src, b, c,
                                                         y1 + ph * bh + (iy + 0.5) * bh / sh,
                                                         x1 + pw * bw + (ix + 0.5) * bw / sw));
                    double sum = 0;
                    for (double e : v)
                        sum += e;
                    out.push_back(p.mode == Mode::MAX ? *std::max_element(v.begin(), v.end())
                                                      : sum / v.size());
                }
    }
    return out;
}

// Rois over a 7 x 6 image of batch 3: inside, past every edge, inverted (empty), entirely
// outside, and one with a fractional batch column (truncated).
HostTensor test_rois() {
    return HostTensor::from({6, 5}, {0, 1.2, 0.5, 4.3,  5.1, 2, -2, -1.5, 3,   8, 1, 5, 4, 1, 2, 1,
                                     9, 10,  12,  11.5, 2.7, 0, 0,  5.5,  6.5, 0, 3, 3, 3, 3});
}

}  // namespace

TEST(ROIAlign, MegEngineDocumentedValues) {
    std::vector<double> ramp(16);
    for (size_t i = 0; i < 16; ++i)
        ramp[i] = static_cast<double>(i);
    auto x = HostTensor::from({1, 1, 4, 4}, ramp);
    auto rois = HostTensor::from({2, 5}, {0, 0, 0, 2, 2, 0, 1, 1, 3, 4});
    // F.vision.roi_align(x, rois, (1, 2)) in MegEngine 1.13.
    auto avg = align(x, rois, align_param(Mode::AVERAGE, 1, 2, 2, 2));
    EXPECT_EQ(avg[0].values(), (std::vector<double>{1.875, 3, 9, 10}));
    EXPECT_EQ(avg[1].values(), (std::vector<double>{-1, -1, -1, -1}));
    // mode="max", sample_points=(1, 2), aligned=False: 5.5 and 12.5, the right-hand samples.
    auto mx = align(x, rois, align_param(Mode::MAX, 1, 1, 1, 2, 0));
    EXPECT_EQ(mx[0].values(), (std::vector<double>{5.5, 12.5}));
    EXPECT_EQ(mx[1].values(), (std::vector<double>{1, 1}));
}

TEST(ROIAlign, MatchesPerSampleReference) {
    std::mt19937 rng(7);
    HostTensor x({3, 2, 7, 6}, dtype::Float32);
    fill_uniform(x, -1, 1, rng);
    auto rois = test_rois();
    for (Mode mode : {Mode::MAX, Mode::AVERAGE})
        for (auto [ph, pw, sh, sw] : std::vector<std::array<uint32_t, 4>>{
                     {2, 3, 2, 2}, {1, 1, 1, 3}, {3, 2, 0, 0}, {4, 4, 0, 2}})
            for (float offset : {0.f, 0.5f}) {
                auto p = align_param(mode, ph, pw, sh, sw, offset, 0.75f);
                auto got = align(x, rois, p);
                auto want = HostTensor::from(got[0].shape(), reference_align(x, rois, p));
                EXPECT_TRUE(tensors_near(got[0], want, 1e-6)) << param::to_string(p);
                auto naive = Handle::make_naive();
                Checker<ROIAlign> checker(naive.get());
                checker.set_param(p).set_values(1, rois.values()).set_noncontiguous(true);
                checker.execs({{3, 2, 7, 6}, {6, 5}});
            }
}

TEST(ROIAlign, GradientMatchesFiniteDifferencesAndAdjoint) {
    std::mt19937 rng(11);
    HostTensor x({3, 2, 7, 6}, dtype::Float32);
    fill_uniform(x, -1, 1, rng);
    auto rois = test_rois();
    for (uint32_t s : {2u, 0u}) {
        auto p = align_param(Mode::AVERAGE, 2, 3, s, s, 0.5f, 0.75f);
        HostTensor dy({6, 2, 2, 3}, dtype::Float32);
        fill_uniform(dy, -1, 1, rng);
        auto fwd = align(x, rois, p);
        auto g = align_backward(dy, rois, fwd[1], x.shape(), p);
        auto f = [&](const std::vector<HostTensor>& in) { return align(in[0], rois, p)[0]; };
        EXPECT_TRUE(tensors_near(g, numeric_grad(f, {x}, 0, dy), 1e-3)) << param::to_string(p);
    }
    // MAX picks one sample per bin; with that choice fixed the pooling is linear in src, and its
    // gradient is the adjoint: <align(x), dy> = <x, grad>.
    auto p = align_param(Mode::MAX, 2, 3, 2, 3, 0.5f, 0.75f);
    HostTensor dy({6, 2, 2, 3}, dtype::Float32);
    fill_uniform(dy, -1, 1, rng);
    auto fwd = align(x, rois, p);
    auto g = align_backward(dy, rois, fwd[1], x.shape(), p).values();
    auto yv = fwd[0].values(), dv = dy.values(), xv = x.values();
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < yv.size(); ++i)
        lhs += yv[i] * dv[i];
    for (size_t i = 0; i < xv.size(); ++i)
        rhs += xv[i] * g[i];
    EXPECT_NEAR(lhs, rhs, 1e-5 * std::max(1.0, std::fabs(lhs)));
    // Strided diff, index and grad.
    auto naive = Handle::make_naive();
    Checker<ROIAlignBackward> checker(naive.get());
    checker.set_param(p)
            .set_values(1, rois.values())
            .set_values(2, fwd[1].values())
            .set_dtype(2, dtype::Int32)
            .set_output_shapes({x.shape()})
            .set_noncontiguous(true)
            .execs({{6, 2, 2, 3}, {6, 5}, {6, 2, 2, 3}});
}

TEST(ROIAlign, EdgeShapes) {
    HostTensor x({2, 3, 4, 4}, dtype::Float32);
    std::mt19937 rng(3);
    fill_uniform(x, -1, 1, rng);
    auto p = align_param(Mode::AVERAGE, 2, 2, 2, 2);
    auto none = align(x, HostTensor({0, 5}, dtype::Float32), p);
    EXPECT_EQ(none[0].shape().to_string(), TensorShape({0, 3, 2, 2}).to_string());
    // A roi entirely outside the image (past the last pixel's fade) reads zeros.
    auto far = align(x, HostTensor::from({1, 5}, {1, 10, 10, 14, 12}), p);
    for (double v : far[0].values())
        EXPECT_EQ(v, 0);
    // One output pixel, one sample at the roi's centre: the bilinear value there.
    auto one = align(x, HostTensor::from({1, 5}, {1, 1, 1, 2, 3}),
                     align_param(Mode::MAX, 1, 1, 1, 1, 0));
    EXPECT_NEAR(one[0].values()[0], reference_sample(x, 1, 0, 2, 1.5), 1e-6);
    // Empty rois scatter nothing.
    auto g = align_backward(HostTensor({0, 3, 2, 2}, dtype::Float32),
                            HostTensor({0, 5}, dtype::Float32),
                            HostTensor({0, 3, 2, 2}, dtype::Int32), x.shape(), p);
    for (double v : g.values())
        EXPECT_EQ(v, 0);
}

TEST(ROIAlign, BadInput) {
    auto h = Handle::make_naive();
    auto op = make_op<ROIAlign>(h.get(), align_param(Mode::MAX, 2, 2, 2, 2));
    HostTensor x({2, 1, 4, 4}, dtype::Float32);
    auto rois = HostTensor::from({1, 5}, {0, 0, 0, 2, 2});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {HostTensor({1, 4, 4}, dtype::Float32), rois});
            },
            {"ROIAlign", "src must be NCHW"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {x, HostTensor({1, 4}, dtype::Float32)});
            },
            {"rois must be (K, 5)"});
    expect_error<DTypeError>(
            [&] {
                run_op(*op, {x, HostTensor::from({1, 5}, {0, 0, 0, 1, 1}, dtype::Int32)});
            },
            {"rois must be a float tensor"});
    expect_error<DTypeError>(
            [&] {
                run_op(*op, {HostTensor({2, 1, 4, 4}, dtype::Int32), rois});
            },
            {"float only"});
    expect_error<IndexError>(
            [&] {
                run_op(*op, {x, HostTensor::from({2, 5}, {0, 0, 0, 1, 1, 2, 0, 0, 1, 1})});
            },
            {"rois[1, 0] = 2 is not an image of the batch [0, 2)"});
    expect_error<IndexError>(
            [&] {
                run_op(*op, {x, HostTensor::from({1, 5}, {-1, 0, 0, 1, 1})});
            },
            {"rois[0, 0] = -1 is not an image"});
    expect_error<IndexError>(
            [&] {
                run_op(*op, {x, HostTensor::from({1, 5}, {NAN, 0, 0, 1, 1})});
            },
            {"rois[0, 0] = nan is not an image"});
    auto p = align_param(Mode::MAX, 2, 2, 2, 2);
    auto bwd = make_op<ROIAlignBackward>(h.get(), p);
    expect_error<IndexError>(
            [&] {
                run_op(*bwd,
                       {HostTensor({1, 1, 2, 2}, dtype::Float32), rois,
                        HostTensor::from({1, 1, 2, 2}, {0, 1, 4, 2}, dtype::Int32)},
                       {x.shape()});
            },
            {"index 4 is not a sample of roi 0's 2x2 grid"});
    expect_error<ShapeError>(
            [&] {
                run_op(*bwd,
                       {HostTensor({1, 1, 2, 3}, dtype::Float32), rois,
                        HostTensor({1, 1, 2, 2}, dtype::Int32)},
                       {x.shape()});
            },
            {"diff must be (K, C, pooled_height, pooled_width) = (1, 1, 2, 2)"});
}
