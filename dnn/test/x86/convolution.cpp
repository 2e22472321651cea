// ConvolutionForward, ConvolutionBackwardData and ConvolutionBackwardFilter on the x86 handle
// (oneDNN) against naive: 1-D, 2-D and 3-D, both modes (the flipped CONVOLUTION mode too), batch
// and channels of 1 and primes, stride, padding, dilation, groups (depthwise too), padded and
// transposed views, padded outputs, a preset larger input for backward data (conv_transpose's
// output padding), bfloat16 and float16, and the cases that go to naive.
#include "naive/convolution.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/param_base.h"
#include "src/x86/conv_common.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Case = ConvCase;

std::vector<Case> cases() {
    return {
            {{1, 1, 1, 1}, {1, 1, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{1, 1, 5, 5}, {1, 1, 3, 3}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 3, 7, 7}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            {{3, 2, 11, 13}, {7, 2, 3, 2}, conv_param({2, 3}, {1, 0}, {1, 1})},
            {{2, 3, 9, 8}, {4, 3, 3, 3}, conv_param({1, 2}, {2, 1}, {2, 3})},
            {{1, 6, 7, 5}, {4, 3, 3, 2}, conv_param({2, 1}, {1, 0}, {1, 2}, 2)},
            {{2, 6, 8, 8}, {9, 2, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 3)},
            {{2, 8, 9, 9}, {8, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 8)},  // depthwise
            {{5, 16, 13, 13}, {32, 16, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            // Pointwise on plain tensors, odd channels and widths, dilated (still pointwise), 1-D
            // and 3-D: below and at or above conv_common.h's kMinPointwiseGemmPixels per image,
            // where the input gradient goes from the blocked 1x1 kernel to the NCHW gemm one.
            {{2, 7, 5, 11}, {13, 7, 1, 1}, conv_param({1, 1}, {0, 0}, {2, 2})},
            {{3, 5, 17}, {9, 5, 1}, conv_param({1}, {0}, {1})},
            {{1, 3, 3, 4, 5}, {4, 3, 1, 1, 1}, conv_param({1, 1, 1}, {0, 0, 0}, {1, 1, 1})},
            {{3, 33, 1, 1}, {17, 33, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 19, 4, 4}, {35, 19, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 7, 8, 16}, {13, 7, 1, 1}, conv_param({1, 1}, {0, 0}, {2, 2})},
            {{2, 7, 13, 11}, {13, 7, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{3, 5, 131}, {9, 5, 1}, conv_param({1}, {0}, {1})},
            {{1, 3, 4, 6, 7}, {4, 3, 1, 1, 1}, conv_param({1, 1, 1}, {0, 0, 0}, {1, 1, 1})},
            {{4, 16, 14, 14}, {24, 16, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1})},
            {{1, 3, 17, 19}, {8, 3, 7, 7}, conv_param({2, 2}, {3, 3}, {1, 1})},
            {{2, 3, 9}, {4, 3, 3}, conv_param({2}, {1}, {1})},
            {{3, 4, 23}, {6, 2, 5}, conv_param({1}, {2}, {3}, 2)},
            {{1, 1, 1}, {1, 1, 1}, conv_param({1}, {0}, {1})},
            {{1, 2, 4, 4, 4}, {3, 2, 2, 2, 2}, conv_param({1, 1, 1}, {0, 0, 0}, {1, 1, 1})},
            {{2, 4, 5, 7, 6}, {6, 2, 3, 3, 2}, conv_param({2, 1, 2}, {1, 1, 0}, {1, 2, 1}, 2)},
    };
}

}  // namespace

TEST_F(X86, ConvolutionForwardMatchesNaive) {
    check_conv_forward(handle.get(), conv_both_modes(cases()));
}

TEST_F(X86, ConvolutionBackwardDataMatchesNaive) {
    check_conv_backward_data(handle.get(), conv_both_modes(cases()));
}

TEST_F(X86, ConvolutionBackwardFilterMatchesNaive) {
    check_conv_backward_filter(handle.get(), conv_both_modes(cases()));
}

TEST_F(X86, ConvolutionBackwardDataPresetLargerInput) {
    // Stride 2 skips the last row and column of a 10 x 10 input: the same diff comes from 9 x 9
    // (the deduced size) and from 10 x 10 (conv_transpose with output padding 1).
    Case k{{2, 3, 10, 10}, {4, 3, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1})};
    for (TensorShape grad : {TensorShape{2, 3, 9, 9}, TensorShape{2, 3, 10, 10}}) {
        Checker<ConvolutionBackwardData> c(handle.get());
        c.set_param(k.p).set_output_shapes({grad}).execs({k.filter, conv_dst_shape(k)});
    }
}

TEST_F(X86, ConvolutionStridedViews) {
    Case k{{2, 4, 6, 7}, {5, 4, 3, 3}, conv_param({1, 2}, {1, 1}, {1, 1})};
    TensorLayout nhwc({2, 6, 7, 4}, dtype::Float32);
    TensorLayout src = nhwc.dimshuffle({0, 3, 1, 2});  // NCHW view of an NHWC buffer
    TensorLayout hwio({3, 3, 4, 5}, dtype::Float32);
    TensorLayout filter = hwio.dimshuffle({3, 2, 0, 1});
    Checker<ConvolutionForward> fwd(handle.get());
    fwd.set_param(k.p).exec_layouts({src, filter});
    // A filter broadcast over output channels and a src reversed along W are staged dense.
    fwd.exec_layouts({TensorLayout(k.src, {168, 42, 7, -1}, dtype::Float32),
                      TensorLayout(k.filter, {0, 9, 3, 1}, dtype::Float32)});
    TensorShape dst = conv_dst_shape(k);
    TensorLayout dst_nhwc =
            TensorLayout({dst[0], dst[2], dst[3], dst[1]}, dtype::Float32).dimshuffle({0, 3, 1, 2});
    Checker<ConvolutionBackwardData> data(handle.get());
    data.set_param(k.p).set_output_shapes({k.src}).exec_layouts({filter, dst_nhwc});
    Checker<ConvolutionBackwardFilter> filt(handle.get());
    filt.set_param(k.p).set_output_shapes({k.filter}).exec_layouts({src, dst_nhwc});
}

// Low-precision dtypes against naive, which sums in double and rounds once; oneDNN sums in float32
// and rounds once, so the two differ by at most a rounding of the result, well inside the
// per-dtype tolerance. Where the CPU (or the oneDNN version) has no kernel for a dtype, the x86
// operator runs the float32 primitive between conversions, which rounds once too.
TEST_F(X86, ConvolutionLowPrecisionMatchesNaive) {
    for (DType dt : {DType(dtype::BFloat16), DType(dtype::Float16)}) {
        for (const Case& k : conv_both_modes(cases())) {
            Checker<ConvolutionForward> fwd(handle.get());
            fwd.set_param(k.p).set_dtype(0, dt).set_dtype(1, dt).execs({k.src, k.filter});
            Checker<ConvolutionBackwardData> data(handle.get());
            data.set_param(k.p).set_dtype(0, dt).set_dtype(1, dt).set_output_shapes({k.src}).execs(
                    {k.filter, conv_dst_shape(k)});
            Checker<ConvolutionBackwardFilter> filt(handle.get());
            filt.set_param(k.p)
                    .set_dtype(0, dt)
                    .set_dtype(1, dt)
                    .set_output_shapes({k.filter})
                    .execs({k.src, conv_dst_shape(k)});
        }
    }
}

// Every 16-bit convolution runs oneDNN (a 16-bit kernel, or the float32 one between
// conversions), never naive, whichever the CPU has; padded (strided) operands are staged first.
TEST_F(X86, ConvolutionLowPrecisionRunsOneDnn) {
    std::mt19937 rng(29);
    for (DType dt : {DType(dtype::BFloat16), DType(dtype::Float16)})
        for (const Case& k : {conv_both_modes(cases())[5], conv_both_modes(cases())[13],
                              conv_both_modes(cases())[20]}) {
            auto tensor = [&](const TensorShape& s) {
                HostTensor t(padded_layout(TensorLayout(s, dt)));
                fill_uniform(t, -1, 1, rng);
                return t;
            };
            double eps = default_epsilon(dt);
            EXPECT_TRUE(run_and_compare<ConvolutionForward>(
                                *handle, k.p, {tensor(k.src), tensor(k.filter)}, {}, eps)
                                .starts_with("onednn:"))
                    << dt.name() << " " << param::to_string(k.p);
            EXPECT_TRUE(run_and_compare<ConvolutionBackwardData>(
                                *handle, k.p, {tensor(k.filter), tensor(conv_dst_shape(k))},
                                {k.src}, eps)
                                .starts_with("onednn:"))
                    << dt.name() << " " << param::to_string(k.p);
            EXPECT_TRUE(run_and_compare<ConvolutionBackwardFilter>(
                                *handle, k.p, {tensor(k.src), tensor(conv_dst_shape(k))},
                                {k.filter}, eps)
                                .starts_with("onednn:"))
                    << dt.name() << " " << param::to_string(k.p);
        }
}

// The flipped filter is reversed on every call, so a second call with new filter values (an
// optimiser step in place) sees them.
TEST_F(X86, ConvolutionFlippedFilterUpdatedInPlace) {
    Case k{{2, 3, 7, 6}, {4, 3, 3, 2}, conv_param({1, 1}, {1, 0}, {1, 1}, 1, true)};
    std::mt19937 rng(5);
    HostTensor x = random_tensor(k.src, rng), w = random_tensor(k.filter, rng);
    auto op = handle->create_operator<ConvolutionForward>();
    op->param() = k.p;
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<ConvolutionForward>();
    ref->param() = k.p;
    for (int step = 0; step < 2; ++step) {
        EXPECT_TRUE(tensors_near(run_op(*op, {x, w})[0], run_op(*ref, {x, w})[0], 1e-4));
        EXPECT_TRUE(ran_onednn(*op));
        fill_uniform(w, -1, 1, rng);
    }
}

// Every case runs an x86 kernel (oneDNN, or the depthwise loops), none falls back to naive.
TEST_F(X86, ConvolutionRunsX86Kernel) {
    std::mt19937 rng(17);
    for (const Case& k : conv_both_modes(cases())) {
        HostTensor x(k.src, dtype::Float32), w(k.filter, dtype::Float32),
                dy(conv_dst_shape(k), dtype::Float32);
        for (HostTensor* t : {&x, &w, &dy})
            fill_uniform(*t, -1, 1, rng);
        std::string what = param::to_string(k.p);
        EXPECT_TRUE(run_and_compare<ConvolutionForward>(*handle, k.p, {x, w}) != "naive") << what;
        EXPECT_TRUE(run_and_compare<ConvolutionBackwardData>(*handle, k.p, {w, dy}, {k.src}) !=
                    "naive")
                << what;
        EXPECT_TRUE(run_and_compare<ConvolutionBackwardFilter>(*handle, k.p, {x, dy}, {k.filter}) !=
                    "naive")
                << what;
    }
}

TEST_F(X86, ConvolutionEmptyBatchRunsNaive) {
    Case k{{0, 3, 5, 5}, {4, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})};
    HostTensor x(k.src, dtype::Float32), w(k.filter, dtype::Float32),
            dy(conv_dst_shape(k), dtype::Float32);
    EXPECT_EQ(run_and_compare<ConvolutionForward>(*handle, k.p, {x, w}), "naive");
    EXPECT_EQ(run_and_compare<ConvolutionBackwardData>(*handle, k.p, {w, dy}, {k.src}), "naive");
    // No batch: the filter gradient is all zeros.
    EXPECT_EQ(run_and_compare<ConvolutionBackwardFilter>(*handle, k.p, {x, dy}, {k.filter}),
              "naive");
}

// oneDNN takes no empty tensor: those go to naive and give naive's answer.
TEST_F(X86, ConvolutionEmptyChannelsRunNaive) {
    std::mt19937 rng(19);
    Case k{{2, 0, 5, 5}, {4, 0, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})};
    HostTensor x(k.src, dtype::Float32), w(k.filter, dtype::Float32),
            dy = random_tensor(conv_dst_shape(k), rng);
    // No input channel: dst is all zeros.
    EXPECT_EQ(run_and_compare<ConvolutionForward>(*handle, k.p, {x, w}), "naive");
    EXPECT_EQ(run_and_compare<ConvolutionBackwardFilter>(*handle, k.p, {x, dy}, {k.filter}),
              "naive");
}

// Pointwise convolutions on both sides of conv_common.h's kMinPointwiseGemmPixels (127 and 128
// pixels in 1-D, 120 and 128 in 2-D, 126 and 128 in 3-D, 132) and, above it, of
// kMaxBlockedPointwiseChannels (32 and 33 channels, fewer in or out), at one and two threads, each
// pass on contiguous tensors, on padded inputs and outputs, and on an NHWC view: whatever layout
// the pass runs in, the results are naive's.
TEST_F(X86, ConvolutionPointwiseBothSidesOfTheGemmBound) {
    static_assert(x86::kMinPointwiseGemmPixels == 128 && x86::kMaxBlockedPointwiseChannels == 32,
                  "the shapes below straddle the bounds");
    const std::vector<Case> pointwise = {
            {{3, 17, 127}, {33, 17, 1}, conv_param({1}, {0}, {1})},
            {{3, 17, 128}, {33, 17, 1}, conv_param({1}, {0}, {1})},
            {{2, 19, 8, 15}, {16, 19, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 19, 8, 16}, {16, 19, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 16, 11, 12}, {5, 16, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 32, 8, 16}, {48, 32, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 48, 8, 16}, {32, 48, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 33, 8, 16}, {40, 33, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 40, 8, 16}, {33, 40, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 7, 3, 6, 7}, {9, 7, 1, 1, 1}, conv_param({1, 1, 1}, {0, 0, 0}, {1, 1, 1})},
            {{2, 7, 2, 8, 8}, {9, 7, 1, 1, 1}, conv_param({1, 1, 1}, {0, 0, 0}, {1, 1, 1})},
    };
    for (int threads : {1, 2}) {
        ScopedOmpThreads scope(threads);
        for (const Case& k : conv_both_modes(pointwise)) {
            check_conv_forward(handle.get(), {k});
            check_conv_backward_data(handle.get(), {k});
            check_conv_backward_filter(handle.get(), {k});
        }
        // The 2-D case above the bound with src (or diff) an NCHW view of NHWC memory and the
        // other activation contiguous.
        Case k = pointwise[3];
        const TensorShape dst = conv_dst_shape(k);
        auto nhwc_view = [](const TensorShape& s) {
            return TensorLayout({s[0], s[2], s[3], s[1]}, dtype::Float32).dimshuffle({0, 3, 1, 2});
        };
        TensorLayout filter(k.filter, dtype::Float32);
        Checker<ConvolutionForward>(handle.get())
                .set_param(k.p)
                .exec_layouts({nhwc_view(k.src), filter});
        Checker<ConvolutionBackwardData>(handle.get())
                .set_param(k.p)
                .set_output_shapes({k.src})
                .exec_layouts({filter, nhwc_view(dst)});
        Checker<ConvolutionBackwardFilter>(handle.get())
                .set_param(k.p)
                .set_output_shapes({k.filter})
                .exec_layouts({nhwc_view(k.src), TensorLayout(dst, dtype::Float32)});
    }
}
