#include <algorithm>
#include <cmath>

#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "neomeg/dnn/param_base.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using IMode = param::Resize::InterpolationMode;

param::Resize resize_param(IMode mode, uint32_t oh, uint32_t ow, bool align = false) {
    param::Resize p;
    p.mode = mode;
    p.out_h = oh;
    p.out_w = ow;
    p.align_corners = align;
    return p;
}

HostTensor resize(const HostTensor& src, const param::Resize& p) {
    auto h = Handle::make_naive();
    auto op = make_op<Resize>(h.get(), p);
    auto outs = run_op(*op, {src});
    return std::move(outs[0]);
}

HostTensor resize_backward(const HostTensor& diff, const param::Resize& p, size_t ih, size_t iw) {
    auto h = Handle::make_naive();
    auto op = make_op<ResizeBackward>(h.get(), p);
    auto& s = diff.shape();
    auto outs = run_op(*op, {diff}, {{s[0], s[1], ih, iw}});
    return std::move(outs[0]);
}

// 1-D resampling of one line, as PyTorch's upsample kernels write it (source index per output,
// then a weighted pair); the test resizes rows, then columns, with it.
std::vector<double> resample_line(const std::vector<double>& x, size_t out,
                                  const param::Resize& p) {
    const size_t in = x.size();
    std::vector<double> y(out);
    for (size_t o = 0; o < out; ++o) {
        if (p.mode == IMode::NEAREST) {
            double scale = static_cast<double>(in) / static_cast<double>(out);
            y[o] = x[std::min(static_cast<size_t>(std::floor(o * scale + 1e-9)), in - 1)];
            continue;
        }
        if (p.mode == IMode::CUBIC) {
            // Keys' cubic convolution kernel (a = -0.75, OpenCV's) written piecewise, over the
            // four nearest samples with indices clamped into the line.
            auto kernel = [](double d) {
                const double a = -0.75;
                d = std::fabs(d);
                if (d <= 1)
                    return ((a + 2) * d - (a + 3)) * d * d + 1;
                if (d < 2)
                    return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
                return 0.0;
            };
            double real = (o + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5;
            auto base = static_cast<long>(std::floor(real));
            double acc = 0;
            for (long k = base - 1; k <= base + 2; ++k) {
                long i = std::clamp<long>(k, 0, static_cast<long>(in) - 1);
                acc += kernel(real - static_cast<double>(k)) * x[static_cast<size_t>(i)];
            }
            y[o] = acc;
            continue;
        }
        double real;
        if (p.align_corners)
            real = out > 1 ? static_cast<double>(o) * (in - 1.0) / (out - 1.0) : 0;
        else
            real = (o + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5;
        if (real < 0)
            real = 0;
        auto lo = static_cast<size_t>(real);
        size_t hi = lo + 1 < in ? lo + 1 : lo;
        double lambda = real - static_cast<double>(lo);
        y[o] = x[lo] * (1 - lambda) + x[hi] * lambda;
    }
    return y;
}

std::vector<double> reference_resize(const HostTensor& src, const param::Resize& p) {
    auto& s = src.shape();
    size_t n = s[0] * s[1], ih = s[2], iw = s[3], oh = p.out_h, ow = p.out_w;
    auto v = src.values();
    std::vector<double> out(n * oh * ow);
    for (size_t img = 0; img < n; ++img) {
        std::vector<std::vector<double>> rows(ih);
        for (size_t r = 0; r < ih; ++r)
            rows[r] = resample_line(std::vector<double>(v.begin() + (img * ih + r) * iw,
                                                        v.begin() + (img * ih + r + 1) * iw),
                                    ow, p);
        for (size_t c = 0; c < ow; ++c) {
            std::vector<double> col(ih);
            for (size_t r = 0; r < ih; ++r)
                col[r] = rows[r][c];
            auto rc = resample_line(col, oh, p);
            for (size_t r = 0; r < oh; ++r)
                out[(img * oh + r) * ow + c] = rc[r];
        }
    }
    return out;
}

const std::vector<param::Resize> kVariants(uint32_t oh, uint32_t ow) {
    return {resize_param(IMode::NEAREST, oh, ow), resize_param(IMode::LINEAR, oh, ow),
            resize_param(IMode::LINEAR, oh, ow, true), resize_param(IMode::CUBIC, oh, ow)};
}

}  // namespace

TEST(Resize, HandComputed) {
    auto x = HostTensor::from({1, 1, 2, 2}, {1, 2, 3, 4});
    // torch.nn.functional.interpolate(x, size=4, mode="bilinear", align_corners=False)
    EXPECT_EQ(resize(x, resize_param(IMode::LINEAR, 4, 4)).values(),
              (std::vector<double>{1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3,
                                   3.25, 3.75, 4}));
    EXPECT_EQ(resize(x, resize_param(IMode::LINEAR, 3, 3, true)).values(),
              (std::vector<double>{1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}));
    EXPECT_EQ(resize(x, resize_param(IMode::NEAREST, 4, 4)).values(),
              (std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
    auto line = HostTensor::from({1, 1, 1, 5}, {0, 1, 2, 3, 4});
    EXPECT_EQ(resize(line, resize_param(IMode::NEAREST, 1, 3)).values(),
              (std::vector<double>{0, 1, 3}));
    auto four = HostTensor::from({1, 1, 1, 4}, {0, 1, 2, 3});
    EXPECT_EQ(resize(four, resize_param(IMode::LINEAR, 1, 2)).values(),
              (std::vector<double>{0.5, 2.5}));
    EXPECT_EQ(resize(four, resize_param(IMode::LINEAR, 1, 1, true)).values(),
              (std::vector<double>{0}));
    EXPECT_EQ(resize(x, param::Resize{}).values(), (std::vector<double>{2.5}));
}

// MegEngine 1.13's F.vision.interpolate(x, mode="bicubic") of x = arange(20) ** 1.5 as 4 x 5,
// and its gradient of the sum (each input's total weight).
TEST(Resize, CubicMatchesMegEngine) {
    std::vector<double> v;
    for (int i = 0; i < 20; ++i)
        v.push_back(std::pow(i, 1.5));
    auto x = HostTensor::from({1, 1, 4, 5}, v);
    EXPECT_TRUE(tensors_near(resize(x, resize_param(IMode::CUBIC, 2, 3)),
                             HostTensor::from({1, 1, 2, 3}, {4.194571, 8.513504, 14.197937,
                                                             48.19233, 57.99185, 68.39207}),
                             1e-5));
    auto up = resize(x, resize_param(IMode::CUBIC, 6, 7)).values();
    EXPECT_NEAR(up[0], -1.0320415, 1e-5);
    EXPECT_NEAR(up[6], 6.5606775, 1e-5);
    EXPECT_NEAR(up[41], 85.97536, 1e-4);
    auto g = resize_backward(HostTensor::from({1, 1, 6, 7}, std::vector<double>(42, 1.0)),
                             resize_param(IMode::CUBIC, 6, 7), 4, 5)
                     .values();
    const std::vector<double> want{2.0597, 2.0878, 2.0835, 2.0878, 2.0597, 2.1079, 2.1367,
                                   2.1323, 2.1367, 2.1079, 2.1079, 2.1367, 2.1323, 2.1367,
                                   2.1079, 2.0597, 2.0878, 2.0835, 2.0878, 2.0597};
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(g[i], want[i], 1e-4) << i;
}

TEST(Resize, MatchesSeparableReferenceAndInvariants) {
    std::mt19937 rng(29);
    for (auto [ih, iw, oh, ow] : std::vector<std::array<uint32_t, 4>>{
                 {5, 7, 11, 3}, {1, 1, 3, 5}, {13, 4, 13, 4}, {8, 9, 1, 1}, {17, 2, 5, 19}})
        for (const auto& p : kVariants(oh, ow)) {
            HostTensor x({2, 3, ih, iw}, dtype::Float32);
            fill_uniform(x, -1, 1, rng);
            auto got = resize(x, p);
            ASSERT_TRUE(got.shape().eq_shape({2, 3, oh, ow}));
            EXPECT_TRUE(
                    tensors_near(got, HostTensor::from(got.shape(), reference_resize(x, p)), 1e-5))
                    << param::to_string(p) << " from " << ih << "x" << iw;
            if (ih == oh && iw == ow) {
                EXPECT_TRUE(tensors_near(got, x, 1e-6)) << param::to_string(p);
            }
            auto c =
                    resize(HostTensor::from({1, 1, ih, iw}, std::vector<double>(ih * iw, 0.75)), p);
            EXPECT_EQ(c.values(), std::vector<double>(oh * ow, 0.75)) << param::to_string(p);
        }
}

TEST(Resize, LowPrecisionDtypes) {
    std::mt19937 rng(31);
    for (DType dt : {dtype::Float16, dtype::BFloat16})
        for (const auto& p : kVariants(9, 6)) {
            HostTensor x32({2, 2, 4, 5}, dtype::Float32);
            fill_uniform(x32, -4, 4, rng);
            auto x = HostTensor::from(x32.shape(), x32.values(), dt);
            auto want = resize(HostTensor::from(x.shape(), x.values()), p);
            auto got = resize(x, p);
            EXPECT_TRUE(tensors_near(got, HostTensor::from(want.shape(), want.values(), dt),
                                     default_epsilon(dt)))
                    << dt.name() << " " << param::to_string(p);
        }
}

TEST(Resize, EdgeShapesAndStridedInputs) {
    auto h = Handle::make_naive();
    EXPECT_EQ(resize(HostTensor::from({0, 3, 2, 2}, {}), resize_param(IMode::LINEAR, 5, 5))
                      .shape()
                      .to_string(),
              "{0,3,5,5}");
    EXPECT_EQ(
            resize(HostTensor::from({1, 1, 2, 2}, {1, 2, 3, 4}), resize_param(IMode::LINEAR, 0, 3))
                    .shape()
                    .to_string(),
            "{1,1,0,3}");
    for (const auto& p : kVariants(7, 5)) {
        Checker<Resize> c(h.get());
        c.set_param(p).set_noncontiguous(true).execs({{2, 3, 4, 6}}).execs({{1, 1, 1, 1}});
        c.exec_layouts({TensorLayout({2, 3, 4, 6}, {0, 24, 6, 1}, dtype::Float32)});
        c.exec_layouts({TensorLayout({2, 3, 6, 4}, dtype::Float32).dimshuffle({0, 1, 3, 2})});
        c.exec_layouts({TensorLayout({1, 2, 3, 4}, {24, -12, 4, -1}, dtype::Float32)});
        c.set_noncontiguous(false).set_dtype(0, dtype::Float16).execs({{2, 16, 61, 37}});
    }
    std::vector<HostTensor> dst;
    dst.emplace_back(TensorLayout({1, 1, 2, 2}, {4, 4, 1, 2}, dtype::Float32));
    auto op = make_op<Resize>(h.get(), resize_param(IMode::NEAREST, 2, 2));
    exec_into(*op,
              {HostTensor::from({1, 1, 4, 4}, std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                                                  11, 12, 13, 14, 15})},
              dst);
    EXPECT_EQ(dst[0].values(), (std::vector<double>{0, 2, 8, 10}));
}

TEST(Resize, BadInputsAreClearErrors) {
    auto h = Handle::make_naive();
    auto op = make_op<Resize>(h.get(), resize_param(IMode::LINEAR, 4, 4));
    HostTensor x3({2, 3, 4}, dtype::Float32), xi({1, 1, 2, 2}, dtype::Int32),
            x({1, 1, 2, 2}, dtype::Float32), empty({1, 1, 0, 2}, dtype::Float32);
    expect_error<ShapeError>([&] { run_op(*op, {x3}); },
                             {"Resize(mode=LINEAR, out_h=4, out_w=4", "{2(12),3(4),4(1)}"});
    expect_error<DTypeError>([&] { run_op(*op, {xi}); }, {"Resize(", "int32"});
    expect_error<ParamError>([&] { run_op(*op, {empty}); }, {"Resize(", "{1(2),1(2),0(2),2(1)}"});
    op->param() = resize_param(IMode::NEAREST, 4, 4, true);
    expect_error<ParamError>([&] { run_op(*op, {x}); },
                             {"Resize(mode=NEAREST", "align_corners=true", "LINEAR"});
    op->param() = resize_param(IMode::CUBIC, 4, 4, true);
    expect_error<ParamError>([&] { run_op(*op, {x}); }, {"Resize(mode=CUBIC", "LINEAR"});
}

TEST(ResizeBackward, MatchesFiniteDifferencesOfForward) {
    std::mt19937 rng(37);
    for (auto [ih, iw, oh, ow] :
         std::vector<std::array<uint32_t, 4>>{{3, 4, 7, 5}, {6, 5, 2, 3}, {1, 3, 4, 1}})
        for (const auto& p : kVariants(oh, ow)) {
            HostTensor x({2, 1, ih, iw}, dtype::Float32);
            fill_uniform(x, -1, 1, rng);
            HostTensor dy(TensorShape{2, 1, oh, ow}, dtype::Float32);
            fill_uniform(dy, -1, 1, rng);
            auto num = numeric_grad(
                    [&](const std::vector<HostTensor>& in) { return resize(in[0], p); }, {x}, 0,
                    dy);
            auto got = resize_backward(dy, p, ih, iw);
            EXPECT_TRUE(tensors_near(got, num, 1e-3)) << param::to_string(p);
            // the weights of each output pixel sum to one, so the gradient's total is diff's
            double sg = 0, sd = 0;
            for (double g : got.values())
                sg += g;
            for (double d : dy.values())
                sd += d;
            EXPECT_NEAR(sg, sd, 1e-4) << param::to_string(p);
        }
}

TEST(ResizeBackward, StridedDiffAndLowPrecision) {
    auto h = Handle::make_naive();
    for (const auto& p : kVariants(5, 7)) {
        Checker<ResizeBackward> c(h.get());
        c.set_param(p).set_output_shapes({{2, 3, 4, 3}}).set_noncontiguous(true);
        c.execs({{2, 3, 5, 7}});
        c.exec_layouts({TensorLayout({2, 3, 5, 7}, {0, 0, 7, 1}, dtype::Float32)});
        c.exec_layouts({TensorLayout({2, 3, 7, 5}, dtype::Float32).dimshuffle({0, 1, 3, 2})});
        c.set_noncontiguous(false).set_dtype(0, dtype::BFloat16).execs({{2, 3, 5, 7}});
        c.set_output_shapes({{0, 3, 4, 3}}).execs({{0, 3, 5, 7}});
    }
}

TEST(ResizeBackward, HandComputedAndStridedGrad) {
    auto h = Handle::make_naive();
    // nearest 2 -> 4 copies each source pixel to a 2x2 block, so its gradient sums the block
    auto op = make_op<ResizeBackward>(h.get(), resize_param(IMode::NEAREST, 4, 4));
    std::vector<double> d(16);
    for (size_t i = 0; i < 16; ++i)
        d[i] = static_cast<double>(i);
    std::vector<HostTensor> grad;
    grad.emplace_back(TensorLayout({1, 1, 2, 2}, {8, 8, 1, 4}, dtype::Float32));
    exec_into(*op, {HostTensor::from({1, 1, 4, 4}, d)}, grad);
    EXPECT_EQ(grad[0].values(), (std::vector<double>{0 + 1 + 4 + 5, 2 + 3 + 6 + 7, 8 + 9 + 12 + 13,
                                                     10 + 11 + 14 + 15}));
    // linear 4 -> 2 without align_corners averages pairs: each source pixel gets half its pair's
    auto lin = resize_backward(HostTensor::from({1, 1, 1, 2}, {2, 6}),
                               resize_param(IMode::LINEAR, 1, 2), 1, 4);
    EXPECT_EQ(lin.values(), (std::vector<double>{1, 1, 3, 3}));
    // a larger case keeps the sum
    std::mt19937 rng(41);
    HostTensor dy({3, 5, 64, 48}, dtype::Float32);
    fill_uniform(dy, -1, 1, rng);
    auto g = resize_backward(dy, resize_param(IMode::LINEAR, 64, 48, true), 31, 97);
    double sg = 0, sd = 0;
    for (double x : g.values())
        sg += x;
    for (double x : dy.values())
        sd += x;
    EXPECT_NEAR(sg, sd, 1e-2);
}

TEST(ResizeBackward, LowPrecisionDtypesMatchFloat32) {
    std::mt19937 rng(43);
    for (const auto& p : kVariants(7, 3)) {
        HostTensor d32({2, 3, 7, 3}, dtype::Float32);
        fill_uniform(d32, -1, 1, rng);
        auto g32 = resize_backward(d32, p, 5, 8);
        for (DType dt : {dtype::Float16, dtype::BFloat16}) {
            auto g = resize_backward(HostTensor::from(d32.shape(), d32.values(), dt), p, 5, 8);
            auto ref = HostTensor::from(g32.shape(), g32.values(), dt);
            EXPECT_TRUE(tensors_near(g, ref, default_epsilon(dt)))
                    << dt.name() << " " << param::to_string(p);
        }
    }
}

TEST(ResizeBackward, BadInputsAreClearErrors) {
    auto h = Handle::make_naive();
    auto op = make_op<ResizeBackward>(h.get(), resize_param(IMode::LINEAR, 4, 4));
    HostTensor diff({1, 2, 4, 4}, dtype::Float32), wrong({1, 2, 3, 4}, dtype::Float32),
            ints({1, 2, 4, 4}, dtype::Int8);
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {diff}, {{2, 2, 3, 3}});
            },
            {"ResizeBackward(mode=LINEAR", "{1(32),2(16),4(4),4(1)}", "{2,2,3,3}"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {wrong}, {{1, 2, 3, 3}});
            },
            {"ResizeBackward(", "{1(24),2(12),3(4),4(1)}"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {diff}, {{1, 2, 3}});
            },
            {"ResizeBackward(", "{1,2,3}"});
    expect_error<DTypeError>(
            [&] {
                run_op(*op, {ints}, {{1, 2, 3, 3}});
            },
            {"ResizeBackward(", "int8"});
}
