// ConvolutionForward / BackwardData / BackwardFilter on the naive handle: hand-computed cases, an
// im2col + matrix-product second formulation, finite differences and the adjoint identity
// <conv(x, w), dy> = <x, bwd_data(w, dy)> = <w, bwd_filter(x, dy)>.
#include "naive/convolution.h"

#include "neomeg/dnn/operators/convolution.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

struct Conv {
    std::unique_ptr<Handle> handle = Handle::make_naive();

    HostTensor fwd(const HostTensor& x, const HostTensor& w, const param::Convolution& p) {
        auto op = handle->create_operator<ConvolutionForward>();
        op->param() = p;
        return run_op(*op, {x, w})[0];
    }
    HostTensor bwd_data(const HostTensor& w, const HostTensor& dy, const param::Convolution& p,
                        std::vector<TensorShape> preset = {}) {
        auto op = handle->create_operator<ConvolutionBackwardData>();
        op->param() = p;
        return run_op(*op, {w, dy}, preset)[0];
    }
    HostTensor bwd_filter(const HostTensor& x, const HostTensor& dy, const param::Convolution& p,
                          std::vector<TensorShape> preset = {}) {
        auto op = handle->create_operator<ConvolutionBackwardFilter>();
        op->param() = p;
        return run_op(*op, {x, dy}, preset)[0];
    }
};

TensorShape shape_of(std::vector<size_t> v) {
    return TensorShape(v);
}

// One geometry: src shape, filter shape and params.
struct Case {
    std::vector<size_t> src, filter;
    param::Convolution p;
};

std::vector<Case> cases() {
    return {
            {{2, 3, 7}, {4, 3, 3}, conv_param({1}, {0}, {1})},
            {{1, 4, 11}, {6, 2, 2}, conv_param({3}, {2}, {2}, 2, true)},
            {{2, 2, 5, 5}, {3, 2, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            {{1, 6, 7, 5}, {4, 3, 3, 2}, conv_param({2, 1}, {1, 0}, {1, 2}, 2)},
            {{2, 3, 6, 7}, {3, 1, 2, 3}, conv_param({2, 3}, {0, 2}, {2, 1}, 3, true)},
            {{1, 2, 4, 5, 3}, {2, 2, 2, 3, 2}, conv_param({1, 2, 1}, {1, 0, 1}, {1, 1, 2})},
            {{2, 4, 3, 4, 5},
             {4, 2, 3, 2, 2},
             conv_param({2, 1, 2}, {1, 1, 0}, {1, 2, 1}, 2, true)},
    };
}

TEST(ConvolutionForward, HandComputed2D) {
    Conv c;
    auto x = HostTensor::from({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    auto w = HostTensor::from({1, 1, 2, 2}, {1, 2, 3, 4});
    EXPECT_TRUE(tensors_near(c.fwd(x, w, conv_param({1, 1}, {0, 0}, {1, 1})),
                             HostTensor::from({1, 1, 2, 2}, {37, 47, 67, 77}), 0));
    // CONVOLUTION flips the kernel to {4, 3, 2, 1}.
    EXPECT_TRUE(tensors_near(c.fwd(x, w, conv_param({1, 1}, {0, 0}, {1, 1}, 1, true)),
                             HostTensor::from({1, 1, 2, 2}, {23, 33, 53, 63}), 0));
    // Padded by one, stride two: the corner windows see one, two or four real elements.
    EXPECT_TRUE(tensors_near(c.fwd(x, w, conv_param({2, 2}, {1, 1}, {1, 1})),
                             HostTensor::from({1, 1, 2, 2}, {4, 18, 36, 77}), 0));
}

TEST(ConvolutionForward, HandComputed1DDilatedAndGrouped) {
    Conv c;
    auto x = HostTensor::from({1, 1, 5}, {1, 2, 3, 4, 5});
    auto w = HostTensor::from({1, 1, 2}, {1, 10});
    // out[i] = x[i] + 10 * x[i + 2]
    EXPECT_TRUE(tensors_near(c.fwd(x, w, conv_param({1}, {0}, {2})),
                             HostTensor::from({1, 1, 3}, {31, 42, 53}), 0));
    // Two groups of one channel each: each output channel sees only its own input channel.
    auto xg = HostTensor::from({1, 2, 1, 1}, {3, 5});
    auto wg = HostTensor::from({2, 1, 1, 1}, {2, 7});
    EXPECT_TRUE(tensors_near(c.fwd(xg, wg, conv_param({1, 1}, {0, 0}, {1, 1}, 2)),
                             HostTensor::from({1, 2, 1, 1}, {6, 35}), 0));
}

TEST(ConvolutionForward, MatchesIm2colMatmulIn1D2D3D) {
    Conv c;
    std::mt19937 rng(1);
    for (auto& cs : cases()) {
        auto x = random_tensor(shape_of(cs.src), rng);
        auto w = random_tensor(shape_of(cs.filter), rng);
        EXPECT_TRUE(tensors_near(c.fwd(x, w, cs.p), conv_im2col(x, w, cs.p), 1e-5))
                << to_string(cs.p) << " src " << x.layout().to_string();
    }
}

TEST(ConvolutionForward, LargishPrimeShapesMatchIm2col) {
    Conv c;
    std::mt19937 rng(2);
    auto x = random_tensor({2, 8, 17, 19}, rng);
    auto w = random_tensor({16, 8, 3, 3}, rng);
    auto p = conv_param({2, 1}, {1, 1}, {1, 1});
    EXPECT_TRUE(tensors_near(c.fwd(x, w, p), conv_im2col(x, w, p), 1e-5));
}

TEST(ConvolutionForward, EmptyAndSizeOne) {
    Conv c;
    std::mt19937 rng(3);
    auto p = conv_param({1, 1}, {0, 0}, {1, 1});
    auto y = c.fwd(HostTensor({0, 3, 4, 4}, dtype::Float32), random_tensor({2, 3, 3, 3}, rng), p);
    EXPECT_TRUE(y.shape().eq_shape(TensorShape{0, 2, 2, 2}));
    auto y0 = c.fwd(random_tensor({2, 3, 4, 4}, rng), HostTensor({0, 3, 3, 3}, dtype::Float32), p);
    EXPECT_TRUE(y0.shape().eq_shape(TensorShape{2, 0, 2, 2}));
    auto x1 = HostTensor::from({1, 1, 1, 1}, {3});
    auto w1 = HostTensor::from({1, 1, 1, 1}, {-2});
    EXPECT_TRUE(tensors_near(c.fwd(x1, w1, p), HostTensor::from({1, 1, 1, 1}, {-6}), 0));
    // A 1x1 input padded to 3x3 under a 3x3 kernel: only the centre tap sees data.
    auto w3 = random_tensor({1, 1, 3, 3}, rng);
    auto y3 = c.fwd(x1, w3, conv_param({1, 1}, {1, 1}, {1, 1}));
    EXPECT_NEAR(y3.values()[0], 3 * w3.at({0, 0, 1, 1}), 1e-6);
}

TEST(ConvolutionForward, StridedAndBroadcastLayouts) {
    auto h = Handle::make_naive();
    for (auto& cs : cases()) {
        Checker<ConvolutionForward>(h.get()).set_param(cs.p).set_noncontiguous(true).execs(
                {shape_of(cs.src), shape_of(cs.filter)});
    }
    auto p = conv_param({1, 2}, {1, 0}, {1, 1});
    // src broadcast along batch and a transposed, negatively strided filter.
    TensorLayout src({3, 2, 5, 6}, {0, 30, 6, 1}, dtype::Float32);
    TensorLayout filter({4, 2, 3, 2}, {1, 4, -16, 8}, dtype::Float32);
    TensorLayout filter_fixed = filter;
    filter_fixed.stride = {1, 4, 16, 8};
    Checker<ConvolutionForward>(h.get()).set_param(p).exec_layouts({src, filter});
    Checker<ConvolutionForward>(h.get()).set_param(p).exec_layouts({src, filter_fixed});
}

TEST(ConvolutionForward, WritesIntoAStridedOutputView) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<ConvolutionForward>();
    op->param() = conv_param({1}, {0}, {1});
    auto x = HostTensor::from({1, 1, 4}, {1, 2, 3, 4});
    auto w = HostTensor::from({1, 1, 2}, {1, 1});
    std::vector<float> buf(6, -1.f);
    TensorND dst(buf.data(), TensorLayout({1, 1, 3}, {6, 6, 2}, dtype::Float32));
    TensorND in[] = {x.nd(), w.nd()};
    op->exec(in, {&dst, 1});
    EXPECT_EQ(buf, (std::vector<float>{3, -1, 5, -1, 7, -1}));
}

TEST(ConvolutionForward, LowPrecisionDtypesWithinTolerance) {
    Conv c;
    std::mt19937 rng(4);
    auto p = conv_param({1, 1}, {1, 1}, {1, 1}, 2);
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto x = random_tensor({2, 4, 5, 6}, rng, dt);
        auto w = random_tensor({4, 2, 3, 3}, rng, dt);
        auto y = c.fwd(x, w, p);
        EXPECT_EQ(y.dtype(), dt);
        // Same (already rounded) values in float32: only the output rounding differs.
        auto want = c.fwd(as_dtype(x, dtype::Float32), as_dtype(w, dtype::Float32), p);
        EXPECT_TRUE(tensors_near(as_dtype(y, dtype::Float32), want, default_epsilon(dt)))
                << dt.name();
        Checker<ConvolutionForward>(c.handle.get())
                .set_param(p)
                .set_dtype(0, dt)
                .set_dtype(1, dt)
                .set_noncontiguous(true)
                .execs({{2, 4, 5, 6}, {4, 2, 3, 3}});
    }
}

TEST(ConvolutionForward, BadDtypesAreDTypeErrors) {
    Conv c;
    auto p = conv_param({1, 1}, {0, 0}, {1, 1});
    expect_error<DTypeError>(
            [&] {
                c.fwd(HostTensor({1, 1, 3, 3}, dtype::Int32),
                      HostTensor({1, 1, 2, 2}, dtype::Int32), p);
            },
            {"ConvolutionForward(", "int32", lstr({1, 1, 3, 3}, dtype::Int32)});
    expect_error<DTypeError>(
            [&] {
                c.fwd(HostTensor({1, 1, 3, 3}, dtype::Float32),
                      HostTensor({1, 1, 2, 2}, dtype::Float16), p);
            },
            {"ConvolutionForward(", "float16"});
}

TEST(ConvolutionForward, BadShapesAndParamsNameOpAndShapes) {
    Conv c;
    auto p = conv_param({1, 1}, {0, 0}, {1, 1});
    auto x = HostTensor({2, 4, 5, 5}, dtype::Float32);
    // Channel mismatch.
    expect_error<ShapeError>(
            [&] {
                c.fwd(x, HostTensor({3, 3, 3, 3}, dtype::Float32), p);
            },
            {"ConvolutionForward(", lstr({2, 4, 5, 5}), lstr({3, 3, 3, 3}), "channels"});
    // Group not dividing the channels.
    expect_error<ParamError>(
            [&] {
                c.fwd(x, HostTensor({3, 1, 3, 3}, dtype::Float32),
                      conv_param({1, 1}, {0, 0}, {1, 1}, 3));
            },
            {"ConvolutionForward(", "group=3", lstr({2, 4, 5, 5}), lstr({3, 1, 3, 3})});
    // Kernel larger than the padded input (dilation makes a 3x3 kernel span 7).
    expect_error<ShapeError>(
            [&] {
                c.fwd(x, HostTensor({1, 4, 3, 3}, dtype::Float32),
                      conv_param({1, 1}, {0, 0}, {3, 3}));
            },
            {"ConvolutionForward(", "larger than the padded input", lstr({2, 4, 5, 5}),
             lstr({1, 4, 3, 3})});
    // Param lists must have one entry per spatial dim.
    expect_error<ParamError>(
            [&] {
                c.fwd(HostTensor({1, 1, 5}, dtype::Float32), HostTensor({1, 1, 2}, dtype::Float32),
                      p);
            },
            {"ConvolutionForward(", "stride has 2 entries, expected 1"});
    expect_error<ParamError>(
            [&] {
                c.fwd(x, HostTensor({1, 4, 3, 3}, dtype::Float32),
                      conv_param({0, 1}, {0, 0}, {1, 1}));
            },
            {"ConvolutionForward(", "stride=[0,1]", "stride entries must be >= 1"});
    expect_error<ParamError>(
            [&] {
                c.fwd(x, HostTensor({1, 4, 3, 3}, dtype::Float32),
                      conv_param({1, 1}, {-1, 0}, {1, 1}));
            },
            {"padding entries must be >= 0"});
    expect_error<ParamError>(
            [&] {
                c.fwd(x, HostTensor({1, 4, 3, 3}, dtype::Float32),
                      conv_param({1, 1}, {0, 0}, {1, 1}, 0));
            },
            {"group must be >= 1"});
    // Rank: filter of another rank, and a 2-D src.
    expect_error<ShapeError>(
            [&] {
                c.fwd(x, HostTensor({1, 4, 3}, dtype::Float32), p);
            },
            {"ConvolutionForward(", lstr({1, 4, 3})});
    expect_error<ShapeError>(
            [&] {
                c.fwd(HostTensor({4, 5}, dtype::Float32), HostTensor({4, 5}, dtype::Float32), p);
            },
            {"ConvolutionForward(", lstr({4, 5})});
}

TEST(ConvolutionBackwardData, HandComputedTransposedConvolution) {
    Conv c;
    // conv_transpose of [1, 2] by [1, 1, 1] at stride 2: in = (2-1)*2 + 3 = 5.
    auto w = HostTensor::from({1, 1, 3}, {1, 1, 1});
    auto dy = HostTensor::from({1, 1, 2}, {1, 2});
    EXPECT_TRUE(tensors_near(c.bwd_data(w, dy, conv_param({2}, {0}, {1})),
                             HostTensor::from({1, 1, 5}, {1, 1, 3, 2, 2}), 0));
    // Padding crops the transposed result: in = (2-1)*2 - 2 + 3 = 3.
    EXPECT_TRUE(tensors_near(c.bwd_data(w, dy, conv_param({2}, {1}, {1})),
                             HostTensor::from({1, 1, 3}, {1, 3, 2}), 0));
    // Channels: grad has filter[1] * group channels.
    auto wg = HostTensor::from({2, 1, 1}, {2, 3});
    auto dyg = HostTensor::from({1, 2, 1}, {5, 7});
    EXPECT_TRUE(tensors_near(c.bwd_data(wg, dyg, conv_param({1}, {0}, {1}, 2)),
                             HostTensor::from({1, 2, 1}, {10, 21}), 0));
    EXPECT_TRUE(tensors_near(c.bwd_data(wg, dyg, conv_param({1}, {0}, {1}, 1)),
                             HostTensor::from({1, 1, 1}, {31}), 0));
}

TEST(ConvolutionBackwardData, PresetShapeRecoversFlooredInput) {
    Conv c;
    // A 6-long input under a 3-tap kernel at stride 2 gives 2 outputs, as does a 5-long one.
    auto w = HostTensor::from({1, 1, 3}, {1, 2, 3});
    auto dy = HostTensor::from({1, 1, 2}, {1, 10});
    auto p = conv_param({2}, {0}, {1});
    EXPECT_TRUE(c.bwd_data(w, dy, p).shape().eq_shape(TensorShape{1, 1, 5}));
    auto g6 = c.bwd_data(w, dy, p, {{1, 1, 6}});
    EXPECT_TRUE(tensors_near(g6, HostTensor::from({1, 1, 6}, {1, 2, 13, 20, 30, 0}), 0));
    expect_error<ShapeError>(
            [&] {
                c.bwd_data(w, dy, p, {{1, 1, 7}});
            },
            {"ConvolutionBackwardData(", lstr({1, 1, 2}), lstr({1, 1, 7})});
}

TEST(ConvolutionBackwardFilter, HandComputedAndPresetShape) {
    Conv c;
    // gw[t] = sum_o dy[o] * x[o + t]
    auto x = HostTensor::from({1, 1, 4}, {1, 2, 3, 4});
    auto dy = HostTensor::from({1, 1, 3}, {1, 0, -1});
    EXPECT_TRUE(tensors_near(c.bwd_filter(x, dy, conv_param({1}, {0}, {1})),
                             HostTensor::from({1, 1, 2}, {-2, -2}), 0));
    // Stride 2 over a 6-long input: kernels of 3 and 4 both give 2 outputs; 4 is deduced.
    auto x6 = HostTensor::from({1, 1, 6}, {1, 2, 3, 4, 5, 6});
    auto dy2 = HostTensor::from({1, 1, 2}, {1, 10});
    auto p = conv_param({2}, {0}, {1});
    EXPECT_TRUE(tensors_near(c.bwd_filter(x6, dy2, p),
                             HostTensor::from({1, 1, 4}, {31, 42, 53, 64}), 0));
    EXPECT_TRUE(tensors_near(c.bwd_filter(x6, dy2, p, {{1, 1, 3}}),
                             HostTensor::from({1, 1, 3}, {31, 42, 53}), 0));
    expect_error<ShapeError>(
            [&] {
                c.bwd_filter(x6, dy2, p, {{1, 1, 5}});
            },
            {"ConvolutionBackwardFilter(", lstr({1, 1, 2}), lstr({1, 1, 5})});
}

TEST(ConvolutionBackward, MatchFiniteDifferencesOfForward) {
    Conv c;
    std::mt19937 rng(5);
    for (auto& cs : cases()) {
        auto x = random_tensor(shape_of(cs.src), rng);
        auto w = random_tensor(shape_of(cs.filter), rng);
        auto y = c.fwd(x, w, cs.p);
        auto dy = random_tensor(y.shape(), rng);
        auto f = [&](const std::vector<HostTensor>& in) { return c.fwd(in[0], in[1], cs.p); };
        // Forward is linear in each argument, so central differences are exact up to rounding.
        EXPECT_TRUE(tensors_near(c.bwd_data(w, dy, cs.p, {x.shape()}),
                                 numeric_grad(f, {x, w}, 0, dy), 2e-3))
                << to_string(cs.p);
        EXPECT_TRUE(tensors_near(c.bwd_filter(x, dy, cs.p, {w.shape()}),
                                 numeric_grad(f, {x, w}, 1, dy), 2e-3))
                << to_string(cs.p);
    }
}

TEST(ConvolutionBackward, AdjointIdentity) {
    Conv c;
    std::mt19937 rng(6);
    for (auto& cs : cases()) {
        auto x = random_tensor(shape_of(cs.src), rng);
        auto w = random_tensor(shape_of(cs.filter), rng);
        auto y = c.fwd(x, w, cs.p);
        auto dy = random_tensor(y.shape(), rng);
        double lhs = dot(y, dy);
        double via_data = dot(x, c.bwd_data(w, dy, cs.p, {x.shape()}));
        double via_filter = dot(w, c.bwd_filter(x, dy, cs.p, {w.shape()}));
        EXPECT_NEAR(lhs, via_data, 1e-4 * (1 + std::abs(lhs))) << to_string(cs.p);
        EXPECT_NEAR(lhs, via_filter, 1e-4 * (1 + std::abs(lhs))) << to_string(cs.p);
    }
}

TEST(ConvolutionBackward, StridedLayoutsAndLowPrecision) {
    auto h = Handle::make_naive();
    std::mt19937 rng(7);
    Conv c;
    for (auto& cs : cases()) {
        auto x = HostTensor(shape_of(cs.src), dtype::Float32);
        auto y = c.fwd(x, random_tensor(shape_of(cs.filter), rng), cs.p);
        Checker<ConvolutionBackwardData>(h.get())
                .set_param(cs.p)
                .set_noncontiguous(true)
                .set_output_shapes({x.shape()})
                .execs({shape_of(cs.filter), y.shape()});
        Checker<ConvolutionBackwardFilter>(h.get())
                .set_param(cs.p)
                .set_noncontiguous(true)
                .set_output_shapes({shape_of(cs.filter)})
                .execs({x.shape(), y.shape()});
    }
    auto p = conv_param({2, 1}, {1, 1}, {1, 2}, 2);
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto x = random_tensor({2, 4, 7, 6}, rng, dt);
        auto w = random_tensor({2, 2, 3, 2}, rng, dt);
        auto dy = random_tensor(c.fwd(x, w, p).shape(), rng, dt);
        auto f32 = [](const HostTensor& t) { return as_dtype(t, dtype::Float32); };
        auto gx = c.bwd_data(w, dy, p, {x.shape()});
        auto gw = c.bwd_filter(x, dy, p, {w.shape()});
        EXPECT_EQ(gx.dtype(), dt);
        EXPECT_TRUE(tensors_near(f32(gx), c.bwd_data(f32(w), f32(dy), p, {x.shape()}),
                                 default_epsilon(dt)));
        EXPECT_TRUE(tensors_near(f32(gw), c.bwd_filter(f32(x), f32(dy), p, {w.shape()}),
                                 default_epsilon(dt)));
    }
}

TEST(ConvolutionBackward, EmptyBatchAndBadInputs) {
    Conv c;
    std::mt19937 rng(8);
    auto p = conv_param({1, 1}, {0, 0}, {1, 1});
    auto w = random_tensor({2, 3, 2, 2}, rng);
    auto gx = c.bwd_data(w, HostTensor({0, 2, 3, 3}, dtype::Float32), p);
    EXPECT_TRUE(gx.shape().eq_shape(TensorShape{0, 3, 4, 4}));
    // An empty batch contributes nothing to the filter gradient.
    auto gw = c.bwd_filter(HostTensor({0, 3, 4, 4}, dtype::Float32),
                           HostTensor({0, 2, 3, 3}, dtype::Float32), p);
    EXPECT_TRUE(tensors_near(gw, HostTensor({2, 3, 2, 2}, dtype::Float32), 0));

    expect_error<ShapeError>(
            [&] {
                c.bwd_data(w, HostTensor({1, 5, 3, 3}, dtype::Float32), p);
            },
            {"ConvolutionBackwardData(", lstr({2, 3, 2, 2}), lstr({1, 5, 3, 3})});
    expect_error<DTypeError>(
            [&] {
                c.bwd_data(w, HostTensor({1, 2, 3, 3}, dtype::Int8), p);
            },
            {"ConvolutionBackwardData(", "int8"});
    expect_error<ParamError>(
            [&] {
                c.bwd_data(w, HostTensor({1, 2, 3, 3}, dtype::Float32), conv_param({1}, {0}, {1}));
            },
            {"ConvolutionBackwardData(", "stride has 1 entries, expected 2"});
    expect_error<ParamError>(
            [&] {
                c.bwd_filter(HostTensor({1, 3, 4, 4}, dtype::Float32),
                             HostTensor({1, 2, 3, 3}, dtype::Float32),
                             conv_param({1, 1}, {0, 0}, {1, 1}, 2));
            },
            {"ConvolutionBackwardFilter(", "group 2", lstr({1, 3, 4, 4})});
    // diff larger than any kernel could produce from this src.
    expect_error<ShapeError>(
            [&] {
                c.bwd_filter(HostTensor({1, 3, 4, 4}, dtype::Float32),
                             HostTensor({1, 2, 6, 6}, dtype::Float32), p);
            },
            {"ConvolutionBackwardFilter(", lstr({1, 3, 4, 4}), lstr({1, 2, 6, 6})});
}

}  // namespace

namespace {

TEST(ConvolutionBackwardData, WritesIntoAStridedOutputView) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<ConvolutionBackwardData>();
    op->param() = conv_param({1}, {0}, {1});
    auto w = HostTensor::from({1, 1, 2}, {1, 1});
    auto dy = HostTensor::from({1, 1, 2}, {3, 5});
    std::vector<float> buf(6, -1.f);
    // grad laid out back to front: element i lives at buf[4 - 2 i].
    TensorND grad(buf.data() + 4, TensorLayout({1, 1, 3}, {3, 3, -2}, dtype::Float32));
    TensorND in[] = {w.nd(), dy.nd()};
    op->exec(in, {&grad, 1});
    EXPECT_EQ(buf, (std::vector<float>{5, -1, 8, -1, 3, -1}));
}

}  // namespace
