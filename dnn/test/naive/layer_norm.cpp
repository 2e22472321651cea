// LayerNormForward/Backward on the naive backend.
#include <cmath>

#include "naive/norm_test_util.h"
#include "neomeg/dnn/operators/norm.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::LayerNorm ln(bool affine, uint32_t normalized_dim = 1, float eps = 1e-5f) {
    param::LayerNorm p;
    p.affine = affine;
    p.normalized_dim = normalized_dim;
    p.eps = eps;
    return p;
}

std::vector<HostTensor> forward(const param::LayerNorm& p, const std::vector<HostTensor>& in) {
    auto op = make_op<LayerNormForward>(p);
    return run_op(*op, in);
}

// One pass of sums and sums of squares per row, in double: a different formulation from the
// kernel's two passes.
HostTensor reference(const param::LayerNorm& p, const std::vector<HostTensor>& in) {
    const HostTensor& x = in[0];
    size_t len = 1;
    for (size_t i = x.shape().ndim - p.normalized_dim; i < x.shape().ndim; ++i)
        len *= x.shape()[i];
    auto v = x.values();
    std::vector<double> w(len, 1.0), b(len, 0.0), y(v.size());
    if (p.affine) {
        w = in[1].values();
        b = in[2].values();
    }
    for (size_t r = 0; len && r < v.size() / len; ++r) {
        double s = 0, s2 = 0;
        for (size_t k = 0; k < len; ++k) {
            s += v[r * len + k];
            s2 += v[r * len + k] * v[r * len + k];
        }
        double mean = s / len, var = s2 / len - mean * mean;
        for (size_t k = 0; k < len; ++k)
            y[r * len + k] = (v[r * len + k] - mean) / std::sqrt(var + p.eps) * w[k] + b[k];
    }
    return HostTensor::from(x.shape(), y);
}

std::vector<HostTensor> random_inputs(const TensorShape& src, const param::LayerNorm& p,
                                      uint32_t seed) {
    std::vector<HostTensor> in{random_tensor(src, seed, -2, 2)};
    if (p.affine) {
        TensorShape t;
        t.ndim = p.normalized_dim;
        for (size_t i = 0; i < t.ndim; ++i)
            t[i] = src[src.ndim - t.ndim + i];
        in.push_back(random_tensor(t, seed + 1, 0.5, 1.5));
        in.push_back(random_tensor(t, seed + 2));
    }
    return in;
}

}  // namespace

TEST(LayerNormForward, HandComputedValues) {
    auto x = HostTensor::from({2, 4}, {1, 2, 3, 4, 5, 5, 5, 5});
    auto out = forward(ln(false, 1, 0), {x});
    double a = 1.5 / std::sqrt(1.25), b = 0.5 / std::sqrt(1.25);
    auto eps_row = forward(ln(false, 1, 0.25f), {x});
    auto first_row = forward(ln(false, 1, 0), {HostTensor::from({4}, {1, 2, 3, 4})});
    EXPECT_TRUE(tensors_near(first_row[0], HostTensor::from({4}, {-a, -b, b, a}), 1e-6));
    // eps 0 on a constant row divides 0 by 0; eps 0.25 keeps it at 0.
    EXPECT_TRUE(std::isnan(out[0].values()[4]));
    EXPECT_EQ(eps_row[0].values()[4], 0.0);
    EXPECT_TRUE(tensors_near(out[1], HostTensor::from({2}, {2.5, 5}), 1e-6));
    // A constant row has variance 0: with eps 0.25 its rstd is 2.
    EXPECT_NEAR(eps_row[2].values()[1], 2.0, 1e-6);
    EXPECT_NEAR(out[2].values()[0], 1 / std::sqrt(1.25), 1e-6);
    auto w = HostTensor::from({4}, {2, 2, 2, 2}), bias = HostTensor::from({4}, {1, 1, 1, 1});
    auto aff = forward(ln(true, 1, 0.25f), {x, w, bias});
    double s = 1 / std::sqrt(1.5);
    EXPECT_TRUE(tensors_near(
            aff[0], HostTensor::from({2, 4}, {1 - 3 * s, 1 - s, 1 + s, 1 + 3 * s, 1, 1, 1, 1}),
            1e-6));
}

TEST(LayerNormForward, RowsHaveMeanZeroAndVarianceOneWithoutAffine) {
    auto x = random_tensor({6, 5, 11}, 3, -5, 9);
    for (uint32_t nd : {1u, 2u}) {
        auto y = forward(ln(false, nd, 0), {x})[0].values();
        size_t len = nd == 1 ? 11 : 55;
        for (size_t r = 0; r < y.size() / len; ++r) {
            double s = 0, s2 = 0;
            for (size_t k = 0; k < len; ++k) {
                s += y[r * len + k];
                s2 += y[r * len + k] * y[r * len + k];
            }
            EXPECT_NEAR(s / len, 0, 1e-6);
            EXPECT_NEAR(s2 / len, 1, 1e-5);
        }
    }
}

TEST(LayerNormForward, MatchesOnePassReference) {
    for (bool affine : {false, true})
        for (uint32_t nd : {1u, 2u, 3u}) {
            auto p = ln(affine, nd);
            auto in = random_inputs({2, 3, 4}, p, 10 + nd);
            auto out = forward(p, in);
            EXPECT_TRUE(tensors_near(out[0], reference(p, in), 1e-5)) << affine << nd;
            EXPECT_EQ(out[1].shape().ndim, 3 - nd);
            EXPECT_EQ(out[1].dtype(), dtype::Float32);
        }
}

TEST(LayerNormBackward, MatchesFiniteDifferences) {
    for (bool affine : {false, true})
        for (uint32_t nd : {1u, 2u}) {
            auto p = ln(affine, nd);
            auto in = random_inputs({3, 4, 5}, p, 20 + nd);
            auto fwd = forward(p, in);
            auto dy = random_tensor({3, 4, 5}, 30);
            std::vector<HostTensor> bin{dy, in[0], fwd[1], fwd[2]};
            if (affine)
                bin.push_back(in[1]);
            auto op = make_op<LayerNormBackward>(p);
            auto grads = run_op(*op, bin);
            ASSERT_EQ(grads.size(), affine ? 3u : 1u);
            auto f = [&](const std::vector<HostTensor>& x) { return forward(p, x)[0]; };
            for (size_t k = 0; k < in.size(); ++k)
                EXPECT_TRUE(tensors_near(grads[k], numeric_grad(f, in, k, dy), 5e-3))
                        << "input " << k << " affine " << affine << " nd " << nd;
        }
}

TEST(LayerNormForward, StridedAndBroadcastInputs) {
    for (bool affine : {false, true}) {
        auto p = ln(affine, 2);
        Checker<LayerNormForward> c(naive_handle());
        c.set_param(p);
        std::vector<TensorShape> shapes{{4, 5, 6}};
        if (affine)
            shapes.insert(shapes.end(), {{5, 6}, {5, 6}});
        c.set_noncontiguous(true).execs(shapes);
        std::vector<TensorLayout> ls{TensorLayout({6, 5, 4}, dtype::Float32).dimshuffle({2, 1, 0})};
        if (affine) {
            ls.push_back(TensorLayout({5, 6}, {0, 1}, dtype::Float32));
            ls.push_back(TensorLayout({5, 6}, {-6, -1}, dtype::Float32));
        }
        c.set_noncontiguous(false).exec_layouts(ls);
        ls[0] = TensorLayout({4, 5, 6}, {0, 6, 1}, dtype::Float32);
        c.exec_layouts(ls);

        Checker<LayerNormBackward> b(naive_handle());
        b.set_param(p).set_range(3, 0.5, 2);
        std::vector<TensorShape> bshapes{{4, 5, 6}, {4, 5, 6}, {4}, {4}};
        if (affine)
            bshapes.push_back({5, 6});
        b.set_noncontiguous(true).execs(bshapes);
        std::vector<TensorLayout> bl{TensorLayout({6, 5, 4}, dtype::Float32).dimshuffle({2, 1, 0}),
                                     TensorLayout({4, 5, 6}, {0, 6, 1}, dtype::Float32),
                                     TensorLayout({4}, {-1}, dtype::Float32),
                                     TensorLayout({4}, {0}, dtype::Float32)};
        if (affine)
            bl.push_back(TensorLayout({5, 6}, {1, 5}, dtype::Float32));
        b.set_noncontiguous(false).exec_layouts(bl);
    }
}

TEST(LayerNormForward, EdgeShapes) {
    for (TensorShape s : {TensorShape{0, 5}, TensorShape{5, 0}, TensorShape{1, 1}, TensorShape{1},
                          TensorShape{7, 13}, TensorShape{3, 1031}, TensorShape{128, 512}}) {
        for (bool affine : {false, true}) {
            auto p = ln(affine, 1);
            auto in = random_inputs(s, p, 40);
            auto out = forward(p, in);
            EXPECT_TRUE(tensors_near(out[0], reference(p, in), 1e-4)) << s.to_string();
            auto dy = random_tensor(s, 41);
            std::vector<HostTensor> bin{dy, in[0], out[1], out[2]};
            if (affine)
                bin.push_back(in[1]);
            auto op = make_op<LayerNormBackward>(p);
            auto g = run_op(*op, bin);
            EXPECT_TRUE(g[0].shape().eq_shape(s));
        }
    }
    // Every axis normalised: mean and rstd are scalars.
    auto out = forward(ln(false, 2), {random_tensor({3, 4}, 42)});
    EXPECT_EQ(out[1].shape().ndim, 0u);
    EXPECT_EQ(out[2].values().size(), 1u);
    // An empty row normalises nothing and stays finite.
    auto empty = forward(ln(false, 1, 0.25f), {HostTensor({3, 0}, dtype::Float32)});
    EXPECT_EQ(empty[1].values(), std::vector<double>(3, 0.0));
    EXPECT_EQ(empty[2].values(), std::vector<double>(3, 2.0));
}

TEST(LayerNormForward, LowPrecisionDtypes) {
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto p = ln(true, 1);
        auto in = random_inputs({6, 33}, p, 50);
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
        EXPECT_TRUE(tensors_near(got[2], want[2], 1e-5)) << dt.name();
        auto dy = as_dtype(random_tensor({6, 33}, 51), dt);
        auto op = make_op<LayerNormBackward>(p);
        auto g = run_op(*op, {dy, low[0], got[1], got[2], low[1]});
        auto op32 = make_op<LayerNormBackward>(p);
        auto g32 = run_op(*op32, {as_dtype(dy, dtype::Float32), ref[0], want[1], want[2], ref[1]});
        for (size_t i = 0; i < 3; ++i)
            EXPECT_TRUE(tensors_near(g[i], as_dtype(g32[i], dt), 4 * default_epsilon(dt)))
                    << dt.name() << " grad " << i;
    }
}

TEST(LayerNormForward, BadInputsNameOpAndShapes) {
    TensorLayout x({2, 3}, dtype::Float32), w({3}, dtype::Float32);
    expect_error<DTypeError>(
            [&] {
                deduce<LayerNormForward>(ln(false), {TensorLayout({2, 3}, dtype::Int8)});
            },
            {"LayerNormForward(affine=false, eps=1e-05, normalized_dim=1)", "{2(3),3(1)} int8"});
    expect_error<ParamError>([&] { deduce<LayerNormForward>(ln(false, 3), {x}); },
                             {"LayerNormForward(", "normalized_dim 3", "{2(3),3(1)}"});
    expect_error<ParamError>([&] { deduce<LayerNormForward>(ln(false, 1, -1.f), {x}); },
                             {"LayerNormForward(affine=false, eps=-1", "eps -1"});
    expect_error<ParamError>([&] { deduce<LayerNormForward>(ln(false, 0), {x}); },
                             {"normalized_dim 0"});
    expect_error<ShapeError>(
            [&] {
                deduce<LayerNormForward>(ln(true), {x, TensorLayout({2}, dtype::Float32), w});
            },
            {"LayerNormForward(affine=true", "weight {2(1)}", "{2(3),3(1)}"});
    expect_error<DTypeError>(
            [&] {
                deduce<LayerNormForward>(ln(true), {x, w, TensorLayout({3}, dtype::Float16)});
            },
            {"bias {3(1)} float16"});
    expect_error<ShapeError>([&] { deduce<LayerNormForward>(ln(true), {x}); },
                             {"LayerNormForward(affine=true", "expects 3 inputs, got 1"});
    TensorLayout stat({2}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                deduce<LayerNormBackward>(ln(false),
                                          {x, x, TensorLayout({3}, dtype::Float32), stat});
            },
            {"LayerNormBackward(", "mean {3(1)}", "{2(3),3(1)}"});
    expect_error<DTypeError>(
            [&] {
                deduce<LayerNormBackward>(ln(false),
                                          {x, x, stat, TensorLayout({2}, dtype::Float16)});
            },
            {"LayerNormBackward(", "rstd {2(1)} float16"});
    expect_error<ShapeError>(
            [&] {
                deduce<LayerNormBackward>(ln(false),
                                          {TensorLayout({3, 2}, dtype::Float32), x, stat, stat});
            },
            {"LayerNormBackward(", "diff {3(2),2(1)}"});
    EXPECT_EQ(make_op<LayerNormBackward>(ln(false))->num_outputs(), 1u);
    EXPECT_EQ(make_op<LayerNormBackward>(ln(true))->num_outputs(), 3u);
}

TEST(LayerNormForward, BothOpsWriteIntoPaddedOutputs) {
    for (bool affine : {false, true}) {
        auto p = ln(affine, 1);
        auto in = random_inputs({3, 4, 5}, p, 60);
        expect_padded_outputs_match<LayerNormForward>(p, in);
        auto fwd = forward(p, in);
        std::vector<HostTensor> bin{random_tensor({3, 4, 5}, 61), in[0], fwd[1], fwd[2]};
        if (affine)
            bin.push_back(in[1]);
        expect_padded_outputs_match<LayerNormBackward>(p, bin);
    }
}

TEST(LayerNormForward, LowPrecisionStridedInputs) {
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        Checker<LayerNormForward>(naive_handle())
                .set_param(ln(true, 1))
                .set_dtype(0, dt)
                .set_dtype(1, dt)
                .set_dtype(2, dt)
                .set_noncontiguous(true)
                .execs({{3, 7, 5}, {5}, {5}});
    }
}
