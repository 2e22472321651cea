// WarpPerspective and its gradients (naive): hand-computed warps, an independent per-pixel
// reference (OpenCV's iterative border folding, weights from the four neighbours' distances) for
// every border mode with mat_idx, finite differences for both gradients, the adjoint identity,
// strided layouts, empty shapes and bad input.
#include <cmath>

#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/vision.h"
#include "neomeg/dnn/param_base.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using BMode = param::WarpPerspective::BorderMode;

param::WarpPerspective warp_param(BMode mode, uint32_t oh, uint32_t ow, float border = 0) {
    param::WarpPerspective p;
    p.bmode = mode;
    p.out_h = oh;
    p.out_w = ow;
    p.border_val = border;
    return p;
}

HostTensor idx_of(const std::vector<double>& v) {
    return HostTensor::from({v.size()}, v, dtype::Int32);
}

HostTensor warp(const HostTensor& src, const HostTensor& mat, const HostTensor& idx,
                const param::WarpPerspective& p) {
    auto h = Handle::make_naive();
    return std::move(run_op(*make_op<WarpPerspective>(h.get(), p), {src, mat, idx})[0]);
}

HostTensor warp_backward_data(const HostTensor& mat, const HostTensor& idx, const HostTensor& diff,
                              const TensorShape& src, const param::WarpPerspective& p) {
    auto h = Handle::make_naive();
    return std::move(
            run_op(*make_op<WarpPerspectiveBackwardData>(h.get(), p), {mat, idx, diff}, {src})[0]);
}

HostTensor warp_backward_mat(const HostTensor& src, const HostTensor& mat, const HostTensor& idx,
                             const HostTensor& diff, const param::WarpPerspective& p) {
    auto h = Handle::make_naive();
    return std::move(
            run_op(*make_op<WarpPerspectiveBackwardMat>(h.get(), p), {src, mat, idx, diff})[0]);
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

// `mats` holds the (N, 3, 3) matrices in row-major order, in double (the finite differences of
// the matrices' gradient step them by less than float32 resolves).
std::vector<double> reference_warp(const HostTensor& src, const std::vector<double>& mats,
                                   const std::vector<long>& idx, const param::WarpPerspective& p) {
    auto& s = src.shape();
    long c = static_cast<long>(s[1]), ih = static_cast<long>(s[2]), iw = static_cast<long>(s[3]);
    std::vector<double> out;
    for (size_t n = 0; n < idx.size(); ++n)
        for (long ch = 0; ch < c; ++ch)
            for (size_t oh = 0; oh < p.out_h; ++oh)
                for (size_t ow = 0; ow < p.out_w; ++ow) {
                    auto m = [&](size_t r, size_t k) { return mats[n * 9 + r * 3 + k]; };
                    double den = m(2, 0) * ow + m(2, 1) * oh + m(2, 2);
                    double x = (m(0, 0) * ow + m(0, 1) * oh + m(0, 2)) / den;
                    double y = (m(1, 0) * ow + m(1, 1) * oh + m(1, 2)) / den;
                    double v = 0;
                    for (long r = static_cast<long>(std::floor(y)); r <= std::floor(y) + 1; ++r)
                        for (long q = static_cast<long>(std::floor(x)); q <= std::floor(x) + 1;
                             ++q) {
                            double wgt = (1 - std::fabs(y - r)) * (1 - std::fabs(x - q));
                            long fr = fold(p.bmode, r, ih), fq = fold(p.bmode, q, iw);
                            double tap = fr < 0 || fq < 0 ? p.border_val
                                                          : src.at({static_cast<size_t>(idx[n]),
                                                                    static_cast<size_t>(ch),
                                                                    static_cast<size_t>(fr),
                                                                    static_cast<size_t>(fq)});
                            v += wgt * tap;
                        }
                    out.push_back(v);
                }
    return out;
}

// Random (n, 3, 3) matrices near a scaled rotation with a little perspective: the source points
// spread over and beyond an ih x iw image.
HostTensor random_mats(size_t n, std::mt19937& rng, double reach) {
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> v;
    for (size_t i = 0; i < n; ++i) {
        double a = u(rng), s = 1 + 0.3 * u(rng);
        std::vector<double> m = {s * std::cos(a), -s * std::sin(a), reach * u(rng),
                                 s * std::sin(a), s * std::cos(a),  reach * u(rng),
                                 0.02 * u(rng),   0.02 * u(rng),    1 + 0.1 * u(rng)};
        v.insert(v.end(), m.begin(), m.end());
    }
    return HostTensor::from({n, 3, 3}, v);
}

const BMode kModes[] = {BMode::REPLICATE, BMode::REFLECT, BMode::REFLECT_101, BMode::WRAP,
                        BMode::CONSTANT};

}  // namespace

TEST(WarpPerspective, HandComputed) {
    std::vector<double> ramp(16);
    for (size_t i = 0; i < 16; ++i)
        ramp[i] = static_cast<double>(i);
    auto x = HostTensor::from({1, 1, 4, 4}, ramp);
    auto shift = HostTensor::from({1, 3, 3}, {1, 0, 1, 0, 1, 1, 0, 0, 1});
    auto zero = idx_of({0});
    EXPECT_EQ(warp(x, shift, zero, warp_param(BMode::REPLICATE, 2, 2)).values(),
              (std::vector<double>{5, 6, 9, 10}));
    // Half a pixel right and down: the mean of four neighbours.
    auto half = HostTensor::from({1, 3, 3}, {1, 0, 0.5, 0, 1, 0.5, 0, 0, 1});
    EXPECT_EQ(warp(x, half, zero, warp_param(BMode::REPLICATE, 1, 1)).values(),
              (std::vector<double>{2.5}));
    // One pixel up-left of the image: each mode's left/top neighbour of pixel 0.
    auto back = HostTensor::from({1, 3, 3}, {1, 0, -1, 0, 1, -1, 0, 0, 1});
    EXPECT_EQ(warp(x, back, zero, warp_param(BMode::REPLICATE, 1, 2)).values(),
              (std::vector<double>{0, 0}));
    EXPECT_EQ(warp(x, back, zero, warp_param(BMode::REFLECT, 1, 2)).values(),
              (std::vector<double>{0, 0}));
    EXPECT_EQ(warp(x, back, zero, warp_param(BMode::REFLECT_101, 1, 2)).values(),
              (std::vector<double>{5, 4}));
    EXPECT_EQ(warp(x, back, zero, warp_param(BMode::WRAP, 1, 2)).values(),
              (std::vector<double>{15, 12}));
    EXPECT_EQ(warp(x, back, zero, warp_param(BMode::CONSTANT, 1, 2, 7)).values(),
              (std::vector<double>{7, 7}));
    // A zero denominator: border_val in CONSTANT mode, NaN otherwise.
    auto flat = HostTensor::from({1, 3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 0});
    EXPECT_EQ(warp(x, flat, zero, warp_param(BMode::CONSTANT, 1, 1, 3)).values(),
              (std::vector<double>{3}));
    EXPECT_TRUE(std::isnan(warp(x, flat, zero, warp_param(BMode::WRAP, 1, 1)).values()[0]));
}

TEST(WarpPerspective, MatchesPerPixelReferenceEveryBorderMode) {
    std::mt19937 rng(41);
    for (auto [ih, iw, oh, ow] : std::vector<std::array<uint32_t, 4>>{
                 {5, 7, 6, 4}, {1, 1, 3, 2}, {2, 9, 5, 5}, {8, 3, 1, 1}})
        for (BMode mode : kModes) {
            auto p = warp_param(mode, oh, ow, 0.75f);
            HostTensor x({3, 2, ih, iw}, dtype::Float32);
            fill_uniform(x, -1, 1, rng);
            auto mat = random_mats(4, rng, 6);
            std::vector<long> idx = {2, 0, 0, 1};
            auto got = warp(x, mat, idx_of({2, 0, 0, 1}), p);
            EXPECT_EQ(got.shape().to_string(), TensorShape({4, 2, oh, ow}).to_string());
            auto want = HostTensor::from(got.shape(), reference_warp(x, mat.values(), idx, p));
            EXPECT_TRUE(tensors_near(got, want, 1e-5)) << param::to_string(p);
            // Strided src, mat and output through the checker's padded layouts.
            auto naive = Handle::make_naive();
            Checker<WarpPerspective> checker(naive.get());
            checker.set_param(p)
                    .set_values(1, mat.values())
                    .set_values(2, {2, 0, 0, 1})
                    .set_dtype(2, dtype::Int32)
                    .set_noncontiguous(true)
                    .execs({{3, 2, ih, iw}, {4, 3, 3}, {4}});
        }
}

TEST(WarpPerspective, GradientsMatchFiniteDifferences) {
    std::mt19937 rng(43);
    for (BMode mode : kModes) {
        auto p = warp_param(mode, 4, 5, -0.5f);
        HostTensor x({2, 3, 6, 5}, dtype::Float32);
        fill_uniform(x, -1, 1, rng);
        auto mat = random_mats(3, rng, 3);
        auto idx = idx_of({1, 0, 1});
        HostTensor dy({3, 3, 4, 5}, dtype::Float32);
        fill_uniform(dy, -1, 1, rng);
        auto f = [&](const std::vector<HostTensor>& in) { return warp(in[0], in[1], idx, p); };
        auto gx = warp_backward_data(mat, idx, dy, x.shape(), p);
        EXPECT_TRUE(tensors_near(gx, numeric_grad(f, {x, mat}, 0, dy), 1e-3))
                << param::to_string(p);
        // The warp is linear in src: <W x, dy> = <x, W^T dy>.
        auto wx = warp(x, mat, idx, p).values(), xv = x.values(), dv = dy.values(),
             gv = gx.values();
        double lhs = 0, rhs = 0;
        for (size_t i = 0; i < wx.size(); ++i)
            lhs += wx[i] * dv[i];
        for (size_t i = 0; i < xv.size(); ++i)
            rhs += xv[i] * gv[i];
        if (mode != BMode::CONSTANT) {  // border_val adds a constant term
            EXPECT_NEAR(lhs, rhs, 1e-4 * std::max(1.0, std::fabs(lhs)));
        }
        // The matrices' gradient against central differences of the reference in double, by
        // steps small enough not to straddle the kinks where a source point crosses a pixel row
        // or column.
        auto gm = warp_backward_mat(x, mat, idx, dy, p);
        auto mv = mat.values();
        std::vector<double> num(mv.size());
        for (size_t k = 0; k < mv.size(); ++k) {
            const double eps = 1e-7;
            auto plus = mv, minus = mv;
            plus[k] += eps;
            minus[k] -= eps;
            auto a = reference_warp(x, plus, {1, 0, 1}, p);
            auto b = reference_warp(x, minus, {1, 0, 1}, p);
            for (size_t i = 0; i < a.size(); ++i)
                num[k] += dv[i] * (a[i] - b[i]) / (2 * eps);
        }
        EXPECT_TRUE(tensors_near(gm, HostTensor::from({3, 3, 3}, num), 1e-4))
                << param::to_string(p);
    }
}

TEST(WarpPerspective, EmptyShapes) {
    auto mat = HostTensor::from({1, 3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
    HostTensor x({1, 2, 3, 3}, dtype::Float32);
    EXPECT_EQ(warp(x, mat, idx_of({0}), warp_param(BMode::WRAP, 0, 4)).shape().to_string(),
              TensorShape({1, 2, 0, 4}).to_string());
    HostTensor none({0, 3, 3}, dtype::Float32);
    HostTensor no_idx({0}, dtype::Int32);
    EXPECT_EQ(warp(x, none, no_idx, warp_param(BMode::WRAP, 2, 2)).shape().to_string(),
              TensorShape({0, 2, 2, 2}).to_string());
    HostTensor diff({0, 2, 2, 2}, dtype::Float32);
    auto g = warp_backward_data(none, no_idx, diff, x.shape(), warp_param(BMode::WRAP, 2, 2));
    for (double v : g.values())
        EXPECT_EQ(v, 0);
}

TEST(WarpPerspective, BadInput) {
    auto h = Handle::make_naive();
    auto op = make_op<WarpPerspective>(h.get(), warp_param(BMode::REPLICATE, 2, 2));
    auto mat = HostTensor::from({1, 3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
    HostTensor x({1, 1, 3, 3}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {HostTensor({1, 3, 3}, dtype::Float32), mat, idx_of({0})});
            },
            {"WarpPerspective", "src must be NCHW"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {x, HostTensor({1, 2, 3}, dtype::Float32), idx_of({0})});
            },
            {"mat must be (N, 3, 3)"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {x, mat, idx_of({0, 0})});
            },
            {"mat_idx must be (N,) with mat's N"});
    expect_error<DTypeError>(
            [&] {
                run_op(*op, {x, mat, HostTensor::from({1}, {0}, dtype::Float32)});
            },
            {"mat_idx must be int32"});
    expect_error<DTypeError>(
            [&] {
                run_op(*op, {HostTensor({1, 1, 3, 3}, dtype::Int32), mat, idx_of({0})});
            },
            {"float only"});
    expect_error<IndexError>(
            [&] {
                run_op(*op, {x, mat, idx_of({1})});
            },
            {"index 1 is out of bounds for axis 0 with size 1"});
    expect_error<ParamError>(
            [&] {
                run_op(*op, {HostTensor({1, 1, 0, 3}, dtype::Float32), mat, idx_of({0})});
            },
            {"cannot sample an empty image"});
    auto bwd = make_op<WarpPerspectiveBackwardMat>(h.get(), warp_param(BMode::REPLICATE, 2, 2));
    expect_error<ShapeError>(
            [&] {
                run_op(*bwd, {x, mat, idx_of({0}), HostTensor({1, 1, 2, 3}, dtype::Float32)});
            },
            {"diff must be (N, C, out_h, out_w) = (1, 1, 2, 2)"});
}
