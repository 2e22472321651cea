// Depthwise convolutions (group == input channels, a channel multiplier of 1 or more) on the x86
// handle against naive: forward, backward data and backward filter, both modes, 1-D and 2-D,
// strides, paddings larger than the window, dilations, widths below, at and off a vector's
// multiple, kernels of many taps, padded and NHWC views, and padded outputs.
#include "naive/convolution.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

struct Case {
    TensorShape src, filter;
    param::Convolution p;
};

TensorShape dst_shape(const Case& c) {
    TensorShape d = c.src;
    d[1] = c.filter[0];
    for (size_t i = 0; i + 2 < c.src.ndim; ++i) {
        size_t extent = static_cast<size_t>(c.p.dilation[i]) * (c.filter[2 + i] - 1) + 1;
        d[2 + i] = (c.src[2 + i] + 2 * static_cast<size_t>(c.p.padding[i]) - extent) /
                           static_cast<size_t>(c.p.stride[i]) +
                   1;
    }
    return d;
}

std::vector<Case> cases() {
    return {
            {{1, 1, 1, 1}, {1, 1, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1}, 1)},
            {{2, 3, 7, 7}, {3, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 3)},
            {{2, 4, 56, 56}, {4, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 4)},
            {{1, 5, 17, 33}, {5, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 5)},
            {{3, 2, 9, 70}, {6, 1, 3, 5}, conv_param({1, 1}, {1, 2}, {1, 1}, 2)},  // multiplier 3
            {{2, 8, 9, 9}, {8, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 8)},
            {{1, 3, 23, 40}, {6, 1, 5, 5}, conv_param({3, 2}, {2, 2}, {1, 1}, 3)},
            {{2, 2, 12, 31}, {2, 1, 3, 3}, conv_param({1, 1}, {2, 2}, {2, 3}, 2)},
            {{1, 2, 5, 6}, {4, 1, 2, 2}, conv_param({1, 1}, {3, 4}, {1, 1}, 2)},    // pad > window
            {{1, 2, 20, 21}, {2, 1, 9, 9}, conv_param({1, 1}, {4, 4}, {1, 1}, 2)},  // 81 taps
            {{2, 3, 4, 4}, {3, 1, 4, 4}, conv_param({1, 1}, {0, 0}, {1, 1}, 3)},    // 1 x 1 output
            {{1, 4, 3, 100}, {4, 1, 1, 7}, conv_param({1, 3}, {0, 3}, {1, 1}, 4)},
            {{2, 3, 37}, {3, 1, 5}, conv_param({1}, {2}, {1}, 3)},  // 1-D
            {{1, 2, 50}, {4, 1, 3}, conv_param({2}, {1}, {2}, 2)},
            {{3, 1, 19}, {2, 1, 4}, conv_param({1}, {5}, {1}, 1)},
    };
}

std::vector<Case> both_modes() {
    std::vector<Case> all;
    for (Case k : cases()) {
        all.push_back(k);
        k.p.mode = param::Convolution::Mode::CONVOLUTION;
        all.push_back(k);
    }
    return all;
}

}  // namespace

TEST_F(X86, DepthwiseForwardMatchesNaive) {
    for (const Case& k : both_modes()) {
        Checker<ConvolutionForward> c(handle.get());
        c.set_param(k.p).execs({k.src, k.filter});
        c.set_noncontiguous(true).execs({k.src, k.filter});
    }
}

TEST_F(X86, DepthwiseBackwardDataMatchesNaive) {
    for (const Case& k : both_modes()) {
        Checker<ConvolutionBackwardData> c(handle.get());
        c.set_param(k.p).set_output_shapes({k.src}).execs({k.filter, dst_shape(k)});
        c.set_noncontiguous(true).execs({k.filter, dst_shape(k)});
    }
}

TEST_F(X86, DepthwiseBackwardFilterMatchesNaive) {
    for (const Case& k : both_modes()) {
        Checker<ConvolutionBackwardFilter> c(handle.get());
        c.set_param(k.p).set_output_shapes({k.filter}).execs({k.src, dst_shape(k)});
        c.set_noncontiguous(true).execs({k.src, dst_shape(k)});
    }
}

// NCHW views of NHWC buffers (channels adjacent, W strided) and a transposed filter.
TEST_F(X86, DepthwiseStridedViews) {
    Case k{{2, 4, 6, 7}, {8, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 4)};
    TensorLayout src = TensorLayout({2, 6, 7, 4}, dtype::Float32).dimshuffle({0, 3, 1, 2});
    TensorLayout filter = TensorLayout({3, 3, 1, 8}, dtype::Float32).dimshuffle({3, 2, 0, 1});
    TensorShape dst = dst_shape(k);
    TensorLayout dst_nhwc =
            TensorLayout({dst[0], dst[2], dst[3], dst[1]}, dtype::Float32).dimshuffle({0, 3, 1, 2});
    Checker<ConvolutionForward> fwd(handle.get());
    fwd.set_param(k.p).exec_layouts({src, filter});
    fwd.exec_layouts({TensorLayout(k.src, dtype::Float32), filter});
    Checker<ConvolutionBackwardData> data(handle.get());
    data.set_param(k.p).set_output_shapes({k.src}).exec_layouts({filter, dst_nhwc});
    Checker<ConvolutionBackwardFilter> filt(handle.get());
    filt.set_param(k.p).set_output_shapes({k.filter}).exec_layouts({src, dst_nhwc});
}

// One operator object called twice with new filter values: nothing from the first call's filter
// is kept.
TEST_F(X86, DepthwiseFilterUpdatedInPlace) {
    Case k{{2, 3, 9, 8}, {6, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 3, true)};
    std::mt19937 rng(3);
    HostTensor x = random_tensor(k.src, rng), w = random_tensor(k.filter, rng);
    auto op = handle->create_operator<ConvolutionForward>();
    op->param() = k.p;
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<ConvolutionForward>();
    ref->param() = k.p;
    for (int step = 0; step < 2; ++step) {
        EXPECT_TRUE(tensors_near(run_op(*op, {x, w})[0], run_op(*ref, {x, w})[0], 1e-4));
        fill_uniform(w, -1, 1, rng);
    }
}
