// Depthwise convolutions (group == input channels, a channel multiplier of 1 or more) on the x86
// handle against naive: forward, backward data and backward filter, both modes, 1-D and 2-D,
// strides (backward data's too, with a preset larger input), paddings larger than the window,
// dilations, widths below, at and off a vector's multiple, kernels of many taps, views with padded
// rows and planes (inputs and outputs), W-strided and NHWC views, and padded outputs.
#include <cmath>
#include <limits>

#include "naive/convolution.h"
#include "neomeg/dnn/channels_last.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/param_base.h"
#include "neomeg/dnn/x86_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Case = ConvCase;

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
            // Strided rows of several vectors, odd and even widths, strides along one axis only,
            // offsets of both signs and dilated taps (backward data's gather).
            {{1, 3, 56, 57}, {3, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 3)},
            {{2, 2, 33, 70}, {4, 1, 3, 3}, conv_param({2, 1}, {1, 1}, {1, 1}, 2)},
            {{1, 2, 20, 75}, {2, 1, 5, 5}, conv_param({1, 2}, {2, 2}, {1, 1}, 2)},
            {{1, 2, 19, 64}, {2, 1, 3, 3}, conv_param({2, 2}, {0, 0}, {1, 1}, 2)},
            {{1, 2, 21, 45}, {4, 1, 3, 3}, conv_param({2, 2}, {2, 3}, {2, 2}, 2)},
            {{2, 3, 101}, {3, 1, 3}, conv_param({2}, {1}, {1}, 3)},
            // 3x3, stride 1, one column of padding on the left (the aligned-copy loop where the
            // CPU has AVX-512): a 1x1 plane, a multiplier of 2 (backward data accumulates),
            // no or two rows of padding on top, widths at and past a vector and over 4 vectors.
            {{1, 2, 1, 1}, {2, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 2)},
            {{2, 3, 5, 16}, {6, 1, 3, 3}, conv_param({1, 1}, {0, 1}, {1, 1}, 3)},
            {{1, 2, 6, 17}, {2, 1, 3, 3}, conv_param({1, 1}, {2, 1}, {1, 1}, 2)},
            {{1, 2, 9, 65}, {2, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 2)},
            {{1, 1, 3, 100}, {1, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 1)},
            // The same with a stride of 2 (even and odd columns copied apart): outputs of 16, 17
            // and 33 columns, a multiplier of 2, no or two rows of padding on top, a 1x1 input.
            {{2, 2, 7, 31}, {4, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 2)},
            {{1, 3, 8, 33}, {3, 1, 3, 3}, conv_param({2, 2}, {0, 1}, {1, 1}, 3)},
            {{1, 2, 9, 65}, {2, 1, 3, 3}, conv_param({2, 2}, {2, 1}, {1, 1}, 2)},
            {{1, 2, 1, 1}, {2, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 2)},
            // Batch 1 with a stride of 2 (the AVX2 filter gradient sums tap 2 as diff shifted by
            // one output, over outputs 0 .. ow): outputs of 16 without padding, 28 (MobileNet's
            // 56 -> 28), 23 with a multiplier of 2 and no column padding, 511 (the widest rows it
            // takes) and 512 (the general loop).
            {{1, 3, 10, 33}, {3, 1, 3, 3}, conv_param({2, 2}, {0, 0}, {1, 1}, 3)},
            {{1, 2, 11, 56}, {2, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 2)},
            {{1, 2, 6, 47}, {4, 1, 3, 3}, conv_param({2, 2}, {1, 0}, {1, 1}, 2)},
            {{1, 2, 5, 1022}, {2, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 2)},
            {{1, 2, 5, 1024}, {2, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 2)},
    };
}

// `shape` with unit stride along W and every other axis padded (rows by 3 elements, planes by 5,
// images by 7): the plane strides the depthwise loops take (Checker's padded views also stride W).
TensorLayout rows_padded(const TensorShape& s) {
    TensorLayout l(s, dtype::Float32);
    ptrdiff_t acc = 1;
    for (size_t i = l.ndim; i-- > 0;) {
        l.stride[i] = acc;
        acc = acc * static_cast<ptrdiff_t>(l.shape[i]) +
              static_cast<ptrdiff_t>(2 * (l.ndim - i) - 1);
    }
    return l;
}

// Runs Op on inputs of the given layouts into an output of the given layout, compares with naive
// on contiguous copies, and returns the kernel that ran.
template <class Op>
std::string check_layouts(Handle& handle, const param::Convolution& p,
                          const std::vector<TensorLayout>& inputs, const TensorLayout& output) {
    std::mt19937 rng(11);
    std::vector<HostTensor> in, dense;
    std::vector<TensorND> in_nd;
    for (const TensorLayout& l : inputs) {
        in.emplace_back(l);
        fill_uniform(in.back(), -1, 1, rng);
        dense.push_back(in.back().contiguous());
        in_nd.push_back(in.back().nd());
    }
    HostTensor out(output);
    TensorND out_nd = out.nd();
    auto op = handle.create_operator<Op>();
    op->param() = p;
    std::vector<std::byte> ws(op->get_workspace_in_bytes(inputs, std::span(&output, 1)));
    op->exec(in_nd, std::span(&out_nd, 1), {ws.data(), ws.size()});
    auto ref = Handle::make_naive()->create_operator<Op>();
    ref->param() = p;
    EXPECT_TRUE(tensors_near(out.contiguous(), run_op(*ref, dense, {TensorShape(output)})[0], 1e-4))
            << param::to_string(p) << " output " << output.to_string();
    return last_kernel(*op);
}

// check_layouts on rows_padded inputs into a rows_padded output.
template <class Op>
void check_rows_padded(Handle& handle, const param::Convolution& p,
                       const std::vector<TensorShape>& inputs, const TensorShape& output) {
    std::vector<TensorLayout> in_l;
    for (const TensorShape& s : inputs)
        in_l.push_back(rows_padded(s));
    check_layouts<Op>(handle, p, in_l, rows_padded(output));
}

}  // namespace

TEST_F(X86, DepthwiseForwardMatchesNaive) {
    check_conv_forward(handle.get(), conv_both_modes(cases()));
}

TEST_F(X86, DepthwiseBackwardDataMatchesNaive) {
    check_conv_backward_data(handle.get(), conv_both_modes(cases()));
}

TEST_F(X86, DepthwiseBackwardFilterMatchesNaive) {
    check_conv_backward_filter(handle.get(), conv_both_modes(cases()));
}

// Tensors past the 2 MiB the loops take as cached (depthwise_conv.cpp's in_cache): their planes
// stream from memory, the forward asking for each next plane's lines ahead; strides along both
// axes and one, a multiplier of 2, stride 1, a 5x5 window, widths off a vector's multiple.
TEST_F(X86, DepthwiseStreamingPlanesMatchNaive) {
    std::vector<Case> big = {
            {{4, 40, 60, 61}, {80, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 40)},
            {{3, 48, 57, 59}, {48, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 48)},
            {{4, 30, 64, 67}, {30, 1, 5, 5}, conv_param({2, 1}, {2, 2}, {1, 1}, 30)},
    };
    check_conv_forward(handle.get(), conv_both_modes(big));
    check_conv_backward_data(handle.get(), big);
    // A filter's gradient sums 10^4 products: oneDNN, which takes the W-strided views, sums them
    // in float.
    for (const Case& k : big) {
        Checker<ConvolutionBackwardFilter> c(handle.get());
        c.set_param(k.p).set_epsilon(1e-3).set_output_shapes({k.filter});
        c.execs({k.src, conv_dst_shape(k)});
        c.set_noncontiguous(true).execs({k.src, conv_dst_shape(k)});
    }
}

// Many small planes past the 2 MiB: the streaming 3x3 loops (on AVX2 the filter gradient's bands
// across whole rows, stride 1 and 2) on widths of one vector and less, 1 to 17 and primes,
// paddings 0 to 2, odd channel counts and a multiplier of 2.
TEST_F(X86, DepthwiseStreamingSmallPlanesMatchNaive) {
    std::vector<Case> small = {
            {{65536, 5, 1, 1}, {5, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 5)},
            {{1200, 5, 9, 17}, {5, 1, 3, 3}, conv_param({1, 1}, {0, 0}, {1, 1}, 5)},
            {{1500, 3, 13, 8}, {6, 1, 3, 3}, conv_param({1, 1}, {2, 2}, {1, 1}, 3)},
            {{4000, 3, 7, 5}, {3, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 3)},
            {{1000, 5, 11, 13}, {5, 1, 3, 3}, conv_param({2, 2}, {0, 2}, {1, 1}, 5)},
            {{20000, 3, 6, 2}, {6, 1, 3, 3}, conv_param({2, 2}, {2, 1}, {1, 1}, 3)},
    };
    check_conv_forward(handle.get(), small);
    check_conv_backward_data(handle.get(), small);
    for (const Case& k : small) {
        // A filter's gradient sums up to 10^6 products (in float within a plane).
        Checker<ConvolutionBackwardFilter> c(handle.get());
        c.set_param(k.p).set_epsilon(1e-3).set_output_shapes({k.filter});
        c.execs({k.src, conv_dst_shape(k)});
    }
}

// Strides skip the last rows and columns of a larger input: the same diff comes from the deduced
// size and from a preset larger one (conv_transpose with output padding), whose extra rows and
// columns get no gradient.
TEST_F(X86, DepthwiseBackwardDataPresetLargerInput) {
    Case k{{2, 3, 10, 11}, {6, 1, 3, 3}, conv_param({2, 3}, {1, 1}, {1, 1}, 3)};
    for (TensorShape grad : {TensorShape{2, 3, 9, 10}, TensorShape{2, 3, 10, 12}}) {
        Checker<ConvolutionBackwardData> c(handle.get());
        c.set_param(k.p).set_output_shapes({grad}).execs({k.filter, conv_dst_shape(k)});
        c.set_noncontiguous(true).execs({k.filter, conv_dst_shape(k)});
    }
    Case d{{1, 2, 9, 20}, {2, 1, 2, 3}, conv_param({3, 2}, {0, 2}, {2, 1}, 2, true)};
    for (TensorShape grad :
         {TensorShape{1, 2, 9, 20}, TensorShape{1, 2, 11, 20}, TensorShape{1, 2, 10, 19}}) {
        Checker<ConvolutionBackwardData> c(handle.get());
        c.set_param(d.p).set_output_shapes({grad}).execs({d.filter, conv_dst_shape(d)});
    }
}

// NCHW views of NHWC buffers (channels adjacent, W strided) and a transposed filter.
TEST_F(X86, DepthwiseStridedViews) {
    Case k{{2, 4, 6, 7}, {8, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 4)};
    TensorLayout src = TensorLayout({2, 6, 7, 4}, dtype::Float32).dimshuffle({0, 3, 1, 2});
    TensorLayout filter = TensorLayout({3, 3, 1, 8}, dtype::Float32).dimshuffle({3, 2, 0, 1});
    TensorShape dst = conv_dst_shape(k);
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

TEST_F(X86, DepthwiseRowsPaddedViews) {
    for (const Case& k : conv_both_modes(cases())) {
        check_rows_padded<ConvolutionForward>(*handle, k.p, {k.src, k.filter}, conv_dst_shape(k));
        check_rows_padded<ConvolutionBackwardData>(*handle, k.p, {k.filter, conv_dst_shape(k)},
                                                   k.src);
        check_rows_padded<ConvolutionBackwardFilter>(*handle, k.p, {k.src, conv_dst_shape(k)},
                                                     k.filter);
    }
}

// One activation channels-last (a traced graph's transposed NHWC batch) beside a plain one, each
// way round and in every pass: our loops on a contiguous copy of the channels-last one, staged
// through the workspace (an input copied in, an output copied out), not oneDNN's nhwc kernel.
TEST_F(X86, DepthwiseOneChannelsLastActivationIsStaged) {
    auto act = [](const TensorShape& s, bool cl) {
        TensorLayout l(s, dtype::Float32);
        return cl ? channels_last_layout(l, l.dtype) : l;
    };
    for (const Case& k : conv_both_modes(cases())) {
        if (k.src.ndim != 4)
            continue;  // channels-last is 4-D and 5-D
        const TensorLayout f(k.filter, dtype::Float32);
        const TensorShape dst = conv_dst_shape(k);
        for (bool x_cl : {true, false}) {
            SCOPED_TRACE(k.src.to_string() + (x_cl ? " src channels-last" : " dst channels-last"));
            EXPECT_EQ(check_layouts<ConvolutionForward>(*handle, k.p, {act(k.src, x_cl), f},
                                                        act(dst, !x_cl)),
                      "depthwise:hwy");
            EXPECT_EQ(check_layouts<ConvolutionBackwardData>(*handle, k.p, {f, act(dst, !x_cl)},
                                                             act(k.src, x_cl)),
                      "depthwise:hwy");
            EXPECT_EQ(check_layouts<ConvolutionBackwardFilter>(
                              *handle, k.p, {act(k.src, x_cl), act(dst, !x_cl)}, f),
                      "depthwise:hwy");
        }
    }
}

// Infinities where a tap's sum reads no input (3x3, stride 2, no padding, 7 outputs of 16
// columns): column 0, which taps 0 but not 2 read; column 14, which tap 2 of the last output reads
// but tap 0 of no output (the stride-2 filter gradient sums tap 2 over tap 0's columns); column
// 15, which no tap reads. Naive's sums meet each once or never, so the gradient's other taps stay
// finite.
TEST_F(X86, DepthwiseBackwardFilterStride2InfinitiesOutsideTaps) {
    Case k{{1, 2, 7, 16}, {2, 1, 3, 3}, conv_param({2, 2}, {0, 0}, {1, 1}, 2)};
    std::mt19937 rng(5);
    HostTensor x = random_tensor(k.src, rng), dy = random_tensor(conv_dst_shape(k), rng);
    std::vector<double> v = x.values();
    const double inf = std::numeric_limits<double>::infinity();
    v[1 * 16 + 0] = inf;             // channel 0, row 1, column 0
    v[7 * 16 + 1 * 16 + 14] = -inf;  // channel 1, row 1, column 14
    v[7 * 16 + 4 * 16 + 15] = inf;   // channel 1, row 4, column 15
    x.set_values(v);
    auto op = handle->create_operator<ConvolutionBackwardFilter>();
    op->param() = k.p;
    auto ref = Handle::make_naive()->create_operator<ConvolutionBackwardFilter>();
    ref->param() = k.p;
    HostTensor got = run_op(*op, {x, dy}, {k.filter})[0];
    HostTensor want = run_op(*ref, {x, dy}, {k.filter})[0];
    EXPECT_TRUE(tensors_near(got, want, 1e-4));
    // Each channel's one infinite tap, the other eight finite.
    for (size_t c = 0; c < 2; ++c) {
        size_t finite = 0;
        for (size_t t = 0; t < 9; ++t)
            finite += std::isfinite(want.at({c, 0, t / 3, t % 3}));
        EXPECT_EQ(finite, 8u) << "channel " << c;
    }
}

// The filter gradient on two threads splits the filters, not the input channels: a layer of one
// input channel (LeNet's first, 1 -> 6, 5x5, batch 64), a split inside a channel's multipliers
// (3 channels x 2: threads take filters 0-2 and 3-5) and the 3x3 loops; each against naive and
// bit for bit the one-thread result (a thread sums a filter's images in the same order).
TEST_F(X86, DepthwiseBackwardFilterSplitsFiltersAcrossThreads) {
    std::vector<Case> split = {
            {{64, 1, 28, 28}, {6, 1, 5, 5}, conv_param({1, 1}, {0, 0}, {1, 1}, 1)},
            {{16, 3, 20, 20}, {6, 1, 5, 5}, conv_param({1, 1}, {0, 0}, {1, 1}, 3)},
            {{32, 1, 30, 30}, {4, 1, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 1, true)},
    };
    const int threads = x86_threads();
    std::mt19937 rng(29);
    for (const Case& k : split) {
        HostTensor x = random_tensor(k.src, rng), dy = random_tensor(conv_dst_shape(k), rng);
        auto op = handle->create_operator<ConvolutionBackwardFilter>();
        op->param() = k.p;
        auto ref = Handle::make_naive()->create_operator<ConvolutionBackwardFilter>();
        ref->param() = k.p;
        set_x86_threads(1);
        HostTensor one = run_op(*op, {x, dy}, {k.filter})[0];
        set_x86_threads(2);
        HostTensor two = run_op(*op, {x, dy}, {k.filter})[0];
        set_x86_threads(threads);
        // Each tap sums up to 64 x 24 x 24 products of values in [-1, 1] (about 190 in
        // magnitude), in double: naive's float sums are what the 1e-4 allows for.
        EXPECT_TRUE(tensors_near(two, run_op(*ref, {x, dy}, {k.filter})[0], 1e-4))
                << param::to_string(k.p);
        EXPECT_TRUE(tensors_near(two, one, 0)) << param::to_string(k.p);
    }
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
