// GroupNormForward/Backward on the naive backend.
#include <cmath>

#include "naive/norm_test_util.h"
#include "neomeg/dnn/operators/norm.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::GroupNorm gn(bool affine, uint32_t group, float eps = 1e-5f) {
    param::GroupNorm p;
    p.affine = affine;
    p.group = group;
    p.eps = eps;
    return p;
}

std::vector<HostTensor> forward(const param::GroupNorm& p, const std::vector<HostTensor>& in) {
    auto op = make_op<GroupNormForward>(p);
    return run_op(*op, in);
}

// Explicit (n, c, s) loops with one pass of sums and sums of squares per group.
HostTensor reference(const param::GroupNorm& p, const std::vector<HostTensor>& in) {
    const TensorShape& sh = in[0].shape();
    size_t n = sh[0], c = sh[1], s = 1, cpg = c / p.group;
    for (size_t i = 2; i < sh.ndim; ++i)
        s *= sh[i];
    auto v = in[0].values();
    std::vector<double> w(c, 1.0), b(c, 0.0), y(v.size());
    if (p.affine) {
        w = in[1].values();
        b = in[2].values();
    }
    auto at = [&](size_t ni, size_t ci, size_t si) { return (ni * c + ci) * s + si; };
    for (size_t ni = 0; ni < n; ++ni)
        for (size_t g = 0; g < p.group; ++g) {
            double sum = 0, sum2 = 0, cnt = double(cpg * s);
            for (size_t ci = g * cpg; ci < (g + 1) * cpg; ++ci)
                for (size_t si = 0; si < s; ++si) {
                    sum += v[at(ni, ci, si)];
                    sum2 += v[at(ni, ci, si)] * v[at(ni, ci, si)];
                }
            double mean = sum / cnt, var = sum2 / cnt - mean * mean;
            for (size_t ci = g * cpg; ci < (g + 1) * cpg; ++ci)
                for (size_t si = 0; si < s; ++si)
                    y[at(ni, ci, si)] =
                            (v[at(ni, ci, si)] - mean) / std::sqrt(var + p.eps) * w[ci] + b[ci];
        }
    return HostTensor::from(sh, y);
}

std::vector<HostTensor> random_inputs(const TensorShape& src, bool affine, uint32_t seed) {
    std::vector<HostTensor> in{random_tensor(src, seed, -2, 2)};
    if (affine) {
        in.push_back(random_tensor({src[1]}, seed + 1, 0.5, 1.5));
        in.push_back(random_tensor({src[1]}, seed + 2));
    }
    return in;
}

std::vector<HostTensor> backward(const param::GroupNorm& p, const HostTensor& dy,
                                 const std::vector<HostTensor>& in,
                                 const std::vector<HostTensor>& fwd) {
    std::vector<HostTensor> bin{dy, in[0], fwd[1], fwd[2]};
    if (p.affine)
        bin.push_back(in[1]);
    auto op = make_op<GroupNormBackward>(p);
    return run_op(*op, bin);
}

}  // namespace

TEST(GroupNormForward, HandComputedValues) {
    // N=1, C=4, two groups of channels {0,1} and {2,3}, one element per channel.
    auto x = HostTensor::from({1, 4, 1}, {1, 3, 10, 14});
    auto out = forward(gn(false, 2, 0), {x});
    EXPECT_TRUE(tensors_near(out[0], HostTensor::from({1, 4, 1}, {-1, 1, -1, 1}), 1e-6));
    EXPECT_TRUE(tensors_near(out[1], HostTensor::from({1, 2}, {2, 12}), 1e-6));
    EXPECT_TRUE(tensors_near(out[2], HostTensor::from({1, 2}, {1, 0.5}), 1e-6));
    auto w = HostTensor::from({4}, {1, 2, 3, 4}), b = HostTensor::from({4}, {0, 0, 1, 1});
    auto aff = forward(gn(true, 2, 0), {x, w, b});
    EXPECT_TRUE(tensors_near(aff[0], HostTensor::from({1, 4, 1}, {-1, 2, -2, 5}), 1e-6));
    // One group: the layer norm of the whole sample.
    auto one = forward(gn(false, 1, 0), {x});
    EXPECT_NEAR(one[1].values()[0], 7, 1e-6);
}

TEST(GroupNormForward, GroupsHaveMeanZeroAndVarianceOne) {
    auto x = random_tensor({3, 6, 4, 5}, 1, -3, 7);
    auto y = forward(gn(false, 3, 0), {x})[0].values();
    size_t len = 2 * 20;
    for (size_t r = 0; r < 9; ++r) {
        double s = 0, s2 = 0;
        for (size_t k = 0; k < len; ++k) {
            s += y[r * len + k];
            s2 += y[r * len + k] * y[r * len + k];
        }
        EXPECT_NEAR(s / len, 0, 1e-6);
        EXPECT_NEAR(s2 / len, 1, 1e-5);
    }
}

TEST(GroupNormForward, MatchesLoopReference) {
    for (bool affine : {false, true})
        for (uint32_t g : {1u, 2u, 3u, 6u})
            for (TensorShape s :
                 {TensorShape{2, 6}, TensorShape{2, 6, 5}, TensorShape{3, 6, 2, 3}}) {
                auto p = gn(affine, g);
                auto in = random_inputs(s, affine, g);
                EXPECT_TRUE(tensors_near(forward(p, in)[0], reference(p, in), 1e-5))
                        << affine << " " << g << " " << s.to_string();
            }
}

TEST(GroupNormBackward, MatchesFiniteDifferences) {
    for (bool affine : {false, true})
        for (uint32_t g : {1u, 2u, 4u}) {
            auto p = gn(affine, g);
            TensorShape s{2, 4, 3, 2};
            auto in = random_inputs(s, affine, 10 + g);
            auto dy = random_tensor(s, 20);
            auto grads = backward(p, dy, in, forward(p, in));
            ASSERT_EQ(grads.size(), affine ? 3u : 1u);
            auto f = [&](const std::vector<HostTensor>& x) { return forward(p, x)[0]; };
            for (size_t k = 0; k < in.size(); ++k)
                EXPECT_TRUE(tensors_near(grads[k], numeric_grad(f, in, k, dy), 5e-3))
                        << "input " << k << " affine " << affine << " group " << g;
        }
}

TEST(GroupNormForward, StridedAndBroadcastInputs) {
    for (bool affine : {false, true}) {
        auto p = gn(affine, 2);
        Checker<GroupNormForward> c(naive_handle());
        c.set_param(p);
        std::vector<TensorShape> shapes{{3, 4, 5}};
        if (affine)
            shapes.insert(shapes.end(), {{4}, {4}});
        c.set_noncontiguous(true).execs(shapes);
        std::vector<TensorLayout> ls{TensorLayout({5, 4, 3}, dtype::Float32).dimshuffle({2, 1, 0})};
        if (affine) {
            ls.push_back(TensorLayout({4}, {0}, dtype::Float32));
            ls.push_back(TensorLayout({4}, {-1}, dtype::Float32));
        }
        c.set_noncontiguous(false).exec_layouts(ls);
        ls[0] = TensorLayout({3, 4, 5}, {0, 5, 1}, dtype::Float32);
        c.exec_layouts(ls);

        Checker<GroupNormBackward> b(naive_handle());
        b.set_param(p).set_range(3, 0.5, 2);
        std::vector<TensorShape> bshapes{{3, 4, 5}, {3, 4, 5}, {3, 2}, {3, 2}};
        if (affine)
            bshapes.push_back({4});
        b.set_noncontiguous(true).execs(bshapes);
        std::vector<TensorLayout> bl{TensorLayout({5, 4, 3}, dtype::Float32).dimshuffle({2, 1, 0}),
                                     TensorLayout({3, 4, 5}, {20, 0, 1}, dtype::Float32),
                                     TensorLayout({3, 2}, {1, 3}, dtype::Float32),
                                     TensorLayout({3, 2}, {0, 1}, dtype::Float32)};
        if (affine)
            bl.push_back(TensorLayout({4}, {-2}, dtype::Float32));
        b.set_noncontiguous(false).exec_layouts(bl);
    }
}

TEST(GroupNormForward, EdgeShapes) {
    for (TensorShape s :
         {TensorShape{0, 4, 3}, TensorShape{2, 0, 3}, TensorShape{2, 4, 0}, TensorShape{1, 1},
          TensorShape{1, 1, 1}, TensorShape{7, 2, 13}, TensorShape{2, 32, 1031}}) {
        for (bool affine : {false, true}) {
            auto p = gn(affine, s[1] % 2 == 0 && s[1] ? 2 : 1);
            auto in = random_inputs(s, affine, 30);
            auto out = forward(p, in);
            EXPECT_TRUE(tensors_near(out[0], reference(p, in), 1e-4)) << s.to_string();
            auto g = backward(p, random_tensor(s, 31), in, out);
            EXPECT_TRUE(g[0].shape().eq_shape(s));
            if (affine) {
                EXPECT_TRUE(g[1].shape().eq_shape({s[1]}));
            }
        }
    }
    // Empty groups normalise nothing and stay finite.
    auto out = forward(gn(false, 1, 0.25f), {HostTensor({2, 3, 0}, dtype::Float32)});
    EXPECT_EQ(out[2].values(), std::vector<double>(2, 2.0));
}

TEST(GroupNormForward, LowPrecisionDtypes) {
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto p = gn(true, 2);
        auto in = random_inputs({3, 4, 9}, true, 50);
        std::vector<HostTensor> low, ref;
        for (auto& t : in) {
            low.push_back(as_dtype(t, dt));
            ref.push_back(as_dtype(low.back(), dtype::Float32));
        }
        auto got = forward(p, low), want = forward(p, ref);
        EXPECT_EQ(got[0].dtype(), dt);
        EXPECT_EQ(got[1].dtype(), dtype::Float32);
        EXPECT_TRUE(tensors_near(got[0], as_dtype(want[0], dt), 2 * default_epsilon(dt)))
                << dt.name();
        auto dy = as_dtype(random_tensor({3, 4, 9}, 51), dt);
        auto g = backward(p, dy, low, got);
        auto g32 = backward(p, as_dtype(dy, dtype::Float32), ref, want);
        for (size_t i = 0; i < 3; ++i)
            EXPECT_TRUE(tensors_near(g[i], as_dtype(g32[i], dt), 4 * default_epsilon(dt)))
                    << dt.name() << " grad " << i;
    }
}

TEST(GroupNormForward, BadInputsNameOpAndShapes) {
    TensorLayout x({2, 6, 3}, dtype::Float32), w({6}, dtype::Float32);
    expect_error<ParamError>(
            [&] { deduce<GroupNormForward>(gn(false, 4), {x}); },
            {"GroupNormForward(affine=false, eps=1e-05, group=4)", "group 4", "{2(18),6(3),3(1)}"});
    expect_error<ParamError>([&] { deduce<GroupNormForward>(gn(false, 0), {x}); }, {"group 0"});
    expect_error<ParamError>(
            [&] {
                deduce<GroupNormBackward>(gn(false, 1, NAN), {x, x, x, x});
            },
            {"GroupNormBackward(", "eps nan"});
    expect_error<ShapeError>(
            [&] { deduce<GroupNormForward>(gn(false, 1), {TensorLayout({6}, dtype::Float32)}); },
            {"GroupNormForward(", "{6(1)}", "at least 2 axes"});
    expect_error<DTypeError>(
            [&] {
                deduce<GroupNormForward>(gn(false, 1), {TensorLayout({2, 6}, dtype::Int32)});
            },
            {"GroupNormForward(", "{2(6),6(1)} int32"});
    expect_error<ShapeError>(
            [&] {
                deduce<GroupNormForward>(gn(true, 2), {x, TensorLayout({3}, dtype::Float32), w});
            },
            {"GroupNormForward(affine=true", "weight {3(1)}", "{2(18),6(3),3(1)}"});
    TensorLayout stat({2, 2}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                deduce<GroupNormBackward>(gn(false, 2),
                                          {x, x, TensorLayout({2, 3}, dtype::Float32), stat});
            },
            {"GroupNormBackward(", "mean {2(3),3(1)}", "{N, group}"});
    expect_error<ShapeError>(
            [&] {
                deduce<GroupNormBackward>(gn(true, 2), {x, x, stat, stat});
            },
            {"GroupNormBackward(affine=true", "expects 5 inputs, got 4"});
}

TEST(GroupNormForward, BothOpsWriteIntoPaddedOutputs) {
    for (bool affine : {false, true}) {
        auto p = gn(affine, 2);
        auto in = random_inputs({3, 4, 5}, affine, 60);
        expect_padded_outputs_match<GroupNormForward>(p, in);
        auto fwd = forward(p, in);
        std::vector<HostTensor> bin{random_tensor({3, 4, 5}, 61), in[0], fwd[1], fwd[2]};
        if (affine)
            bin.push_back(in[1]);
        expect_padded_outputs_match<GroupNormBackward>(p, bin);
    }
}

TEST(GroupNormForward, LowPrecisionStridedInputs) {
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        Checker<GroupNormForward>(naive_handle())
                .set_param(gn(true, 3))
                .set_dtype(0, dt)
                .set_dtype(1, dt)
                .set_dtype(2, dt)
                .set_noncontiguous(true)
                .execs({{2, 6, 5}, {6}, {6}});
    }
}
