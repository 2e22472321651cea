// ROIPooling and its gradient (naive): MegEngine's documented outputs, a per-bin reference (each
// bin's pixels found by testing every pixel of the image against the bin's bounds), finite
// differences (AVERAGE) and the adjoint identity (MAX), strided layouts, edge shapes and bad
// input.
#include <cmath>

#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/vision.h"
#include "neomeg/dnn/param_base.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::ROIPooling::Mode;

param::ROIPooling pool_param(Mode mode, uint32_t ph, uint32_t pw, float scale = 1.f) {
    param::ROIPooling p;
    p.mode = mode;
    p.pooled_height = ph;
    p.pooled_width = pw;
    p.scale = scale;
    return p;
}

std::vector<HostTensor> pool(const HostTensor& src, const HostTensor& rois,
                             const param::ROIPooling& p) {
    auto h = Handle::make_naive();
    return run_op(*make_op<ROIPooling>(h.get(), p), {src, rois});
}

HostTensor pool_backward(const HostTensor& diff, const HostTensor& rois, const HostTensor& index,
                         const TensorShape& src, const param::ROIPooling& p) {
    auto h = Handle::make_naive();
    return std::move(
            run_op(*make_op<ROIPoolingBackward>(h.get(), p), {diff, rois, index}, {src})[0]);
}

// Pixel (y, x) belongs to bin (ph, pw) of a roi starting at (y0, x0) with extents (eh, ew) when
// floor(ph eh / PH) <= y - y0 < ceil((ph + 1) eh / PH), likewise in x.
std::vector<double> reference_pool(const HostTensor& src, const HostTensor& rois,
                                   const param::ROIPooling& p) {
    std::vector<double> out;
    long h = static_cast<long>(src.shape()[2]), w = static_cast<long>(src.shape()[3]);
    for (size_t n = 0; n < rois.shape()[0]; ++n) {
        auto b = static_cast<size_t>(rois.at({n, 0}));
        auto corner = [&](size_t j) { return std::lround(rois.at({n, j}) * p.scale); };
        long x0 = corner(1), y0 = corner(2);
        long ew = std::max(corner(3) - x0 + 1, 1L), eh = std::max(corner(4) - y0 + 1, 1L);
        for (size_t c = 0; c < src.shape()[1]; ++c)
            for (long ph = 0; ph < p.pooled_height; ++ph)
                for (long pw = 0; pw < p.pooled_width; ++pw) {
                    double best = -INFINITY, sum = 0;
                    long count = 0;
                    for (long y = 0; y < h; ++y)
                        for (long x = 0; x < w; ++x) {
                            double dy = y - y0, dx = x - x0;
                            bool in = std::floor(double(ph) * eh / p.pooled_height) <= dy &&
                                      dy < std::ceil(double(ph + 1) * eh / p.pooled_height) &&
                                      std::floor(double(pw) * ew / p.pooled_width) <= dx &&
                                      dx < std::ceil(double(pw + 1) * ew / p.pooled_width);
                            if (!in)
                                continue;
                            double v = src.at({b, c, size_t(y), size_t(x)});
                            best = std::max(best, v);
                            sum += v;
                            ++count;
                        }
                    out.push_back(count == 0 ? 0 : p.mode == Mode::MAX ? best : sum / count);
                }
    }
    return out;
}

// Rois over a 7 x 6 image of batch 3 (in units of 1 / scale = 2 pixels): inside, past every
// edge, inverted (one pixel), entirely outside, and a fractional batch column.
HostTensor test_rois() {
    return HostTensor::from({6, 5}, {0, 2,  1,  9,  10, 2,   -4, -3, 6,  16, 1, 10, 8, 2, 4,
                                     1, 18, 20, 24, 23, 2.7, 0,  0,  11, 13, 0, 6,  6, 6, 6});
}

}  // namespace

TEST(ROIPooling, MegEngineDocumentedValues) {
    std::vector<double> ramp(16);
    for (size_t i = 0; i < 16; ++i)
        ramp[i] = static_cast<double>(i);
    auto x = HostTensor::from({1, 1, 4, 4}, ramp);
    auto rois = HostTensor::from({2, 5}, {0, 0, 0, 2, 2, 0, 1, 1, 3, 4});
    // F.vision.roi_pooling(x, rois, (1, 2)) and (x, rois, 2, "average") in MegEngine 1.13.
    auto mx = pool(x, rois, pool_param(Mode::MAX, 1, 2));
    EXPECT_EQ(mx[0].values(), (std::vector<double>{9, 10, 14, 15}));
    EXPECT_EQ(mx[1].values(), (std::vector<double>{9, 10, 14, 15}));  // h * W + w of the max
    auto avg = pool(x, rois, pool_param(Mode::AVERAGE, 2, 2));
    EXPECT_EQ(avg[0].values(), (std::vector<double>{2.5, 3.5, 6.5, 7.5, 7.5, 8.5, 13.5, 14.5}));
}

TEST(ROIPooling, MatchesPerBinReference) {
    std::mt19937 rng(5);
    HostTensor x({3, 2, 7, 6}, dtype::Float32);
    fill_uniform(x, -1, 1, rng);
    auto rois = test_rois();
    for (Mode mode : {Mode::MAX, Mode::AVERAGE})
        for (auto [ph, pw] : std::vector<std::array<uint32_t, 2>>{{2, 3}, {1, 1}, {3, 2}, {7, 5}}) {
            auto p = pool_param(mode, ph, pw, 0.5f);
            auto got = pool(x, rois, p);
            auto want = HostTensor::from(got[0].shape(), reference_pool(x, rois, p));
            EXPECT_TRUE(tensors_near(got[0], want, 1e-6)) << param::to_string(p);
            auto naive = Handle::make_naive();
            Checker<ROIPooling> checker(naive.get());
            checker.set_param(p).set_values(1, rois.values()).set_noncontiguous(true);
            checker.execs({{3, 2, 7, 6}, {6, 5}});
        }
}

TEST(ROIPooling, GradientMatchesFiniteDifferencesAndAdjoint) {
    std::mt19937 rng(13);
    HostTensor x({3, 2, 7, 6}, dtype::Float32);
    fill_uniform(x, -1, 1, rng);
    auto rois = test_rois();
    HostTensor dy({6, 2, 3, 2}, dtype::Float32);
    fill_uniform(dy, -1, 1, rng);
    auto avg = pool_param(Mode::AVERAGE, 3, 2, 0.5f);
    auto g = pool_backward(dy, rois, pool(x, rois, avg)[1], x.shape(), avg);
    auto f = [&](const std::vector<HostTensor>& in) { return pool(in[0], rois, avg)[0]; };
    EXPECT_TRUE(tensors_near(g, numeric_grad(f, {x}, 0, dy), 1e-3));
    // MAX: linear in src once the argmax is fixed, so the gradient is the adjoint.
    auto mx = pool_param(Mode::MAX, 3, 2, 0.5f);
    auto fwd = pool(x, rois, mx);
    auto gv = pool_backward(dy, rois, fwd[1], x.shape(), mx).values();
    auto yv = fwd[0].values(), dv = dy.values(), xv = x.values();
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < yv.size(); ++i)
        lhs += yv[i] * dv[i];
    for (size_t i = 0; i < xv.size(); ++i)
        rhs += xv[i] * gv[i];
    EXPECT_NEAR(lhs, rhs, 1e-5 * std::max(1.0, std::fabs(lhs)));
    auto naive = Handle::make_naive();
    Checker<ROIPoolingBackward> checker(naive.get());
    checker.set_param(mx)
            .set_values(1, rois.values())
            .set_values(2, fwd[1].values())
            .set_dtype(2, dtype::Int32)
            .set_output_shapes({x.shape()})
            .set_noncontiguous(true)
            .execs({{6, 2, 3, 2}, {6, 5}, {6, 2, 3, 2}});
}

TEST(ROIPooling, EdgeShapes) {
    HostTensor x({2, 3, 4, 4}, dtype::Float32);
    std::mt19937 rng(3);
    fill_uniform(x, -1, 1, rng);
    auto p = pool_param(Mode::MAX, 2, 2);
    auto none = pool(x, HostTensor({0, 5}, dtype::Float32), p);
    EXPECT_EQ(none[0].shape().to_string(), TensorShape({0, 3, 2, 2}).to_string());
    // Entirely outside: empty bins, 0 and index -1; their gradient scatters nothing.
    auto far = pool(x, HostTensor::from({1, 5}, {1, 6, 6, 9, 9}), p);
    for (double v : far[0].values())
        EXPECT_EQ(v, 0);
    for (double v : far[1].values())
        EXPECT_EQ(v, -1);
    HostTensor dy({1, 3, 2, 2}, dtype::Float32);
    fill_uniform(dy, -1, 1, rng);
    auto g = pool_backward(dy, HostTensor::from({1, 5}, {1, 6, 6, 9, 9}), far[1], x.shape(), p);
    for (double v : g.values())
        EXPECT_EQ(v, 0);
    // A 1x1 output over the whole image: its maximum.
    auto one = pool(x, HostTensor::from({1, 5}, {0, 0, 0, 3, 3}), pool_param(Mode::MAX, 1, 1));
    for (size_t c = 0; c < 3; ++c) {
        double best = -INFINITY;
        for (size_t i = 0; i < 16; ++i)
            best = std::max(best, x.at({0, c, i / 4, i % 4}));
        EXPECT_EQ(one[0].values()[c], best);
    }
}

TEST(ROIPooling, BadInput) {
    auto h = Handle::make_naive();
    auto p = pool_param(Mode::MAX, 2, 2);
    auto op = make_op<ROIPooling>(h.get(), p);
    HostTensor x({2, 1, 4, 4}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {x, HostTensor({2, 5, 1}, dtype::Float32)});
            },
            {"ROIPooling", "rois must be (K, 5)"});
    expect_error<IndexError>(
            [&] {
                run_op(*op, {x, HostTensor::from({1, 5}, {3, 0, 0, 1, 1})});
            },
            {"rois[0, 0] = 3 is not an image of the batch [0, 2)"});
    auto bwd = make_op<ROIPoolingBackward>(h.get(), p);
    auto rois = HostTensor::from({1, 5}, {0, 0, 0, 3, 3});
    // Pixel 15 (3, 3) lies in bin (1, 1), not (0, 0).
    expect_error<IndexError>(
            [&] {
                run_op(*bwd,
                       {HostTensor({1, 1, 2, 2}, dtype::Float32), rois,
                        HostTensor::from({1, 1, 2, 2}, {15, 2, 8, 15}, dtype::Int32)},
                       {x.shape()});
            },
            {"index 15 is not a pixel of bin (0, 0) of roi 0"});
    expect_error<DTypeError>(
            [&] {
                run_op(*bwd,
                       {HostTensor({1, 1, 2, 2}, dtype::Float32), rois,
                        HostTensor({1, 1, 2, 2}, dtype::Float32)},
                       {x.shape()});
            },
            {"index", "must have dtype int32"});
}
