// DeformablePSROIPooling and its gradient (naive): MegEngine 1.13's documented outputs, an
// independent per-sample reference (MegDNN's geometry written out here, the bilinear value as
// each tap weighted by 1 - its distance), rois past every edge and outside, with and without
// offsets; the gradients against finite differences (src: the pooling is linear in it; trans:
// samples kept inside the image, where MegDNN's slope is the derivative) and the adjoint
// identity; strided layouts, edge shapes and bad input.
#include <cmath>

#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/vision.h"
#include "neomeg/dnn/param_base.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Param = param::DeformablePSROIPooling;

Param psroi_param(bool no_trans, uint32_t part, uint32_t ph, uint32_t pw, uint32_t spp, float scale,
                  float trans_std) {
    Param p;
    p.no_trans = no_trans;
    p.part_size = part;
    p.pooled_h = ph;
    p.pooled_w = pw;
    p.sample_per_part = spp;
    p.spatial_scale = scale;
    p.trans_std = trans_std;
    return p;
}

std::vector<HostTensor> pool(const HostTensor& x, const HostTensor& rois, const HostTensor& trans,
                             const Param& p) {
    auto h = Handle::make_naive();
    return run_op(*make_op<DeformablePSROIPooling>(h.get(), p), {x, rois, trans});
}

std::vector<HostTensor> pool_backward(const HostTensor& x, const HostTensor& rois,
                                      const HostTensor& trans, const HostTensor& dy,
                                      const HostTensor& count, const Param& p) {
    auto h = Handle::make_naive();
    return run_op(*make_op<DeformablePSROIPoolingBackward>(h.get(), p),
                  {x, rois, trans, dy, count});
}

double bilinear(const HostTensor& x, size_t b, size_t c, double y, double xx) {
    double v = 0;
    long h = static_cast<long>(x.shape()[2]), w = static_cast<long>(x.shape()[3]);
    for (long r = static_cast<long>(std::floor(y)); r <= std::floor(y) + 1 && r < h; ++r)
        for (long q = static_cast<long>(std::floor(xx)); q <= std::floor(xx) + 1 && q < w; ++q) {
            double wy = 1 - std::fabs(y - r), wx = 1 - std::fabs(xx - q);
            if (wy > 0 && wx > 0)
                v += wy * wx * x.at({b, c, size_t(r), size_t(q)});
        }
    return v;
}

// dst and count from MegDNN's description, in float32 where it computes in float32.
std::pair<std::vector<double>, std::vector<double>> reference(const HostTensor& x,
                                                              const HostTensor& rois,
                                                              const HostTensor& trans,
                                                              const Param& p) {
    std::vector<double> out, count;
    long h = static_cast<long>(x.shape()[2]), w = static_cast<long>(x.shape()[3]);
    for (size_t k = 0; k < rois.shape()[0]; ++k) {
        auto b = static_cast<size_t>(static_cast<float>(rois.at({k, 0})));
        float s = p.spatial_scale;
        auto r = [&](size_t j) { return std::round(static_cast<float>(rois.at({k, j}))); };
        float x0 = r(1) * s - 0.5f, y0 = r(2) * s - 0.5f;
        float rw = std::max((r(3) + 1.f) * s - 0.5f - x0, 0.1f);
        float rh = std::max((r(4) + 1.f) * s - 0.5f - y0, 0.1f);
        float bw = rw / float(p.pooled_w), bh = rh / float(p.pooled_h);
        for (size_t c = 0; c < x.shape()[1]; ++c)
            for (size_t ph = 0; ph < p.pooled_h; ++ph)
                for (size_t pw = 0; pw < p.pooled_w; ++pw) {
                    float tx = 0, ty = 0;
                    if (!p.no_trans) {
                        auto i = size_t(std::floor(float(ph) / float(p.pooled_h) * p.part_size));
                        auto j = size_t(std::floor(float(pw) / float(p.pooled_w) * p.part_size));
                        tx = float(trans.at({k, 0, i, j})) * p.trans_std;
                        ty = float(trans.at({k, 1, i, j})) * p.trans_std;
                    }
                    float ws = float(pw) * bw + x0 + tx * rw, hs = float(ph) * bh + y0 + ty * rh;
                    double sum = 0;
                    int n = 0;
                    for (uint32_t iy = 0; iy < p.sample_per_part; ++iy)
                        for (uint32_t ix = 0; ix < p.sample_per_part; ++ix) {
                            float sx = ws + float(ix) * (bw / float(p.sample_per_part));
                            float sy = hs + float(iy) * (bh / float(p.sample_per_part));
                            if (sx < -0.5f || sx > w - 0.5 || sy < -0.5f || sy > h - 0.5)
                                continue;
                            sx = std::min(std::max(sx, 0.f), float(w - 1));
                            sy = std::min(std::max(sy, 0.f), float(h - 1));
                            sum += bilinear(x, b, c, sy, sx);
                            ++n;
                        }
                    out.push_back(n ? sum / n : 0.0);
                    count.push_back(n);
                }
    }
    return {out, count};
}

// Rois over (2, C, 9, 10) images: inside, past the top-left and bottom-right edges, a
// fractional batch column, small, entirely outside.
HostTensor test_rois() {
    return HostTensor::from({6, 5},
                            {0,   1.2, 0.5, 6.3, 5.1, 1, -2, -1, 3,   4,   1, 5.5, 4,  11, 9.5,
                             0.6, 2,   3,   7.5, 7.5, 1, 3,  2,  3.4, 2.6, 0, 14,  12, 16, 15});
}

}  // namespace

TEST(DeformablePSROIPooling, MegEngineDocumentedValues) {
    std::vector<double> ramp(16);
    for (size_t i = 0; i < 16; ++i)
        ramp[i] = static_cast<double>(i);
    auto x = HostTensor::from({1, 1, 4, 4}, ramp);
    auto rois = HostTensor::from({1, 5}, {0, 0, 0, 3, 3});
    HostTensor trans = HostTensor::from({1, 2, 2, 2}, std::vector<double>(8, 0.0));
    // F.deformable_psroi_pooling(x, rois, trans, True, 2, 2, 2, 2, 1.0) in MegEngine 1.13.
    auto out = pool(x, rois, trans, psroi_param(true, 2, 2, 2, 2, 1.f, 0.1f));
    EXPECT_EQ(out[0].values(), (std::vector<double>{1.25, 3, 8.25, 10}));
    EXPECT_EQ(out[1].values(), (std::vector<double>{4, 4, 4, 4}));
    // trans[0, 0] = 0.25 moves every sample 0.1 pixels right: [1.3, 3.1, 8.3, 10.1].
    trans = HostTensor::from({1, 2, 2, 2}, {0.25, 0.25, 0.25, 0.25, 0, 0, 0, 0});
    auto moved = pool(x, rois, trans, psroi_param(false, 2, 2, 2, 2, 1.f, 0.1f))[0].values();
    std::vector<double> want = {1.3, 3.1, 8.3, 10.1};
    for (size_t i = 0; i < 4; ++i)
        EXPECT_NEAR(moved[i], want[i], 1e-6);
}

TEST(DeformablePSROIPooling, MatchesPerSampleReference) {
    std::mt19937 rng(3);
    HostTensor x({2, 3, 9, 10}, dtype::Float32);
    fill_uniform(x, -1, 1, rng);
    auto rois = test_rois();
    for (const Param& p :
         {psroi_param(true, 3, 3, 3, 2, 1.f, 0.1f), psroi_param(false, 3, 3, 3, 2, 1.f, 0.1f),
          psroi_param(false, 2, 2, 2, 3, 0.5f, 0.3f), psroi_param(true, 1, 2, 3, 1, 0.7f, 0.1f),
          psroi_param(false, 4, 4, 4, 1, 1.3f, 1.0f)}) {
        HostTensor trans({6, 2, p.pooled_h, p.pooled_w}, dtype::Float32);
        fill_uniform(trans, -1, 1, rng);
        auto got = pool(x, rois, trans, p);
        auto [out, count] = reference(x, rois, trans, p);
        EXPECT_TRUE(tensors_near(got[0], HostTensor::from(got[0].shape(), out), 1e-6))
                << param::to_string(p);
        EXPECT_EQ(got[1].values(), count) << param::to_string(p);
        auto naive = Handle::make_naive();
        Checker<DeformablePSROIPooling> checker(naive.get());
        checker.set_param(p).set_values(1, rois.values()).set_noncontiguous(true);
        checker.execs({x.shape(), rois.shape(), trans.shape()});
    }
}

TEST(DeformablePSROIPooling, GradientsMatchFiniteDifferences) {
    std::mt19937 rng(11);
    HostTensor x({2, 3, 9, 10}, dtype::Float32);
    fill_uniform(x, -1, 1, rng);
    // Rois well inside, small offsets: every sample stays inside the image for trans +- step.
    auto rois = HostTensor::from({3, 5}, {0, 2, 1, 6, 5, 1, 3, 2, 7, 6, 0.6, 1, 2, 5, 7});
    for (const Param& p :
         {psroi_param(false, 3, 3, 3, 2, 1.f, 0.1f), psroi_param(false, 2, 2, 2, 3, 1.f, 0.3f),
          psroi_param(true, 2, 2, 3, 2, 0.9f, 0.1f)}) {
        HostTensor trans({3, 2, p.pooled_h, p.pooled_w}, dtype::Float32);
        fill_uniform(trans, -0.3, 0.3, rng);
        auto fwd = pool(x, rois, trans, p);
        HostTensor dy(fwd[0].shape(), dtype::Float32);
        fill_uniform(dy, -1, 1, rng);
        auto g = pool_backward(x, rois, trans, dy, fwd[1], p);
        auto f = [&](const std::vector<HostTensor>& in) { return pool(in[0], rois, in[1], p)[0]; };
        EXPECT_TRUE(tensors_near(g[0], numeric_grad(f, {x, trans}, 0, dy), 1e-3))
                << param::to_string(p);
        if (p.no_trans) {
            for (double v : g[1].values())
                EXPECT_EQ(v, 0);
        } else {
            // A small step: a sample crossing a pixel line changes the slope.
            EXPECT_TRUE(tensors_near(g[1], numeric_grad(f, {x, trans}, 1, dy, 1e-3), 2e-3))
                    << param::to_string(p);
        }
        // The pooling is linear in src: <dst, dy> = <src, grad>.
        double lhs = 0, rhs = 0;
        auto yv = fwd[0].values(), dv = dy.values(), xv = x.values(), gv = g[0].values();
        for (size_t i = 0; i < yv.size(); ++i)
            lhs += yv[i] * dv[i];
        for (size_t i = 0; i < xv.size(); ++i)
            rhs += xv[i] * gv[i];
        EXPECT_NEAR(lhs, rhs, 1e-5 * std::max(1.0, std::fabs(lhs)));
        auto naive = Handle::make_naive();
        Checker<DeformablePSROIPoolingBackward> checker(naive.get());
        checker.set_param(p)
                .set_values(1, rois.values())
                .set_values(4, fwd[1].values())
                .set_noncontiguous(true)
                .execs({x.shape(), rois.shape(), trans.shape(), dy.shape(), dy.shape()});
    }
}

TEST(DeformablePSROIPooling, EdgeShapes) {
    std::mt19937 rng(5);
    HostTensor x({2, 3, 4, 4}, dtype::Float32);
    fill_uniform(x, -1, 1, rng);
    HostTensor trans({1, 2, 1, 1}, dtype::Float32);
    auto p = psroi_param(true, 1, 2, 2, 2, 1.f, 0.1f);
    auto none = pool(x, HostTensor({0, 5}, dtype::Float32), trans, p);
    EXPECT_EQ(none[0].shape().to_string(), TensorShape({0, 3, 2, 2}).to_string());
    // A roi entirely outside: no sample taken, zeros and zero counts.
    auto far = pool(x, HostTensor::from({1, 5}, {1, 10, 10, 14, 12}), trans, p);
    for (double v : far[0].values())
        EXPECT_EQ(v, 0);
    for (double v : far[1].values())
        EXPECT_EQ(v, 0);
    // One pixel image, one bin, one sample: the pixel itself.
    auto px = HostTensor::from({1, 2, 1, 1}, {0.25, -3});
    auto one = pool(px, HostTensor::from({1, 5}, {0, 0, 0, 0, 0}), trans,
                    psroi_param(true, 1, 1, 1, 1, 1.f, 0.1f));
    EXPECT_EQ(one[0].values(), (std::vector<double>{0.25, -3}));
    // With no_trans, trans may be any 4-D tensor, its gradient zeros of its shape.
    HostTensor odd({5, 1, 2, 3}, dtype::Float32);
    auto fwd = pool(x, HostTensor::from({1, 5}, {0, 0, 0, 3, 3}), odd, p);
    auto g = pool_backward(x, HostTensor::from({1, 5}, {0, 0, 0, 3, 3}), odd, fwd[0], fwd[1], p);
    EXPECT_EQ(g[1].shape().to_string(), odd.shape().to_string());
}

TEST(DeformablePSROIPooling, BadInput) {
    auto h = Handle::make_naive();
    HostTensor x({2, 1, 4, 4}, dtype::Float32), trans({1, 2, 2, 2}, dtype::Float32);
    auto rois = HostTensor::from({1, 5}, {0, 0, 0, 2, 2});
    auto op = make_op<DeformablePSROIPooling>(h.get(), psroi_param(false, 2, 2, 2, 2, 1.f, 0.1f));
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {HostTensor({1, 4, 4}, dtype::Float32), rois, trans});
            },
            {"DeformablePSROIPooling", "src must be NCHW"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {x, HostTensor({1, 4}, dtype::Float32), trans});
            },
            {"rois must be (K, 5)"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {x, rois, HostTensor({1, 2, 2}, dtype::Float32)});
            },
            {"trans must be 4-D"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {x, rois, HostTensor({1, 2, 3, 2}, dtype::Float32)});
            },
            {"trans must be (at least K = 1, 2, 2, 2)"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {x, HostTensor::from({2, 5}, {0, 0, 0, 1, 1, 0, 0, 0, 1, 1}), trans});
            },
            {"trans must be (at least K = 2"});
    expect_error<DTypeError>(
            [&] {
                run_op(*op, {x, rois, HostTensor({1, 2, 2, 2}, dtype::Float16)});
            },
            {"must have src's dtype"});
    auto parts =
            make_op<DeformablePSROIPooling>(h.get(), psroi_param(false, 3, 2, 2, 2, 1.f, 0.1f));
    expect_error<ParamError>(
            [&] {
                run_op(*parts, {x, rois, trans});
            },
            {"part_size must equal pooled_h and pooled_w"});
    auto zero = make_op<DeformablePSROIPooling>(h.get(), psroi_param(true, 1, 2, 2, 0, 1.f, 0.1f));
    expect_error<ParamError>(
            [&] {
                run_op(*zero, {x, rois, trans});
            },
            {"sample_per_part must be positive"});
    expect_error<IndexError>(
            [&] {
                run_op(*op, {x, HostTensor::from({1, 5}, {2, 0, 0, 1, 1}), trans});
            },
            {"rois[0, 0] = 2 is not an image of the batch [0, 2)"});
    auto bwd = make_op<DeformablePSROIPoolingBackward>(h.get(),
                                                       psroi_param(false, 2, 2, 2, 2, 1.f, 0.1f));
    expect_error<ShapeError>(
            [&] {
                run_op(*bwd, {x, rois, trans, HostTensor({1, 1, 2, 3}, dtype::Float32),
                              HostTensor({1, 1, 2, 2}, dtype::Float32)});
            },
            {"diff must be (K, C, pooled_h, pooled_w)"});
}
