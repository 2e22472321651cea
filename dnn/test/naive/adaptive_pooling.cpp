// AdaptivePoolingForward / AdaptivePoolingBackward on the naive handle: hand-computed windows
// (PyTorch's floor/ceil rule), the loop-nest reference, equivalence with fixed-window pooling when
// the sizes divide, finite differences and the adjoint identity.
#include "naive/pooling.h"
#include "neomeg/dnn/operators/pooling.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::AdaptivePooling::Mode;

param::AdaptivePooling ap_param(Mode mode, std::vector<int32_t> shape) {
    param::AdaptivePooling p;
    p.mode = mode;
    p.shape = std::move(shape);
    return p;
}

struct AdaptivePool {
    std::unique_ptr<Handle> handle = Handle::make_naive();
    HostTensor fwd(const HostTensor& x, const param::AdaptivePooling& p) {
        auto op = handle->create_operator<AdaptivePoolingForward>();
        op->param() = p;
        return std::move(run_op(*op, {x})[0]);
    }
    HostTensor bwd(const HostTensor& x, const HostTensor& y, const HostTensor& dy,
                   const param::AdaptivePooling& p) {
        auto op = handle->create_operator<AdaptivePoolingBackward>();
        op->param() = p;
        return std::move(run_op(*op, {x, y, dy})[0]);
    }
};

HostTensor reference(const HostTensor& x, const param::AdaptivePooling& p) {
    std::vector<size_t> out(p.shape.begin(), p.shape.end());
    return pool_reference(x, out, p.mode == Mode::MAX ? PoolRef::Max : PoolRef::AverageExclPad,
                          [&](size_t d, size_t o) {
                              // MegEngine's windows: one length at a stride of in / out; an
                              // output larger than its input (which MegEngine leaves
                              // undefined) covers [floor(o*in/out), ceil((o+1)*in/out)).
                              long in = long(x.shape()[2 + d]), n = long(out[d]), lo = long(o);
                              if (in >= n) {
                                  long stride = in / n, window = in - (n - 1) * stride;
                                  return std::pair<long, long>{lo * stride, lo * stride + window};
                              }
                              double ind = double(in), nd = double(n);
                              return std::pair<long, long>{
                                      long(std::floor(double(o) * ind / nd)),
                                      long(std::ceil(double(o + 1) * ind / nd))};
                          });
}

struct Case {
    TensorShape src;
    std::vector<int32_t> shape;
};

std::vector<Case> cases() {
    return {
            {{2, 3, 10}, {3}},      {{1, 2, 2}, {3}},       {{2, 2, 7, 5}, {3, 2}},
            {{1, 3, 5, 9}, {5, 4}}, {{1, 1, 4, 4}, {1, 1}}, {{1, 2, 5, 3, 7}, {2, 3, 3}},
    };
}

const Mode kModes[] = {Mode::MAX, Mode::AVERAGE};

TEST(AdaptivePoolingForward, HandComputedWindows) {
    AdaptivePool ap;
    // in 5 -> out 3, MegEngine's windows: stride 1, length 3: [0,3), [1,4), [2,5).
    auto x = HostTensor::from({1, 1, 5}, {1, 5, 2, 4, 3});
    EXPECT_TRUE(tensors_near(ap.fwd(x, ap_param(Mode::MAX, {3})),
                             HostTensor::from({1, 1, 3}, {5, 5, 4}), 0));
    EXPECT_TRUE(tensors_near(ap.fwd(x, ap_param(Mode::AVERAGE, {3})),
                             HostTensor::from({1, 1, 3}, {8.0 / 3, 11.0 / 3, 3}), 1e-6));
    // in 7 -> out 3: stride 2, length 3: [0,3), [2,5), [4,7) (they overlap at 2 and 4).
    auto x7 = HostTensor::from({1, 1, 7}, {1, 2, 3, 4, 5, 6, 7});
    EXPECT_TRUE(tensors_near(ap.fwd(x7, ap_param(Mode::AVERAGE, {3})),
                             HostTensor::from({1, 1, 3}, {2, 4, 6}), 1e-6));
    // in 2 -> out 3 (upsampling): windows [0,1), [0,2), [1,2).
    auto x2 = HostTensor::from({1, 1, 2}, {2, 6});
    EXPECT_TRUE(tensors_near(ap.fwd(x2, ap_param(Mode::AVERAGE, {3})),
                             HostTensor::from({1, 1, 3}, {2, 4, 6}), 0));
    // Global pooling of a 2x2 plane.
    auto x4 = HostTensor::from({1, 1, 2, 2}, {1, 2, 3, -4});
    EXPECT_TRUE(tensors_near(ap.fwd(x4, ap_param(Mode::AVERAGE, {1, 1})),
                             HostTensor::from({1, 1, 1, 1}, {0.5}), 0));
    EXPECT_TRUE(tensors_near(ap.fwd(x4, ap_param(Mode::MAX, {1, 1})),
                             HostTensor::from({1, 1, 1, 1}, {3}), 0));
}

TEST(AdaptivePoolingForward, MatchesReferenceAndFixedPoolingWhenSizesDivide) {
    AdaptivePool ap;
    std::mt19937 rng(31);
    for (auto& cs : cases())
        for (Mode m : kModes) {
            auto p = ap_param(m, cs.shape);
            auto x = random_tensor(cs.src, rng);
            EXPECT_TRUE(tensors_near(ap.fwd(x, p), reference(x, p), 1e-6)) << to_string(p);
        }
    // 6x8 -> 3x2 is pooling with window = stride = (2, 4).
    auto x = random_tensor({2, 3, 6, 8}, rng);
    auto pool = ap.handle->create_operator<PoolingForward>();
    pool->param().window = {2, 4};
    pool->param().stride = {2, 4};
    pool->param().padding = {0, 0};
    for (Mode m : kModes) {
        pool->param().mode =
                m == Mode::MAX ? param::Pooling::Mode::MAX : param::Pooling::Mode::AVERAGE;
        EXPECT_TRUE(tensors_near(ap.fwd(x, ap_param(m, {3, 2})), run_op(*pool, {x})[0], 1e-6));
    }
}

TEST(AdaptivePoolingForward, StridedLayoutsLowPrecisionAndEdgeShapes) {
    AdaptivePool ap;
    for (auto& cs : cases())
        for (Mode m : kModes)
            Checker<AdaptivePoolingForward>(ap.handle.get())
                    .set_param(ap_param(m, cs.shape))
                    .set_noncontiguous(true)
                    .execs({cs.src});
    Checker<AdaptivePoolingForward>(ap.handle.get())
            .set_param(ap_param(Mode::AVERAGE, {2, 3}))
            .exec_layouts({TensorLayout({2, 3, 5, 7}, {0, -35, 1, 5}, dtype::Float32)});
    std::mt19937 rng(32);
    for (DType dt : {dtype::Float16, dtype::BFloat16})
        for (Mode m : kModes) {
            auto p = ap_param(m, {3, 4});
            auto x = random_tensor({2, 3, 7, 9}, rng, dt);
            auto y = ap.fwd(x, p);
            EXPECT_EQ(y.dtype(), dt);
            EXPECT_TRUE(tensors_near(as_dtype(y, dtype::Float32),
                                     ap.fwd(as_dtype(x, dtype::Float32), p), default_epsilon(dt)));
        }
    EXPECT_TRUE(ap.fwd(HostTensor({0, 3, 4, 4}, dtype::Float32), ap_param(Mode::MAX, {2, 3}))
                        .shape()
                        .eq_shape(TensorShape{0, 3, 2, 3}));
    auto x1 = HostTensor::from({1, 1, 1, 1}, {7});
    EXPECT_TRUE(tensors_near(ap.fwd(x1, ap_param(Mode::AVERAGE, {2, 2})),
                             HostTensor::from({1, 1, 2, 2}, {7, 7, 7, 7}), 0));
    auto big = random_tensor({2, 7, 29, 31}, rng);
    auto pb = ap_param(Mode::AVERAGE, {5, 7});
    EXPECT_TRUE(tensors_near(ap.fwd(big, pb), reference(big, pb), 1e-6));
}

TEST(AdaptivePoolingBackward, MatchesFiniteDifferencesAndAdjoint) {
    AdaptivePool ap;
    std::mt19937 rng(33);
    for (auto& cs : cases())
        for (Mode m : kModes) {
            auto p = ap_param(m, cs.shape);
            auto x = distinct_values(cs.src, rng);
            auto y = ap.fwd(x, p);
            auto dy = random_tensor(y.shape(), rng);
            auto gx = ap.bwd(x, y, dy, p);
            auto f = [&](const std::vector<HostTensor>& in) { return ap.fwd(in[0], p); };
            EXPECT_TRUE(tensors_near(gx, numeric_grad(f, {x}, 0, dy), 1e-3)) << to_string(p);
            if (m == Mode::AVERAGE) {
                EXPECT_NEAR(dot(y, dy), dot(x, gx), 1e-4 * (1 + std::abs(dot(y, dy))));
            }
        }
    // Ties: the first maximum of each window takes its gradient.
    auto x = HostTensor::from({1, 1, 4}, {2, 2, 2, 2});
    auto p = ap_param(Mode::MAX, {2});
    auto dy = HostTensor::from({1, 1, 2}, {3, 5});
    EXPECT_TRUE(tensors_near(ap.bwd(x, ap.fwd(x, p), dy, p),
                             HostTensor::from({1, 1, 4}, {3, 0, 5, 0}), 0));
}

TEST(AdaptivePoolingBackward, StridedLayoutsAndLowPrecision) {
    AdaptivePool ap;
    for (auto& cs : cases())
        for (Mode m : kModes) {
            TensorShape ys = cs.src;
            for (size_t d = 0; d < cs.shape.size(); ++d)
                ys[2 + d] = size_t(cs.shape[d]);
            Checker<AdaptivePoolingBackward>(ap.handle.get())
                    .set_param(ap_param(m, cs.shape))
                    .set_noncontiguous(true)
                    .execs({cs.src, ys, ys});
        }
    std::mt19937 rng(34);
    for (DType dt : {dtype::Float16, dtype::BFloat16})
        for (Mode m : kModes) {
            auto p = ap_param(m, {3, 2});
            auto x = random_tensor({1, 2, 8, 5}, rng, dt);
            auto y = ap.fwd(x, p);
            auto dy = random_tensor(y.shape(), rng, dt);
            auto f32 = [](const HostTensor& t) { return as_dtype(t, dtype::Float32); };
            EXPECT_TRUE(tensors_near(f32(ap.bwd(x, y, dy, p)), ap.bwd(f32(x), f32(y), f32(dy), p),
                                     default_epsilon(dt)));
        }
}

TEST(AdaptivePooling, BadInputsNameOpAndShapes) {
    AdaptivePool ap;
    auto x = HostTensor({1, 2, 4, 4}, dtype::Float32);
    expect_error<ParamError>(
            [&] { ap.fwd(x, ap_param(Mode::MAX, {2})); },
            {"AdaptivePoolingForward(mode=MAX, shape=[2])", "shape has 1 entries, expected 2"});
    expect_error<ParamError>(
            [&] {
                ap.fwd(x, ap_param(Mode::MAX, {2, 0}));
            },
            {"AdaptivePoolingForward(", "shape entries must be >= 1"});
    expect_error<DTypeError>(
            [&] {
                ap.fwd(HostTensor({1, 2, 4, 4}, dtype::Uint8), ap_param(Mode::MAX, {2, 2}));
            },
            {"AdaptivePoolingForward(", "uint8", lstr({1, 2, 4, 4}, dtype::Uint8)});
    expect_error<ShapeError>(
            [&] {
                ap.fwd(HostTensor({1, 2, 0, 4}, dtype::Float32), ap_param(Mode::MAX, {2, 2}));
            },
            {"AdaptivePoolingForward(", lstr({1, 2, 0, 4})});
    expect_error<ShapeError>(
            [&] {
                ap.bwd(x, HostTensor({1, 2, 2, 2}, dtype::Float32),
                       HostTensor({1, 2, 2, 3}, dtype::Float32), ap_param(Mode::AVERAGE, {2, 2}));
            },
            {"AdaptivePoolingBackward(mode=AVERAGE", "diff " + lstr({1, 2, 2, 3}), "{1,2,2,2}",
             lstr({1, 2, 4, 4})});
}

}  // namespace
