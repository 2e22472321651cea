// ConvBias on the naive handle: hand-computed cases and a second formulation (ConvolutionForward,
// then bias, z and the nonlinearity applied elementwise in the test).
#include <cmath>

#include "naive/convolution.h"
#include "neomeg/dnn/operators/convolution.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Nonline = param::ConvBias::NonlineMode;

// An input of ndim 0: ConvBias treats it as absent.
HostTensor absent() {
    return HostTensor(TensorLayout(TensorShape{}, dtype::Float32));
}

HostTensor conv_bias(const HostTensor& x, const HostTensor& w, const HostTensor& b,
                     const HostTensor& z, const param::ConvBias& p) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<ConvBias>();
    op->param() = p;
    return std::move(run_op(*op, {x, w, b, z})[0]);
}

// The second formulation: plain convolution, then each step written out per element.
HostTensor reference(const HostTensor& x, const HostTensor& w, const HostTensor* b,
                     const HostTensor* z, const param::Convolution& cp, Nonline act) {
    auto h = Handle::make_naive();
    auto op = h->create_operator<ConvolutionForward>();
    op->param() = cp;
    auto y = std::move(run_op(*op, {x, w})[0]);
    auto v = y.values();
    const auto& s = y.shape();
    size_t inner = s.total_nr_elems() / std::max<size_t>(1, s[0] * s[1]);
    for (size_t i = 0; i < v.size(); ++i) {
        size_t oc = i / inner % s[1];
        if (b) {
            // Bias is either per channel (1, OC, 1...) or dst-shaped in these tests.
            v[i] += b->shape().total_nr_elems() == s[1] ? b->values()[oc] : b->values()[i];
        }
        if (z)
            v[i] += z->values()[i];
        double t = v[i];
        switch (act) {
            case Nonline::IDENTITY:
                break;
            case Nonline::RELU:
                t = t > 0 ? t : 0;
                break;
            case Nonline::SIGMOID:
                t = 1 / (1 + std::exp(-t));
                break;
            case Nonline::H_SWISH:
                t = t <= -3 ? 0 : t >= 3 ? t : t * (t + 3) / 6;
                break;
        }
        v[i] = t;
    }
    return HostTensor::from(s, v);
}

TensorShape channel_shape(size_t ndim, size_t oc) {
    TensorShape s;
    s.ndim = ndim;
    for (size_t i = 0; i < ndim; ++i)
        s[i] = 1;
    s[1] = oc;
    return s;
}

TEST(ConvBias, HandComputed) {
    auto x = HostTensor::from({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    auto w = HostTensor::from({1, 1, 2, 2}, {1, 2, 3, 4});  // conv gives 37 47 67 77
    auto b = HostTensor::from({1, 1, 1, 1}, {-45});
    auto z = HostTensor::from({1, 1, 2, 2}, {0, 0, 0, -20});
    auto cp = conv_param({1, 1}, {0, 0}, {1, 1});
    EXPECT_TRUE(tensors_near(conv_bias(x, w, b, z, conv_bias_param(cp, Nonline::IDENTITY)),
                             HostTensor::from({1, 1, 2, 2}, {-8, 2, 22, 12}), 0));
    EXPECT_TRUE(tensors_near(conv_bias(x, w, b, z, conv_bias_param(cp, Nonline::RELU)),
                             HostTensor::from({1, 1, 2, 2}, {0, 2, 22, 12}), 0));
    // h_swish(2) = 2 * 5 / 6; values beyond +-3 pass through or vanish.
    EXPECT_TRUE(tensors_near(conv_bias(x, w, b, z, conv_bias_param(cp, Nonline::H_SWISH)),
                             HostTensor::from({1, 1, 2, 2}, {0, 10.0 / 6, 22, 12}), 1e-6));
    auto x0 = HostTensor::from({1, 1, 1, 1}, {0});
    auto w0 = HostTensor::from({1, 1, 1, 1}, {1});
    EXPECT_TRUE(tensors_near(
            conv_bias(x0, w0, absent(), absent(), conv_bias_param(cp, Nonline::SIGMOID)),
            HostTensor::from({1, 1, 1, 1}, {0.5}), 0));
}

TEST(ConvBias, MatchesConvolutionThenEpilogue) {
    std::mt19937 rng(11);
    struct Case {
        TensorShape src, filter;
        param::Convolution p;
    };
    std::vector<Case> cases = {
            {{2, 3, 9}, {4, 3, 3}, conv_param({2}, {1}, {1})},
            {{2, 4, 6, 7}, {6, 2, 3, 2}, conv_param({1, 2}, {1, 0}, {2, 1}, 2, true)},
            {{1, 2, 4, 5, 5}, {3, 2, 2, 3, 3}, conv_param({1, 1, 2}, {0, 1, 1}, {1, 1, 1})},
    };
    for (auto& cs : cases) {
        auto x = random_tensor(cs.src, rng, dtype::Float32, -2, 2);
        auto w = random_tensor(cs.filter, rng, dtype::Float32, -2, 2);
        auto y0 = reference(x, w, nullptr, nullptr, cs.p, Nonline::IDENTITY);
        auto b = random_tensor(channel_shape(cs.src.ndim, cs.filter[0]), rng);
        auto bfull = random_tensor(y0.shape(), rng);
        auto z = random_tensor(y0.shape(), rng);
        for (auto act : {Nonline::IDENTITY, Nonline::RELU, Nonline::SIGMOID, Nonline::H_SWISH}) {
            auto p = conv_bias_param(cs.p, act);
            EXPECT_TRUE(tensors_near(conv_bias(x, w, b, z, p), reference(x, w, &b, &z, cs.p, act),
                                     1e-5))
                    << to_string(p);
            EXPECT_TRUE(tensors_near(conv_bias(x, w, bfull, absent(), p),
                                     reference(x, w, &bfull, nullptr, cs.p, act), 1e-5))
                    << to_string(p);
            EXPECT_TRUE(tensors_near(conv_bias(x, w, absent(), z, p),
                                     reference(x, w, nullptr, &z, cs.p, act), 1e-5))
                    << to_string(p);
        }
    }
}

TEST(ConvBias, StridedBroadcastAndLowPrecision) {
    auto h = Handle::make_naive();
    auto p = conv_bias_param(conv_param({1, 1}, {1, 1}, {1, 1}, 2), Nonline::H_SWISH);
    Checker<ConvBias>(h.get()).set_param(p).set_noncontiguous(true).execs(
            {{2, 4, 5, 6}, {6, 2, 3, 3}, {1, 6, 1, 1}, {2, 6, 5, 6}});
    // A per-channel bias expressed as a dst-shaped broadcast view (stride 0 except channels).
    TensorLayout bias({2, 6, 5, 6}, {0, 1, 0, 0}, dtype::Float32);
    TensorLayout z({2, 6, 5, 6}, {-180, 30, 6, 1}, dtype::Float32);
    Checker<ConvBias>(h.get()).set_param(p).exec_layouts(
            {TensorLayout({2, 4, 5, 6}, dtype::Float32), TensorLayout({6, 2, 3, 3}, dtype::Float32),
             bias, z});
    std::mt19937 rng(12);
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto x = random_tensor({2, 4, 5, 6}, rng, dt);
        auto w = random_tensor({6, 2, 3, 3}, rng, dt);
        auto b = random_tensor({1, 6, 1, 1}, rng, dt);
        auto zz = random_tensor({2, 6, 5, 6}, rng, dt);
        auto y = conv_bias(x, w, b, zz, p);
        EXPECT_EQ(y.dtype(), dt);
        auto f32 = [](const HostTensor& t) { return as_dtype(t, dtype::Float32); };
        EXPECT_TRUE(tensors_near(f32(y), conv_bias(f32(x), f32(w), f32(b), f32(zz), p),
                                 default_epsilon(dt)))
                << dt.name();
    }
}

TEST(ConvBias, EmptyBatch) {
    auto p = conv_bias_param(conv_param({1, 1}, {0, 0}, {1, 1}), Nonline::RELU);
    std::mt19937 rng(13);
    auto y = conv_bias(HostTensor({0, 2, 3, 3}, dtype::Float32), random_tensor({4, 2, 2, 2}, rng),
                       random_tensor({1, 4, 1, 1}, rng), HostTensor({0, 4, 2, 2}, dtype::Float32),
                       p);
    EXPECT_TRUE(y.shape().eq_shape(TensorShape{0, 4, 2, 2}));
}

TEST(ConvBias, BadInputsNameOpAndShapes) {
    auto p = conv_bias_param(conv_param({1, 1}, {0, 0}, {1, 1}), Nonline::RELU);
    auto x = HostTensor({1, 2, 4, 4}, dtype::Float32);
    auto w = HostTensor({3, 2, 3, 3}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                conv_bias(x, w, HostTensor({1, 4, 1, 1}, dtype::Float32), absent(), p);
            },
            {"ConvBias(nonlineMode=RELU", "bias " + lstr({1, 4, 1, 1}), "{1,3,2,2}"});
    expect_error<ShapeError>([&] { conv_bias(x, w, HostTensor({3}, dtype::Float32), absent(), p); },
                             {"ConvBias(", lstr({3})});
    expect_error<ShapeError>(
            [&] {
                conv_bias(x, w, absent(), HostTensor({1, 3, 2, 3}, dtype::Float32), p);
            },
            {"ConvBias(", "z " + lstr({1, 3, 2, 3}), "{1,3,2,2}"});
    expect_error<DTypeError>(
            [&] {
                conv_bias(x, w, HostTensor({1, 3, 1, 1}, dtype::Float16), absent(), p);
            },
            {"ConvBias(", "bias dtype float16"});
    expect_error<ShapeError>(
            [&] {
                conv_bias(x, HostTensor({3, 1, 3, 3}, dtype::Float32), absent(), absent(), p);
            },
            {"ConvBias(", lstr({1, 2, 4, 4}), lstr({3, 1, 3, 3})});
    expect_error<DTypeError>(
            [&] {
                conv_bias(HostTensor({1, 2, 4, 4}, dtype::Int8),
                          HostTensor({3, 2, 3, 3}, dtype::Int8), absent(), absent(), p);
            },
            {"ConvBias(", "int8"});
}

}  // namespace
