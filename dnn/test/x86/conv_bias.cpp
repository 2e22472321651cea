// ConvBias on the x86 handle (oneDNN convolution with bias, sum and eltwise post-ops; depthwise
// shapes by our loops and a sweep of bias, z and the nonlinearity) against naive: every
// nonlinearity with and without bias and residual z, 1-D to 3-D, groups, depthwise (a 1-channel
// image among them), dilation, stride, padding, both modes, padded inputs and outputs, bfloat16 and
// float16, and the bias shapes that go to naive.
#include "naive/convolution.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/param_base.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Nonline = param::ConvBias::NonlineMode;

constexpr Nonline kModes[] = {Nonline::IDENTITY, Nonline::RELU, Nonline::SIGMOID, Nonline::H_SWISH};

using Case = ConvCase;

std::vector<Case> cases() {
    return {
            {{1, 1, 1, 1}, {1, 1, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 3, 7, 7}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            {{3, 2, 11, 13}, {7, 2, 3, 2}, conv_param({2, 3}, {1, 0}, {1, 1}, 1, true)},
            {{2, 6, 8, 8}, {9, 2, 3, 3}, conv_param({1, 1}, {1, 1}, {2, 1}, 3)},
            {{2, 8, 9, 9}, {8, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 8)},
            // LeNet's first layer: one input channel, six filters (a depthwise multiplier of 6).
            {{3, 1, 14, 13}, {6, 1, 5, 5}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 4, 17}, {8, 1, 3}, conv_param({1}, {1}, {2}, 4, true)},
            {{5, 16, 13, 13}, {32, 16, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{3, 4, 23}, {6, 2, 5}, conv_param({1}, {2}, {3}, 2)},
            {{2, 4, 5, 7, 6},
             {6, 4, 3, 3, 2},
             conv_param({2, 1, 2}, {1, 1, 0}, {1, 1, 1}, 1, true)},
    };
}

// (1, OC, 1...): the per-channel bias.
TensorShape channel_shape(const TensorShape& dst) {
    TensorShape b = dst;
    for (size_t i = 0; i < b.ndim; ++i)
        if (i != 1)
            b[i] = 1;
    return b;
}

// Inputs src, filter, bias, z for the four combinations of bias and z present ({} is absent).
std::vector<std::vector<TensorShape>> input_sets(const Case& k) {
    TensorShape dst = conv_dst_shape(k), none{};
    return {{k.src, k.filter, channel_shape(dst), dst},
            {k.src, k.filter, channel_shape(dst), none},
            {k.src, k.filter, none, dst},
            {k.src, k.filter, none, none}};
}

}  // namespace

TEST_F(X86, ConvBiasMatchesNaive) {
    for (const Case& k : cases())
        for (Nonline act : kModes)
            for (const auto& shapes : input_sets(k)) {
                Checker<ConvBias> c(handle.get());
                // A range that puts values on both sides of RELU's and H_SWISH's kinks.
                c.set_param(conv_bias_param(k.p, act)).set_range(2, -3, 3).set_range(3, -3, 3);
                c.execs(shapes);
                // Padded inputs and outputs with all four inputs present.
                if (shapes[3].ndim != 0 && shapes[2].ndim != 0)
                    c.set_noncontiguous(true).execs(shapes);
            }
}

// Pointwise shapes on both sides of conv_common.h's kMinPointwiseGemmPixels (120 and 128 pixels),
// at one and two threads: bias, residual and nonlinearity are naive's whichever layout the forward
// runs in, on contiguous and on padded tensors.
TEST_F(X86, ConvBiasPointwiseBothSidesOfTheGemmBound) {
    for (int threads : {1, 2}) {
        ScopedOmpThreads scope(threads);
        for (const TensorShape& src : {TensorShape{2, 19, 8, 15}, TensorShape{2, 19, 8, 16}})
            for (Nonline act : kModes) {
                Case k{src, {16, 19, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})};
                for (const auto& shapes : input_sets(k)) {
                    Checker<ConvBias> c(handle.get());
                    c.set_param(conv_bias_param(k.p, act)).set_range(2, -3, 3).set_range(3, -3, 3);
                    c.execs(shapes);
                    if (shapes[3].ndim != 0 && shapes[2].ndim != 0)
                        c.set_noncontiguous(true).execs(shapes);
                }
            }
    }
}

TEST_F(X86, ConvBiasLowPrecisionMatchesNaive) {
    for (DType dt : {DType(dtype::BFloat16), DType(dtype::Float16)})
        for (const Case& k : cases())
            for (Nonline act : kModes) {
                Checker<ConvBias> c(handle.get());
                c.set_param(conv_bias_param(k.p, act));
                for (size_t i = 0; i < 4; ++i)
                    c.set_dtype(i, dt);
                c.execs(input_sets(k)[0]);
                // Padded, with bias and z present: every operand is staged and converted.
                c.set_noncontiguous(true).execs(input_sets(k)[0]);
            }
}

// A depthwise shape (a group per input channel: 1-D or 2-D, float32, contiguous) runs our loops,
// every other case oneDNN's primitive; a padded depthwise dst goes to oneDNN too.
TEST_F(X86, ConvBiasRunsOneDnnOrDepthwiseLoops) {
    std::mt19937 rng(23);
    for (const Case& k : cases())
        for (Nonline act : kModes) {
            auto shapes = input_sets(k)[0];
            std::vector<HostTensor> in;
            for (const TensorShape& s : shapes)
                in.push_back(random_tensor(s, rng));
            const bool depthwise = k.p.group == k.src[1] && k.src.ndim <= 4;
            std::string impl = run_and_compare<ConvBias>(*handle, conv_bias_param(k.p, act), in);
            EXPECT_TRUE(depthwise ? impl == "depthwise:hwy" : impl.starts_with("onednn:"))
                    << param::to_string(k.p) << ": " << impl;
        }
}

// A bias of dst's shape or one shared by every channel is not the primitive's per-channel bias:
// those go to naive, as does an empty batch.
TEST_F(X86, ConvBiasOtherBiasShapesRunNaive) {
    std::mt19937 rng(29);
    Case k{{2, 3, 6, 5}, {4, 3, 3, 2}, conv_param({1, 1}, {1, 0}, {1, 1})};
    TensorShape dst = conv_dst_shape(k);
    auto p = conv_bias_param(k.p, Nonline::RELU);
    for (TensorShape bias : {dst, TensorShape{1, 1, 1, 1}}) {
        std::vector<HostTensor> in{random_tensor(k.src, rng), random_tensor(k.filter, rng),
                                   random_tensor(bias, rng), random_tensor(dst, rng)};
        EXPECT_EQ(run_and_compare<ConvBias>(*handle, p, in), "naive") << bias.to_string();
    }
    TensorShape src0 = k.src, dst0 = dst;
    src0[0] = dst0[0] = 0;
    std::vector<HostTensor> empty{HostTensor(src0, dtype::Float32), random_tensor(k.filter, rng),
                                  random_tensor(channel_shape(dst), rng),
                                  HostTensor(dst0, dtype::Float32)};
    EXPECT_EQ(run_and_compare<ConvBias>(*handle, p, empty), "naive");
}

// The residual is reread on every call (it is copied into dst's buffer before the convolution
// adds to it), and dst may be written over z's old values: a second call with a new z.
TEST_F(X86, ConvBiasResidualChangesBetweenCalls) {
    std::mt19937 rng(31);
    Case k{{2, 16, 9, 9}, {16, 16, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})};
    TensorShape dst = conv_dst_shape(k);
    auto p = conv_bias_param(k.p, Nonline::RELU);
    auto op = handle->create_operator<ConvBias>();
    op->param() = p;
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<ConvBias>();
    ref->param() = p;
    std::vector<HostTensor> in{random_tensor(k.src, rng), random_tensor(k.filter, rng),
                               random_tensor(channel_shape(dst), rng), random_tensor(dst, rng)};
    for (int call = 0; call < 2; ++call) {
        EXPECT_TRUE(tensors_near(run_op(*op, in)[0], run_op(*ref, in)[0], 1e-4));
        in[3] = random_tensor(dst, rng, dtype::Float32, -3, 3);
    }
}
