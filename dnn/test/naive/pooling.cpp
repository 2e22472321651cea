// PoolingForward / PoolingBackward on the naive handle: hand-computed cases, a loop-nest second
// formulation, average pooling as a grouped convolution, finite differences and the adjoint
// identity.
#include "naive/pooling.h"

#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/pooling.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Pooling::Mode;

struct Pool {
    std::unique_ptr<Handle> handle = Handle::make_naive();
    HostTensor fwd(const HostTensor& x, const param::Pooling& p) {
        auto op = handle->create_operator<PoolingForward>();
        op->param() = p;
        return std::move(run_op(*op, {x})[0]);
    }
    HostTensor bwd(const HostTensor& x, const HostTensor& y, const HostTensor& dy,
                   const param::Pooling& p) {
        auto op = handle->create_operator<PoolingBackward>();
        op->param() = p;
        return std::move(run_op(*op, {x, y, dy})[0]);
    }
};

HostTensor reference(const HostTensor& x, const HostTensor& y, const param::Pooling& p) {
    std::vector<size_t> out;
    for (size_t d = 2; d < y.shape().ndim; ++d)
        out.push_back(y.shape()[d]);
    PoolRef mode = p.mode == Mode::MAX       ? PoolRef::Max
                   : p.mode == Mode::AVERAGE ? PoolRef::AverageInclPad
                                             : PoolRef::AverageExclPad;
    return pool_reference(x, out, mode, [&](size_t d, size_t o) {
        long first = long(o) * p.stride[d] - p.padding[d];
        return std::pair<long, long>{first, first + p.window[d]};
    });
}

struct Case {
    TensorShape src;
    std::vector<int32_t> window, stride, padding;
};

std::vector<Case> cases() {
    return {
            {{2, 3, 11}, {3}, {2}, {1}},
            {{1, 2, 7, 5}, {3, 2}, {1, 2}, {1, 1}},
            {{2, 2, 6, 6}, {2, 2}, {2, 2}, {0, 0}},
            {{1, 2, 5, 4, 7}, {2, 3, 3}, {2, 1, 2}, {1, 1, 0}},
    };
}

const Mode kModes[] = {Mode::MAX, Mode::AVERAGE, Mode::AVERAGE_COUNT_EXCLUDE_PADDING};

TEST(PoolingForward, HandComputed) {
    Pool pl;
    std::vector<double> v(16);
    for (size_t i = 0; i < 16; ++i)
        v[i] = double(i + 1);
    auto x = HostTensor::from({1, 1, 4, 4}, v);
    EXPECT_TRUE(tensors_near(pl.fwd(x, pool_param(Mode::MAX, {2, 2}, {2, 2}, {0, 0})),
                             HostTensor::from({1, 1, 2, 2}, {6, 8, 14, 16}), 0));
    EXPECT_TRUE(tensors_near(pl.fwd(x, pool_param(Mode::AVERAGE, {2, 2}, {2, 2}, {0, 0})),
                             HostTensor::from({1, 1, 2, 2}, {3.5, 5.5, 11.5, 13.5}), 0));
    // 3x3 padded by one under a 2x2 window at stride 2: corner windows hold 1, 2, 2 and 4 elements.
    auto x3 = HostTensor::from({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    EXPECT_TRUE(tensors_near(pl.fwd(x3, pool_param(Mode::MAX, {2, 2}, {2, 2}, {1, 1})),
                             HostTensor::from({1, 1, 2, 2}, {1, 3, 7, 9}), 0));
    EXPECT_TRUE(tensors_near(pl.fwd(x3, pool_param(Mode::AVERAGE, {2, 2}, {2, 2}, {1, 1})),
                             HostTensor::from({1, 1, 2, 2}, {0.25, 1.25, 2.75, 7}), 0));
    EXPECT_TRUE(tensors_near(
            pl.fwd(x3, pool_param(Mode::AVERAGE_COUNT_EXCLUDE_PADDING, {2, 2}, {2, 2}, {1, 1})),
            HostTensor::from({1, 1, 2, 2}, {1, 2.5, 5.5, 7}), 0));
    // Padding is not a zero candidate for the maximum.
    auto neg = HostTensor::from({1, 1, 3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9});
    EXPECT_TRUE(tensors_near(pl.fwd(neg, pool_param(Mode::MAX, {2, 2}, {2, 2}, {1, 1})),
                             HostTensor::from({1, 1, 2, 2}, {-1, -2, -4, -5}), 0));
}

TEST(PoolingForward, MatchesLoopReferenceIn1D2D3D) {
    Pool pl;
    std::mt19937 rng(21);
    for (auto& cs : cases())
        for (Mode m : kModes) {
            auto p = pool_param(m, cs.window, cs.stride, cs.padding);
            auto x = random_tensor(cs.src, rng);
            auto y = pl.fwd(x, p);
            EXPECT_TRUE(tensors_near(y, reference(x, y, p), 1e-6)) << to_string(p);
        }
}

TEST(PoolingForward, AverageEqualsGroupedConvolutionWithConstantKernel) {
    Pool pl;
    std::mt19937 rng(22);
    auto conv = pl.handle->create_operator<ConvolutionForward>();
    for (auto& cs : cases()) {
        size_t C = cs.src[1], K = 1;
        TensorShape ws = cs.src;
        ws[0] = C;
        ws[1] = 1;
        for (size_t d = 0; d < cs.window.size(); ++d) {
            ws[2 + d] = size_t(cs.window[d]);
            K *= ws[2 + d];
        }
        auto w = HostTensor::from(ws, std::vector<double>(ws.total_nr_elems(), 1.0 / double(K)));
        std::vector<int32_t> ones(cs.window.size(), 1);
        conv->param() = conv_param(cs.stride, cs.padding, ones, uint32_t(C));
        auto x = random_tensor(cs.src, rng);
        auto want = std::move(run_op(*conv, {x, w})[0]);
        EXPECT_TRUE(
                tensors_near(pl.fwd(x, pool_param(Mode::AVERAGE, cs.window, cs.stride, cs.padding)),
                             want, 1e-6));
    }
}

TEST(PoolingForward, EdgeShapes) {
    Pool pl;
    std::mt19937 rng(23);
    auto p = pool_param(Mode::MAX, {2, 2}, {2, 2}, {0, 0});
    EXPECT_TRUE(pl.fwd(HostTensor({0, 3, 4, 4}, dtype::Float32), p)
                        .shape()
                        .eq_shape(TensorShape{0, 3, 2, 2}));
    EXPECT_TRUE(pl.fwd(HostTensor({2, 0, 5, 5}, dtype::Float32), p)
                        .shape()
                        .eq_shape(TensorShape{2, 0, 2, 2}));
    auto x1 = HostTensor::from({1, 1, 1, 1}, {4});
    EXPECT_TRUE(tensors_near(pl.fwd(x1, pool_param(Mode::AVERAGE, {1, 1}, {1, 1}, {0, 0})), x1, 0));
    // Largish, prime-sized, overlapping windows.
    auto x = random_tensor({3, 5, 31, 37}, rng);
    for (Mode m : kModes) {
        auto pp = pool_param(m, {3, 5}, {2, 3}, {1, 2});
        auto y = pl.fwd(x, pp);
        EXPECT_TRUE(tensors_near(y, reference(x, y, pp), 1e-6)) << to_string(pp);
    }
}

TEST(PoolingForward, StridedLayoutsAndLowPrecision) {
    Pool pl;
    for (auto& cs : cases())
        for (Mode m : kModes)
            Checker<PoolingForward>(pl.handle.get())
                    .set_param(pool_param(m, cs.window, cs.stride, cs.padding))
                    .set_noncontiguous(true)
                    .execs({cs.src});
    auto p = pool_param(Mode::AVERAGE, {3, 2}, {1, 2}, {1, 0});
    Checker<PoolingForward>(pl.handle.get())
            .set_param(p)
            .exec_layouts({TensorLayout({2, 3, 5, 6}, {0, 1, -18, 3}, dtype::Float32)});
    std::mt19937 rng(24);
    for (DType dt : {dtype::Float16, dtype::BFloat16})
        for (Mode m : kModes) {
            auto pp = pool_param(m, {3, 2}, {1, 2}, {1, 1});
            auto x = random_tensor({2, 3, 7, 6}, rng, dt);
            auto y = pl.fwd(x, pp);
            EXPECT_EQ(y.dtype(), dt);
            EXPECT_TRUE(tensors_near(as_dtype(y, dtype::Float32),
                                     pl.fwd(as_dtype(x, dtype::Float32), pp), default_epsilon(dt)))
                    << dt.name() << to_string(pp);
        }
}

TEST(PoolingForward, BadInputsNameOpAndShapes) {
    Pool pl;
    auto x = HostTensor({1, 2, 3, 3}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                pl.fwd(x, pool_param(Mode::MAX, {4, 2}, {1, 1}, {0, 0}));
            },
            {"PoolingForward(mode=MAX, window=[4,2]", "larger than the padded input",
             lstr({1, 2, 3, 3})});
    expect_error<ParamError>(
            [&] {
                pl.fwd(x, pool_param(Mode::MAX, {2, 2}, {1, 1}, {2, 0}));
            },
            {"PoolingForward(", "padding 2 must be smaller than window 2"});
    expect_error<ParamError>(
            [&] {
                pl.fwd(x, pool_param(Mode::MAX, {2}, {1, 1}, {0, 0}));
            },
            {"PoolingForward(", "window has 1 entries, expected 2"});
    expect_error<ParamError>(
            [&] {
                pl.fwd(x, pool_param(Mode::MAX, {2, 2}, {1, 0}, {0, 0}));
            },
            {"PoolingForward(", "stride entries must be >= 1"});
    expect_error<DTypeError>(
            [&] {
                pl.fwd(HostTensor({1, 2, 3, 3}, dtype::Int32),
                       pool_param(Mode::MAX, {2, 2}, {1, 1}, {0, 0}));
            },
            {"PoolingForward(", "int32", lstr({1, 2, 3, 3}, dtype::Int32)});
    expect_error<ShapeError>(
            [&] {
                pl.fwd(HostTensor({2, 3}, dtype::Float32),
                       pool_param(Mode::MAX, {2, 2}, {1, 1}, {0, 0}));
            },
            {"PoolingForward(", lstr({2, 3})});
    expect_error<ShapeError>(
            [&] {
                pl.fwd(HostTensor({1, 1, 0, 3}, dtype::Float32),
                       pool_param(Mode::MAX, {1, 1}, {1, 1}, {0, 0}));
            },
            {"PoolingForward(", lstr({1, 1, 0, 3})});
}

TEST(PoolingBackward, MaxSendsGradientToFirstMaximum) {
    Pool pl;
    // Ties everywhere: each window's gradient lands on its first (row-major) element.
    auto x = HostTensor::from({1, 1, 2, 4}, std::vector<double>(8, 1.0));
    auto p = pool_param(Mode::MAX, {2, 2}, {2, 2}, {0, 0});
    auto y = pl.fwd(x, p);
    auto dy = HostTensor::from({1, 1, 1, 2}, {3, 5});
    EXPECT_TRUE(tensors_near(pl.bwd(x, y, dy, p),
                             HostTensor::from({1, 1, 2, 4}, {3, 0, 5, 0, 0, 0, 0, 0}), 0));
    // Overlapping windows accumulate on a shared maximum.
    auto x1 = HostTensor::from({1, 1, 4}, {0, 9, 1, 2});
    auto p1 = pool_param(Mode::MAX, {2}, {1}, {0});
    auto dy1 = HostTensor::from({1, 1, 3}, {1, 10, 100});
    EXPECT_TRUE(tensors_near(pl.bwd(x1, pl.fwd(x1, p1), dy1, p1),
                             HostTensor::from({1, 1, 4}, {0, 11, 0, 100}), 0));
}

TEST(PoolingBackward, MatchesFiniteDifferencesAndAdjoint) {
    Pool pl;
    std::mt19937 rng(25);
    for (auto& cs : cases())
        for (Mode m : kModes) {
            auto p = pool_param(m, cs.window, cs.stride, cs.padding);
            auto x = distinct_values(cs.src, rng);
            auto y = pl.fwd(x, p);
            auto dy = random_tensor(y.shape(), rng);
            auto gx = pl.bwd(x, y, dy, p);
            auto f = [&](const std::vector<HostTensor>& in) { return pl.fwd(in[0], p); };
            EXPECT_TRUE(tensors_near(gx, numeric_grad(f, {x}, 0, dy), 1e-3)) << to_string(p);
            if (m != Mode::MAX) {
                // Average pooling is linear: <pool(x), dy> = <x, pool_backward(dy)>.
                EXPECT_NEAR(dot(y, dy), dot(x, gx), 1e-4 * (1 + std::abs(dot(y, dy))));
            }
        }
}

TEST(PoolingBackward, StridedLayoutsLowPrecisionAndEmpty) {
    Pool pl;
    std::mt19937 rng(26);
    for (auto& cs : cases())
        for (Mode m : kModes) {
            auto p = pool_param(m, cs.window, cs.stride, cs.padding);
            auto y = pl.fwd(HostTensor(cs.src, dtype::Float32), p);
            Checker<PoolingBackward>(pl.handle.get())
                    .set_param(p)
                    .set_noncontiguous(true)
                    .execs({cs.src, y.shape(), y.shape()});
        }
    for (DType dt : {dtype::Float16, dtype::BFloat16})
        for (Mode m : kModes) {
            auto p = pool_param(m, {3, 3}, {2, 1}, {1, 1});
            auto x = random_tensor({2, 2, 7, 5}, rng, dt);
            auto y = pl.fwd(x, p);
            auto dy = random_tensor(y.shape(), rng, dt);
            auto f32 = [](const HostTensor& t) { return as_dtype(t, dtype::Float32); };
            auto gx = pl.bwd(x, y, dy, p);
            EXPECT_EQ(gx.dtype(), dt);
            EXPECT_TRUE(
                    tensors_near(f32(gx), pl.bwd(f32(x), f32(y), f32(dy), p), default_epsilon(dt)))
                    << dt.name() << to_string(p);
        }
    auto p = pool_param(Mode::MAX, {2, 2}, {2, 2}, {0, 0});
    auto e = HostTensor({0, 3, 4, 4}, dtype::Float32);
    auto ey = HostTensor({0, 3, 2, 2}, dtype::Float32);
    EXPECT_TRUE(pl.bwd(e, ey, ey, p).shape().eq_shape(e.shape()));
}

TEST(PoolingBackward, BadInputsNameOpAndShapes) {
    Pool pl;
    auto p = pool_param(Mode::AVERAGE, {2, 2}, {2, 2}, {0, 0});
    auto x = HostTensor({1, 2, 4, 4}, dtype::Float32);
    auto y = HostTensor({1, 2, 2, 2}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                pl.bwd(x, y, HostTensor({1, 2, 3, 2}, dtype::Float32), p);
            },
            {"PoolingBackward(mode=AVERAGE", "diff " + lstr({1, 2, 3, 2}), "{1,2,2,2}",
             lstr({1, 2, 4, 4})});
    expect_error<ShapeError>(
            [&] {
                pl.bwd(x, HostTensor({1, 3, 2, 2}, dtype::Float32), y, p);
            },
            {"PoolingBackward(", "dst " + lstr({1, 3, 2, 2})});
    expect_error<DTypeError>(
            [&] {
                pl.bwd(x, y, HostTensor({1, 2, 2, 2}, dtype::Float16), p);
            },
            {"PoolingBackward(", "diff dtype float16"});
}

}  // namespace

namespace {

// Backward kernels address grad through its strides: writing into every second element of a
// buffer leaves the others untouched.
TEST(PoolingBackward, WritesIntoAStridedOutputView) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<PoolingBackward>();
    op->param() = pool_param(Mode::AVERAGE, {2}, {2}, {0});
    auto x = HostTensor::from({1, 1, 4}, {1, 2, 3, 4});
    auto y = HostTensor::from({1, 1, 2}, {1.5, 3.5});
    auto dy = HostTensor::from({1, 1, 2}, {2, 4});
    std::vector<float> buf(8, -1.f);
    TensorND grad(buf.data(), TensorLayout({1, 1, 4}, {8, 8, 2}, dtype::Float32));
    TensorND in[] = {x.nd(), y.nd(), dy.nd()};
    std::vector<std::byte> ws(op->get_workspace_in_bytes(
            std::vector<TensorLayout>{x.layout(), y.layout(), dy.layout()},
            std::vector<TensorLayout>{grad.layout}));
    op->exec(in, {&grad, 1}, {ws.data(), ws.size()});
    EXPECT_EQ(buf, (std::vector<float>{1, -1, 1, -1, 2, -1, 2, -1}));
    // Too little workspace is refused before the kernel runs.
    EXPECT_THROW(op->exec(in, {&grad, 1}, {}), ShapeError);
}

}  // namespace
