// Eager tensors holding blocked values (tensor.h, blocked_dispatch.cpp): the plain accessors give
// the plain values and switch every copy to them; ops run with the feature on give the values
// they give with it off (the plain kernels), forward and backward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "grad_check.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/eager_blocked.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/norm.h"
#include "neomeg/op/defs/pooling.h"
#include "neomeg/op/defs/reduce.h"
#include "neomeg/op/defs/tensor_shape.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;
using grad_check::values;
using Mode = dnn::param::Elemwise::Mode;

namespace {

CompNode cpu() {
    return CompNode::load("cpu0");
}

std::vector<float> iota_values(size_t n, float scale) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<float>(static_cast<int>(i * 7 % 23) - 11) * scale;
    return v;
}

Tensor iota(const dnn::TensorShape& s, float scale = 0.25f) {
    auto v = iota_values(s.total_nr_elems(), scale);
    return Tensor::from_host(v.data(), s, dnn::dtype::Float32, cpu());
}

// x's value as a blocked tensor of block b (ChannelBlock run as an ordinary op).
Tensor blocked_of(const Tensor& x, uint32_t b) {
    dnn::param::ChannelBlock p;
    p.block = b;
    Tensor phys = imperative::apply(ops::ChannelBlock(p), {&x, 1})[0];
    return Tensor::from_blocked(phys, x.layout());
}

// Runs `f` with the blocked dispatch on and off; restores the setting.
template <class F>
auto on_and_off(F f) {
    const bool was = eager_blocked_enabled();
    set_eager_blocked(true);
    auto on = f();
    set_eager_blocked(false);
    auto off = f();
    set_eager_blocked(was);
    return std::make_pair(on, off);
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, float tol) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], b[i], tol * (1 + std::abs(b[i]))) << "element " << i;
}

size_t block() {
    return cpu().dnn_handle()->preferred_channel_block();
}

}  // namespace

// Channel counts below, at and past a block, not multiples of it; 1-D to 3-D; one element.
TEST(EagerBlockedTensor, PlainAccessorsGiveThePlainValues) {
    const std::vector<std::pair<dnn::TensorShape, uint32_t>> cases = {
            {{2, 3, 5, 4}, 8}, {{1, 13, 3}, 8},    {{2, 17, 2, 3, 2}, 16}, {{3, 6, 1, 1}, 8},
            {{1, 1, 1}, 8},    {{2, 16, 3, 3}, 8}, {{1, 13, 2, 2}, 3},
    };
    for (const auto& [shape, b] : cases) {
        SCOPED_TRACE(shape.to_string() + " block " + std::to_string(b));
        Tensor x = iota(shape);
        Tensor t = blocked_of(x, b);
        EXPECT_TRUE(t.valid());
        EXPECT_TRUE(t.is_blocked());
        EXPECT_TRUE(t.layout().eq_layout(x.layout()));
        EXPECT_EQ(t.comp_node(), cpu());
        EXPECT_EQ(t.blocked().layout().ndim, shape.ndim + 1);
        EXPECT_EQ(values(t), values(x));  // to_host
        EXPECT_FALSE(t.is_blocked());
        EXPECT_FALSE(t.blocked().valid());
        EXPECT_EQ(values(blocked_of(x, b).contiguous()), values(x));
        EXPECT_EQ(values(blocked_of(x, b).copy_to(cpu())), values(x));
        Tensor flat = blocked_of(x, b).view(
                dnn::TensorLayout({shape.total_nr_elems()}, dnn::dtype::Float32));
        EXPECT_EQ(values(flat), values(x));
    }
}

TEST(EagerBlockedTensor, CopiesShareTheValueAndItsPlainForm) {
    Tensor x = iota({2, 13, 3, 3});
    Tensor a = blocked_of(x, 8);
    Tensor b = a, c = a.detach();
    EXPECT_TRUE(b.is_blocked());
    const auto& blob = a.blob();  // materialises for every copy
    ASSERT_TRUE(blob);
    EXPECT_FALSE(b.is_blocked());
    EXPECT_EQ(b.blob(), blob);
    EXPECT_EQ(c.blob(), blob);
    EXPECT_EQ(a.offset(), 0);
    // A write through the plain form is seen by every copy (as with a plain tensor's storage).
    std::vector<float> v = values(x);
    v[5] = 123.f;
    cpu().copy_from_host(a.dnn_tensor().raw_ptr(), v.data(), v.size() * sizeof(float));
    EXPECT_EQ(values(b), v);
    EXPECT_EQ(values(c), v);
}

TEST(EagerBlockedTensor, ACopyAskingForTheBlockedFormAfterAnotherMaterialisedGetsThePlainOne) {
    Tensor x = iota({1, 9, 4});
    Tensor a = blocked_of(x, 8), b = a;
    (void)a.dnn_tensor();
    EXPECT_FALSE(b.blocked().valid());
    EXPECT_EQ(b.blob(), a.blob());
    EXPECT_EQ(values(b), values(x));
}

TEST(EagerBlockedTensor, EmptyShape) {
    Tensor x = Tensor::empty({0, 5, 3, 3}, dnn::dtype::Float32, cpu());
    Tensor phys = Tensor::empty({0, 1, 3, 3, 8}, dnn::dtype::Float32, cpu());
    Tensor t = Tensor::from_blocked(phys, x.layout());
    EXPECT_TRUE(values(t).empty());
    EXPECT_TRUE(t.layout().eq_layout(x.layout()));
}

TEST(EagerBlockedTensor, FromBlockedRejectsAMismatchedPair) {
    Tensor phys = Tensor::empty({2, 2, 3, 8}, dnn::dtype::Float32, cpu());
    EXPECT_THROW(Tensor::from_blocked(phys, dnn::TensorLayout({2, 13, 3, 3}, dnn::dtype::Float32)),
                 dnn::ShapeError);
    EXPECT_THROW(Tensor::from_blocked({}, dnn::TensorLayout({2, 13, 3}, dnn::dtype::Float32)),
                 dnn::ShapeError);
}

// The dispatch's rule, not a kernel's choice: a convolution of at least a block of output
// channels writes a blocked value when the handle prefers a block; fewer (LeNet's 6) stay plain.
TEST(EagerBlockedDispatch, ConvolutionOutputIsBlockedWhereTheRuleSays) {
    const bool was = eager_blocked_enabled();
    set_eager_blocked(true);
    for (size_t oc : {6, 8, 17}) {
        Tensor x = iota({2, 3, 6, 6}), w = iota({oc, 3, 3, 3}, 0.1f);
        dnn::param::Convolution p;
        p.padding = {1, 1};
        std::array<Tensor, 2> in{x, w};
        Tensor y = imperative::apply(ops::ConvolutionForward(p), in)[0];
        EXPECT_EQ(y.is_blocked(), block() != 0 && oc >= block()) << oc;
        EXPECT_EQ(y.shape().to_string(), dnn::TensorShape({2, oc, 6, 6}).to_string());
    }
    set_eager_blocked(was);
}

// conv -> bias add -> relu -> max pool -> conv (+ residual add) -> BatchNorm, with channel counts
// off the block, 1-D, 2-D and 3-D, forward and gradients of every input.
TEST(EagerBlockedDispatch, ForwardAndBackwardMatchThePlainRun) {
    struct Case {
        dnn::TensorShape src;
        size_t c1, c2;
        uint32_t group2;
    };
    const std::vector<Case> cases = {
            {{2, 3, 9, 8}, 13, 13, 1}, {{2, 5, 7, 6}, 16, 16, 16},  // depthwise
            {{2, 3, 11}, 17, 17, 1},   {{1, 4, 5, 4, 6}, 9, 9, 1},
            {{2, 8, 6, 6}, 16, 32, 2},  // groups of whole blocks of 8
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.src.to_string());
        const size_t sp = c.src.ndim - 2;
        auto run = [&] {
            dnn::TensorShape w1{c.c1, c.src[1]}, w2, bias{1, c.c1}, ch2{1, c.c2};
            for (size_t d = 0; d < sp; ++d) {
                w1[w1.ndim++] = 3;
                bias[bias.ndim++] = 1;
                ch2[ch2.ndim++] = 1;
            }
            w2 = {c.c2, c.c1 / c.group2};
            for (size_t d = 0; d < sp; ++d)
                w2[w2.ndim++] = 3;
            std::vector<Tensor> params{iota(w1, 0.05f), iota(bias, 0.1f), iota(w2, 0.03f),
                                       iota(ch2, 0.2f), iota(ch2, 0.3f)};
            Tensor x = iota(c.src, 0.5f);
            auto key = GradKey::make();
            key->attach(x);
            for (Tensor& p : params)
                key->attach(p);
            key->activate();
            dnn::param::Convolution cp;
            cp.padding = std::vector<int32_t>(sp, 1);
            cp.stride = std::vector<int32_t>(sp, 1);
            cp.dilation = std::vector<int32_t>(sp, 1);
            std::array<Tensor, 2> in1{x, params[0]};
            Tensor h = imperative::apply(ops::ConvolutionForward(cp), in1)[0];
            h = grad_check::ew(Mode::ADD, {h, params[1]});
            h = grad_check::ew(Mode::RELU, {h});
            if (sp == 2) {
                dnn::param::Pooling pp;
                pp.window = {2, 2};
                pp.stride = {1, 1};
                pp.padding = {0, 0};
                h = imperative::apply(ops::PoolingForward(pp), {&h, 1})[0];
            }
            dnn::param::Convolution cp2 = cp;
            cp2.group = c.group2;
            std::array<Tensor, 2> in2{h, params[2]};
            Tensor g = imperative::apply(ops::ConvolutionForward(cp2), in2)[0];
            if (c.c1 == c.c2)
                g = grad_check::ew(Mode::ADD, {g, h});
            dnn::param::BatchNorm bp;
            bp.fwd_mode = dnn::param::BatchNorm::FwdMode::TRAINING;
            std::vector<Tensor> bn_in{g, params[3], params[4], iota(ch2, 0.f), iota(ch2, 0.f)};
            // running statistics start at zero mean, var 0 + 1 = 1
            bn_in[4] = grad_check::ew(Mode::ADD, {bn_in[4], grad_check::make({1.f}, {1})});
            Tensor y = imperative::apply(ops::BatchNormForward(bp), bn_in)[0];
            y = grad_check::ew(Mode::MUL, {y, iota(y.shape(), 0.01f)});
            key->deactivate();
            std::vector<Tensor> ys{y}, wrt{x};
            for (Tensor& p : params)
                wrt.push_back(p);
            auto grads = key->backward(ys, {}, wrt);
            std::vector<std::vector<float>> out{values(y)};
            for (const Tensor& gr : grads)
                out.push_back(values(gr));
            return out;
        };
        auto [on, off] = on_and_off(run);
        ASSERT_EQ(on.size(), off.size());
        for (size_t i = 0; i < on.size(); ++i) {
            SCOPED_TRACE("output " + std::to_string(i));
            expect_near(on[i], off[i], 2e-4f);
        }
    }
}

// Pooling's backward on a blocked src runs on the blocked memory and gives a blocked gradient
// (the rule; on a handle that prefers no block both runs are plain) with the plain run's values:
// every mode, 1-D to 3-D, padded, overlapping and tiling windows, channel counts 13, 16 and 17,
// the gradient flowing on into the convolution's backward (of 16 input channels: a narrower
// input's data gradient runs plain and reads the gradient's plain form).
TEST(EagerBlockedDispatch, PoolingBackwardMatchesThePlainRunAndStaysBlocked) {
    using PMode = dnn::param::Pooling::Mode;
    struct Case {
        dnn::TensorShape src;
        size_t oc;
        std::vector<int32_t> window, stride, padding;
        bool blocked;  // a non-overlapping window of <= 4 elements runs plain (blocked_dispatch)
    };
    const std::vector<Case> cases = {
            {{2, 16, 11}, 13, {3}, {2}, {1}, true},
            {{2, 16, 8, 6}, 16, {2, 2}, {2, 2}, {0, 0}, false},
            {{2, 16, 8, 6}, 16, {2, 3}, {2, 3}, {0, 0}, true},
            {{2, 16, 9, 7}, 17, {3, 3}, {2, 2}, {1, 1}, true},
            {{1, 16, 4, 5, 6}, 13, {2, 3, 3}, {2, 2, 1}, {0, 1, 1}, true},
    };
    for (PMode mode : {PMode::MAX, PMode::AVERAGE, PMode::AVERAGE_COUNT_EXCLUDE_PADDING})
        for (const Case& c : cases) {
            SCOPED_TRACE(c.src.to_string() + " mode " + std::to_string(static_cast<int>(mode)));
            const size_t sp = c.src.ndim - 2;
            bool grad_blocked = false;
            auto run = [&] {
                dnn::TensorShape ws{c.oc, c.src[1]};
                for (size_t d = 0; d < sp; ++d)
                    ws[ws.ndim++] = 3;
                Tensor x = iota(c.src, 0.5f), w = iota(ws, 0.05f);
                auto key = GradKey::make();
                key->attach(x);
                key->attach(w);
                key->activate();
                dnn::param::Convolution cp;
                cp.padding = std::vector<int32_t>(sp, 1);
                cp.stride = std::vector<int32_t>(sp, 1);
                cp.dilation = std::vector<int32_t>(sp, 1);
                std::array<Tensor, 2> in{x, w};
                Tensor h = imperative::apply(ops::ConvolutionForward(cp), in)[0];
                dnn::param::Pooling pp;
                pp.mode = mode;
                pp.window = c.window;
                pp.stride = c.stride;
                pp.padding = c.padding;
                Tensor y = imperative::apply(ops::PoolingForward(pp), {&h, 1})[0];
                y = grad_check::ew(Mode::MUL, {y, iota(y.shape(), 0.01f)});
                key->deactivate();
                std::vector<Tensor> ys{y}, wrt{x, w, h};
                auto grads = key->backward(ys, {}, wrt);
                // The pooling's gradient is h's: blocked when the pooling ran blocked.
                grad_blocked = grads[2].is_blocked();
                return std::vector<std::vector<float>>{values(y), values(grads[0]),
                                                       values(grads[1]), values(grads[2])};
            };
            const bool was = eager_blocked_enabled();
            set_eager_blocked(true);
            auto on = run();
            // The convolution writes h blocked only with at least a block of output channels
            // (13 fill an AVX2 block of 8, not an AVX-512 block of 16).
            EXPECT_EQ(grad_blocked, c.blocked && block() != 0 && c.oc >= block());
            set_eager_blocked(false);
            auto off = run();
            EXPECT_FALSE(grad_blocked);
            set_eager_blocked(was);
            for (size_t i = 0; i < on.size(); ++i) {
                SCOPED_TRACE("output " + std::to_string(i));
                expect_near(on[i], off[i], 2e-4f);
            }
        }
}

// Elementwise ops with a scalar operand on a blocked input: where the channels fill their blocks
// any mode keeps the blocked form; with padding channels only those that keep the padding zero
// (a finite factor of MUL) do, the others run plain. Values match the plain run either way.
TEST(EagerBlockedDispatch, ScalarOperandsKeepTheBlockedFormWhereThePaddingStaysZero) {
    if (block() == 0)
        GTEST_SKIP() << "the handle prefers no channel block";
    const float inf = std::numeric_limits<float>::infinity();
    struct Case {
        Mode mode;
        float scalar;
        bool padded_blocked;  // the result stays blocked with padding channels
    };
    const std::vector<Case> cases = {{Mode::MUL, 0.5f, true},      {Mode::ADD, 1.f, false},
                                     {Mode::SUB, 0.25f, false},    {Mode::MAX, 0.1f, false},
                                     {Mode::TRUE_DIV, 2.f, false}, {Mode::MUL, inf, false},
                                     {Mode::POW, 2.f, false}};
    const size_t b = block();
    for (size_t ch : {b, 2 * b, b + 5})
        for (const Case& c : cases)
            for (bool scalar_first : {false, true}) {
                SCOPED_TRACE(std::to_string(ch) + " channels, mode " +
                             std::to_string(static_cast<int>(c.mode)));
                Tensor x = iota({2, ch, 3, 5});
                Tensor s = grad_check::make({c.scalar}, {1});
                Tensor want = grad_check::ew(c.mode, scalar_first ? std::vector<Tensor>{s, x}
                                                                  : std::vector<Tensor>{x, s});
                const bool was = eager_blocked_enabled();
                set_eager_blocked(true);
                Tensor xb = blocked_of(x, static_cast<uint32_t>(b));
                Tensor got = grad_check::ew(c.mode, scalar_first ? std::vector<Tensor>{s, xb}
                                                                 : std::vector<Tensor>{xb, s});
                set_eager_blocked(was);
                EXPECT_EQ(got.is_blocked(), ch % b == 0 || c.padded_blocked);
                auto g = values(got), w = values(want);
                ASSERT_EQ(g.size(), w.size());
                for (size_t i = 0; i < g.size(); ++i) {
                    if (!(std::isnan(g[i]) && std::isnan(w[i]))) {
                        ASSERT_FLOAT_EQ(g[i], w[i]) << "element " << i;
                    }
                }
            }
}

// Reduce on a blocked src along the batch or a spatial axis runs on the blocked tensor (every
// mode keeps the padding channels zero); the channel axis reads the plain form. A per-channel
// result (a bias gradient's last step) comes back plain, the others blocked. Values match the
// plain run.
TEST(EagerBlockedDispatch, ReduceAlongOtherAxesKeepsTheBlockedForm) {
    if (block() == 0)
        GTEST_SKIP() << "the handle prefers no channel block";
    using RMode = dnn::param::Reduce::Mode;
    const uint32_t b = static_cast<uint32_t>(block());
    for (size_t ch : {size_t(b), size_t(b) + 5})
        for (RMode mode :
             {RMode::SUM, RMode::SUM_SQR, RMode::PRODUCT, RMode::MIN, RMode::MAX, RMode::MEAN})
            for (int32_t axis : {0, 1, 2, 3, -1}) {
                SCOPED_TRACE(std::to_string(ch) + " channels, mode " +
                             std::to_string(static_cast<int>(mode)) + ", axis " +
                             std::to_string(axis));
                Tensor x = iota({3, ch, 4, 5}, 0.1f);
                dnn::param::Reduce p;
                p.mode = mode;
                p.axis = axis;
                Tensor want = imperative::apply(ops::Reduce(p), {&x, 1})[0];
                const bool was = eager_blocked_enabled();
                set_eager_blocked(true);
                Tensor xb = blocked_of(x, b);
                Tensor got = imperative::apply(ops::Reduce(p), {&xb, 1})[0];
                // Then the rest of a bias gradient: batch, height and width reduced in turn.
                dnn::param::Reduce q = p;
                Tensor whole = xb;
                for (int32_t a : {0, 2, 3}) {
                    q.axis = a;
                    whole = imperative::apply(ops::Reduce(q), {&whole, 1})[0];
                }
                set_eager_blocked(was);
                EXPECT_EQ(got.is_blocked(), axis != 1);
                EXPECT_FALSE(whole.is_blocked());
                expect_near(values(got), values(want), 1e-6f);
                Tensor ref = x;
                for (int32_t a : {0, 2, 3}) {
                    q.axis = a;
                    ref = imperative::apply(ops::Reduce(q), {&ref, 1})[0];
                }
                expect_near(values(whole), values(ref), 1e-6f);
            }
}
