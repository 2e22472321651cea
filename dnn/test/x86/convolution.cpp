// ConvolutionForward, ConvolutionBackwardData and ConvolutionBackwardFilter on the x86 handle
// (oneDNN) against naive: batch and channels of 1 and primes, stride, padding, dilation, groups
// (depthwise too), padded and transposed views, padded outputs, a preset larger input for backward
// data (conv_transpose's output padding), and the cases that go to naive.
#include "naive/convolution.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// One 2-D geometry: src (N, C, H, W), filter (OC, C/group, KH, KW) and params.
struct Case {
    TensorShape src, filter;
    param::Convolution p;
};

TensorShape dst_shape(const Case& c) {
    TensorShape d{c.src[0], c.filter[0], 0, 0};
    for (size_t i = 0; i < 2; ++i) {
        size_t extent = static_cast<size_t>(c.p.dilation[i]) * (c.filter[2 + i] - 1) + 1;
        d[2 + i] = (c.src[2 + i] + 2 * static_cast<size_t>(c.p.padding[i]) - extent) /
                           static_cast<size_t>(c.p.stride[i]) +
                   1;
    }
    return d;
}

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
            {{4, 16, 14, 14}, {24, 16, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1})},
            {{1, 3, 17, 19}, {8, 3, 7, 7}, conv_param({2, 2}, {3, 3}, {1, 1})},
    };
}

}  // namespace

TEST_F(X86, ConvolutionForwardMatchesNaive) {
    for (const Case& k : cases()) {
        Checker<ConvolutionForward> c(handle.get());
        c.set_param(k.p).execs({k.src, k.filter});
        c.set_noncontiguous(true).execs({k.src, k.filter});
    }
}

TEST_F(X86, ConvolutionBackwardDataMatchesNaive) {
    for (const Case& k : cases()) {
        Checker<ConvolutionBackwardData> c(handle.get());
        c.set_param(k.p).set_output_shapes({k.src}).execs({k.filter, dst_shape(k)});
        c.set_noncontiguous(true).execs({k.filter, dst_shape(k)});
    }
}

TEST_F(X86, ConvolutionBackwardFilterMatchesNaive) {
    for (const Case& k : cases()) {
        Checker<ConvolutionBackwardFilter> c(handle.get());
        c.set_param(k.p).set_output_shapes({k.filter}).execs({k.src, dst_shape(k)});
        c.set_noncontiguous(true).execs({k.src, dst_shape(k)});
    }
}

TEST_F(X86, ConvolutionBackwardDataPresetLargerInput) {
    // Stride 2 skips the last row and column of a 10 x 10 input: the same diff comes from 9 x 9
    // (the deduced size) and from 10 x 10 (conv_transpose with output padding 1).
    Case k{{2, 3, 10, 10}, {4, 3, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1})};
    for (TensorShape grad : {TensorShape{2, 3, 9, 9}, TensorShape{2, 3, 10, 10}}) {
        Checker<ConvolutionBackwardData> c(handle.get());
        c.set_param(k.p).set_output_shapes({grad}).execs({k.filter, dst_shape(k)});
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
    TensorShape dst = dst_shape(k);
    TensorLayout dst_nhwc =
            TensorLayout({dst[0], dst[2], dst[3], dst[1]}, dtype::Float32).dimshuffle({0, 3, 1, 2});
    Checker<ConvolutionBackwardData> data(handle.get());
    data.set_param(k.p).set_output_shapes({k.src}).exec_layouts({filter, dst_nhwc});
    Checker<ConvolutionBackwardFilter> filt(handle.get());
    filt.set_param(k.p).set_output_shapes({k.filter}).exec_layouts({src, dst_nhwc});
}

TEST_F(X86, ConvolutionRunsOneDnn) {
    std::mt19937 rng(17);
    for (const Case& k : cases()) {
        HostTensor x(k.src, dtype::Float32), w(k.filter, dtype::Float32),
                dy(dst_shape(k), dtype::Float32);
        for (HostTensor* t : {&x, &w, &dy})
            fill_uniform(*t, -1, 1, rng);
        std::string what = param::to_string(k.p);
        EXPECT_TRUE(
                run_and_compare<ConvolutionForward>(*handle, k.p, {x, w}).starts_with("onednn:"))
                << what;
        EXPECT_TRUE(run_and_compare<ConvolutionBackwardData>(*handle, k.p, {w, dy}, {k.src})
                            .starts_with("onednn:"))
                << what;
        EXPECT_TRUE(run_and_compare<ConvolutionBackwardFilter>(*handle, k.p, {x, dy}, {k.filter})
                            .starts_with("onednn:"))
                << what;
    }
}

TEST_F(X86, ConvolutionEmptyBatchRunsNaive) {
    Case k{{0, 3, 5, 5}, {4, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})};
    HostTensor x(k.src, dtype::Float32), w(k.filter, dtype::Float32),
            dy(dst_shape(k), dtype::Float32);
    EXPECT_EQ(run_and_compare<ConvolutionForward>(*handle, k.p, {x, w}), "naive");
    EXPECT_EQ(run_and_compare<ConvolutionBackwardData>(*handle, k.p, {w, dy}, {k.src}), "naive");
    // No batch: the filter gradient is all zeros.
    EXPECT_EQ(run_and_compare<ConvolutionBackwardFilter>(*handle, k.p, {x, dy}, {k.filter}),
              "naive");
}

// What oneDNN has no kernel for goes to naive and gives naive's answer.
TEST_F(X86, ConvolutionUnsupportedCasesRunNaive) {
    std::mt19937 rng(19);
    auto random = [&](TensorShape s, DType dt = dtype::Float32) {
        HostTensor t(s, dt);
        fill_uniform(t, -1, 1, rng);
        return t;
    };
    // The flipped-kernel CONVOLUTION mode.
    auto flip = conv_param({1, 1}, {1, 0}, {1, 1}, 1, true);
    EXPECT_EQ(run_and_compare<ConvolutionForward>(*handle, flip,
                                                  {random({2, 3, 6, 5}), random({4, 3, 3, 2})}),
              "naive");
    // 1-D and 3-D.
    EXPECT_EQ(run_and_compare<ConvolutionForward>(*handle, conv_param({2}, {1}, {1}),
                                                  {random({2, 3, 9}), random({4, 3, 3})}),
              "naive");
    EXPECT_EQ(run_and_compare<ConvolutionBackwardFilter>(
                      *handle, conv_param({1, 1, 1}, {0, 0, 0}, {1, 1, 1}),
                      {random({1, 2, 4, 4, 4}), random({1, 3, 3, 3, 3})}, {{3, 2, 2, 2, 2}}),
              "naive");
    // float16.
    EXPECT_EQ(run_and_compare<ConvolutionForward>(
                      *handle, conv_param({1, 1}, {0, 0}, {1, 1}),
                      {random({1, 2, 5, 5}, dtype::Float16), random({3, 2, 3, 3}, dtype::Float16)},
                      {}, 2e-3),
              "naive");
}
