// Remap and its gradients (naive): MegEngine's documented output, hand-computed border modes and
// nearest rounding, a per-pixel reference (OpenCV's iterative border folding, distance weights)
// for every border mode, finite differences for both gradients, strided layouts, edge shapes
// and bad input.
#include <cmath>

#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/vision.h"
#include "neomeg/dnn/param_base.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using BMode = param::Remap::BorderMode;
using IMode = param::Remap::InterpolationMode;

param::Remap remap_param(BMode mode, IMode imode = IMode::LINEAR, float scalar = 0) {
    param::Remap p;
    p.border_type = mode;
    p.imode = imode;
    p.scalar = scalar;
    return p;
}

HostTensor remap(const HostTensor& src, const HostTensor& map, const param::Remap& p) {
    auto h = Handle::make_naive();
    return std::move(run_op(*make_op<Remap>(h.get(), p), {src, map})[0]);
}

HostTensor remap_backward_data(const HostTensor& map, const HostTensor& diff,
                               const TensorShape& src, const param::Remap& p) {
    auto h = Handle::make_naive();
    return std::move(run_op(*make_op<RemapBackwardData>(h.get(), p), {map, diff}, {src})[0]);
}

HostTensor remap_backward_mat(const HostTensor& src, const HostTensor& map, const HostTensor& diff,
                              const param::Remap& p) {
    auto h = Handle::make_naive();
    return std::move(run_op(*make_op<RemapBackwardMat>(h.get(), p), {src, map, diff})[0]);
}

// OpenCV's borderInterpolate, folding one step at a time.
long fold(BMode mode, long p, long len) {
    if (p >= 0 && p < len)
        return p;
    if (mode == BMode::CONSTANT)
        return -1;
    if (mode == BMode::REPLICATE)
        return p < 0 ? 0 : len - 1;
    if (mode == BMode::WRAP) {
        while (p < 0)
            p += len;
        return p % len;
    }
    if (len == 1)
        return 0;
    long delta = mode == BMode::REFLECT_101 ? 1 : 0;
    while (p < 0 || p >= len)
        p = p < 0 ? -p - 1 + delta : 2 * len - 1 - p - delta;
    return p;
}

// `map` (N, OH, OW, 2) in double, so that finite differences can step it finely.
std::vector<double> reference_remap(const HostTensor& src, const std::vector<double>& map,
                                    const TensorShape& map_shape, const param::Remap& p) {
    auto& s = src.shape();
    long ih = static_cast<long>(s[2]), iw = static_cast<long>(s[3]);
    std::vector<double> out;
    auto tap = [&](size_t n, size_t c, long r, long q) {
        long fr = fold(p.border_type, r, ih), fq = fold(p.border_type, q, iw);
        return fr < 0 || fq < 0 ? p.scalar
                                : src.at({n, c, static_cast<size_t>(fr), static_cast<size_t>(fq)});
    };
    for (size_t n = 0; n < s[0]; ++n)
        for (size_t c = 0; c < s[1]; ++c)
            for (size_t h = 0; h < map_shape[1]; ++h)
                for (size_t w = 0; w < map_shape[2]; ++w) {
                    size_t at = ((n * map_shape[1] + h) * map_shape[2] + w) * 2;
                    double x = map[at], y = map[at + 1];
                    if (p.imode == IMode::NEAREST) {
                        out.push_back(tap(n, c, std::lrint(y), std::lrint(x)));
                        continue;
                    }
                    double v = 0;
                    for (long r = static_cast<long>(std::floor(y)); r <= std::floor(y) + 1; ++r)
                        for (long q = static_cast<long>(std::floor(x)); q <= std::floor(x) + 1; ++q)
                            v += (1 - std::fabs(y - r)) * (1 - std::fabs(x - q)) * tap(n, c, r, q);
                    out.push_back(v);
                }
    return out;
}

const BMode kModes[] = {BMode::REPLICATE, BMode::REFLECT, BMode::REFLECT_101, BMode::WRAP,
                        BMode::CONSTANT};

}  // namespace

TEST(Remap, HandComputed) {
    std::vector<double> ramp(16);
    for (size_t i = 0; i < 16; ++i)
        ramp[i] = static_cast<double>(i);
    auto x = HostTensor::from({1, 1, 4, 4}, ramp);
    // MegEngine's documented example.
    auto map = HostTensor::from({1, 2, 2, 2}, {1, 0, 0, 1, 0, 1, 0, 1});
    EXPECT_EQ(remap(x, map, remap_param(BMode::REPLICATE)).values(),
              (std::vector<double>{1, 4, 4, 4}));
    // Between four pixels: their mean; one pixel up-left of the image: each mode's neighbour.
    auto pts = HostTensor::from({1, 1, 2, 2}, {1.5, 1.5, -1, -1});
    EXPECT_EQ(remap(x, pts, remap_param(BMode::REPLICATE)).values(), (std::vector<double>{7.5, 0}));
    EXPECT_EQ(remap(x, pts, remap_param(BMode::REFLECT_101)).values(),
              (std::vector<double>{7.5, 5}));
    EXPECT_EQ(remap(x, pts, remap_param(BMode::WRAP)).values(), (std::vector<double>{7.5, 15}));
    EXPECT_EQ(remap(x, pts, remap_param(BMode::CONSTANT, IMode::LINEAR, 9)).values(),
              (std::vector<double>{7.5, 9}));
    // NEAREST rounds halves to even: (1.5, 1.5) reads pixel (2, 2), (2.5, 0.5) pixel (0, 2).
    auto half = HostTensor::from({1, 1, 2, 2}, {1.5, 1.5, 2.5, 0.5});
    EXPECT_EQ(remap(x, half, remap_param(BMode::REPLICATE, IMode::NEAREST)).values(),
              (std::vector<double>{10, 2}));
    // A point that is not finite: scalar in CONSTANT mode, NaN otherwise.
    auto bad = HostTensor::from({1, 1, 1, 2}, {NAN, 0});
    EXPECT_EQ(remap(x, bad, remap_param(BMode::CONSTANT, IMode::LINEAR, 3)).values(),
              (std::vector<double>{3}));
    EXPECT_TRUE(std::isnan(remap(x, bad, remap_param(BMode::WRAP)).values()[0]));
}

TEST(Remap, MatchesPerPixelReferenceEveryMode) {
    std::mt19937 rng(17);
    for (auto [ih, iw, oh, ow] : std::vector<std::array<uint32_t, 4>>{
                 {5, 7, 6, 4}, {1, 1, 3, 2}, {2, 9, 5, 5}, {8, 3, 1, 1}})
        for (BMode mode : kModes)
            for (IMode imode : {IMode::LINEAR, IMode::NEAREST}) {
                auto p = remap_param(mode, imode, 0.75f);
                HostTensor x({2, 3, ih, iw}, dtype::Float32);
                fill_uniform(x, -1, 1, rng);
                HostTensor map({2, oh, ow, 2}, dtype::Float32);
                fill_uniform(map, -2.5, 10.5, rng);
                auto got = remap(x, map, p);
                auto want = HostTensor::from(got.shape(),
                                             reference_remap(x, map.values(), map.shape(), p));
                EXPECT_TRUE(tensors_near(got, want, 1e-5)) << param::to_string(p);
                auto naive = Handle::make_naive();
                Checker<Remap> checker(naive.get());
                checker.set_param(p).set_values(1, map.values()).set_noncontiguous(true);
                checker.execs({{2, 3, ih, iw}, {2, oh, ow, 2}});
            }
}

TEST(Remap, GradientsMatchFiniteDifferences) {
    std::mt19937 rng(19);
    for (BMode mode : kModes) {
        auto p = remap_param(mode, IMode::LINEAR, -0.5f);
        HostTensor x({2, 3, 5, 6}, dtype::Float32);
        fill_uniform(x, -1, 1, rng);
        HostTensor map({2, 4, 3, 2}, dtype::Float32);
        fill_uniform(map, -2.5, 7.5, rng);
        HostTensor dy({2, 3, 4, 3}, dtype::Float32);
        fill_uniform(dy, -1, 1, rng);
        auto f = [&](const std::vector<HostTensor>& in) { return remap(in[0], map, p); };
        auto gx = remap_backward_data(map, dy, x.shape(), p);
        EXPECT_TRUE(tensors_near(gx, numeric_grad(f, {x}, 0, dy), 1e-3)) << param::to_string(p);
        // The map's gradient against central differences of the reference in double, by steps
        // too small to straddle a pixel row or column.
        auto gm = remap_backward_mat(x, map, dy, p);
        auto mv = map.values(), dv = dy.values();
        std::vector<double> num(mv.size());
        for (size_t k = 0; k < mv.size(); ++k) {
            const double eps = 1e-7;
            auto plus = mv, minus = mv;
            plus[k] += eps;
            minus[k] -= eps;
            auto a = reference_remap(x, plus, map.shape(), p);
            auto b = reference_remap(x, minus, map.shape(), p);
            for (size_t i = 0; i < a.size(); ++i)
                num[k] += dv[i] * (a[i] - b[i]) / (2 * eps);
        }
        EXPECT_TRUE(tensors_near(gm, HostTensor::from(map.shape(), num), 1e-4))
                << param::to_string(p);
        auto naive = Handle::make_naive();
        Checker<RemapBackwardMat> checker(naive.get());
        checker.set_param(p).set_values(1, mv).set_noncontiguous(true);
        checker.execs({{2, 3, 5, 6}, {2, 4, 3, 2}, {2, 3, 4, 3}});
        Checker<RemapBackwardData> data(naive.get());
        data.set_param(p).set_values(0, mv).set_output_shapes({x.shape()});
        data.set_noncontiguous(true).execs({{2, 4, 3, 2}, {2, 3, 4, 3}});
    }
    // NEAREST: the map's gradient is zero (piecewise constant), src's scatters to one pixel.
    auto p = remap_param(BMode::REFLECT, IMode::NEAREST);
    HostTensor x({1, 1, 3, 3}, dtype::Float32);
    auto map = HostTensor::from({1, 1, 2, 2}, {1.4, 0.6, -1.2, 2.7});
    auto dy = HostTensor::from({1, 1, 1, 2}, {2, 5});
    for (double v : remap_backward_mat(x, map, dy, p).values())
        EXPECT_EQ(v, 0);
    // (1.4, 0.6) rounds to pixel (1, 1); (-1.2, 2.7) to (3, -1), reflected to (2, 0).
    EXPECT_EQ(remap_backward_data(map, dy, x.shape(), p).values(),
              (std::vector<double>{0, 0, 0, 0, 2, 0, 5, 0, 0}));
}

TEST(Remap, EdgeShapesAndBadInput) {
    HostTensor x({2, 1, 3, 3}, dtype::Float32);
    auto p = remap_param(BMode::REPLICATE);
    EXPECT_EQ(remap(x, HostTensor({2, 0, 4, 2}, dtype::Float32), p).shape().to_string(),
              TensorShape({2, 1, 0, 4}).to_string());
    // An empty image is fine when nothing is sampled, an error otherwise.
    EXPECT_EQ(remap(HostTensor({2, 1, 0, 3}, dtype::Float32),
                    HostTensor({2, 0, 4, 2}, dtype::Float32), p)
                      .shape()
                      .to_string(),
              TensorShape({2, 1, 0, 4}).to_string());
    auto h = Handle::make_naive();
    auto op = make_op<Remap>(h.get(), p);
    expect_error<ParamError>(
            [&] {
                run_op(*op, {HostTensor({2, 1, 0, 3}, dtype::Float32),
                             HostTensor({2, 1, 1, 2}, dtype::Float32)});
            },
            {"Remap", "cannot sample an empty image"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {x, HostTensor({1, 2, 2, 2}, dtype::Float32)});
            },
            {"map_xy must be (N, OH, OW, 2) with the image's N = 2"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {x, HostTensor({2, 2, 2, 3}, dtype::Float32)});
            },
            {"map_xy must be (N, OH, OW, 2)"});
    expect_error<DTypeError>(
            [&] {
                run_op(*op, {x, HostTensor({2, 2, 2, 2}, dtype::Float16)});
            },
            {"map_xy must be float32"});
    expect_error<DTypeError>(
            [&] {
                run_op(*op, {HostTensor({2, 1, 3, 3}, dtype::Int32),
                             HostTensor({2, 2, 2, 2}, dtype::Float32)});
            },
            {"float only"});
    auto bwd = make_op<RemapBackwardMat>(h.get(), p);
    expect_error<ShapeError>(
            [&] {
                run_op(*bwd, {x, HostTensor({2, 2, 2, 2}, dtype::Float32),
                              HostTensor({2, 1, 2, 3}, dtype::Float32)});
            },
            {"diff must be (N, C, OH, OW) = (2, 1, 2, 2)"});
}
