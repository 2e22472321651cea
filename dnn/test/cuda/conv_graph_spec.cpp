// What the cuDNN graph path tells cuDNN about a convolution (conv_graph_spec.h): tensor dims,
// strides and ids in the plan's roles, the convolution's paddings, strides and dilations (1-D as
// 2-D over (1, W)), the cases it cannot describe, the plan cache's key, which engines a case may
// run under TF32 on and off, and the kernel names. Needs no GPU and no cuDNN library.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "common/host_tensor.h"
#include "src/cuda/conv_graph_spec.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::cuda;
using neomeg::dnn::test::f32;

namespace {

using V = std::vector<int64_t>;

ConvArgs args2d(std::vector<int32_t> stride, std::vector<int32_t> pad, std::vector<int32_t> dil,
                uint32_t group = 1, bool flip = false) {
    return {flip, std::move(stride), std::move(pad), std::move(dil), group};
}

// A forward 3x3 convolution, stride 2, padding 1: (2, 4, 9, 9) * (6, 4, 3, 3) -> (2, 6, 5, 5).
std::optional<GraphConvSpec> forward_spec(bool tf32 = false, DType dt = dtype::Float32) {
    return graph_conv_spec(ConvKind::Forward, args2d({2, 2}, {1, 1}, {1, 1}),
                           TensorLayout({2, 4, 9, 9}, dt), TensorLayout({6, 4, 3, 3}, dt),
                           TensorLayout({2, 6, 5, 5}, dt), tf32);
}

}  // namespace

TEST(CudaConvGraphSpec, DescribesTensorsAndConvolutionIn2d) {
    auto s = forward_spec();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->kind, ConvKind::Forward);
    EXPECT_EQ(s->x.uid, kGraphUidX);
    EXPECT_EQ(s->w.uid, kGraphUidW);
    EXPECT_EQ(s->y.uid, kGraphUidY);
    EXPECT_EQ(s->x.dims, (V{2, 4, 9, 9}));
    EXPECT_EQ(s->x.strides, (V{324, 81, 9, 1}));
    EXPECT_EQ(s->w.dims, (V{6, 4, 3, 3}));
    EXPECT_EQ(s->w.strides, (V{36, 9, 3, 1}));
    EXPECT_EQ(s->y.dims, (V{2, 6, 5, 5}));
    EXPECT_EQ(s->y.strides, (V{150, 25, 5, 1}));
    for (const auto* t : {&s->x, &s->w, &s->y}) {
        EXPECT_EQ(t->type, CUDNN_DATA_FLOAT);
        EXPECT_EQ(t->alignment, 16);
    }
    EXPECT_EQ(s->mode, CUDNN_CROSS_CORRELATION);
    EXPECT_EQ(s->compute, CUDNN_DATA_FLOAT);
    EXPECT_EQ(s->pre_pad, (V{1, 1}));
    EXPECT_EQ(s->post_pad, (V{1, 1}));
    EXPECT_EQ(s->stride, (V{2, 2}));
    EXPECT_EQ(s->dilation, (V{1, 1}));
    EXPECT_FALSE(s->allow_tf32);
}

TEST(CudaConvGraphSpec, ConvolutionModeDilationAndGroups) {
    // CONVOLUTION mode (flipped filter), dilation 2x3, two groups: w has half of x's channels.
    auto s = graph_conv_spec(ConvKind::BackwardData, args2d({1, 1}, {2, 0}, {2, 3}, 2, true),
                             f32({1, 6, 9, 12}), f32({4, 3, 3, 2}), f32({1, 4, 9, 9}), false);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->kind, ConvKind::BackwardData);
    EXPECT_EQ(s->mode, CUDNN_CONVOLUTION);
    EXPECT_EQ(s->pre_pad, (V{2, 0}));
    EXPECT_EQ(s->dilation, (V{2, 3}));
    // Three groups where w says two: not a convolution cuDNN can be told about.
    EXPECT_FALSE(graph_conv_spec(ConvKind::Forward, args2d({1, 1}, {0, 0}, {1, 1}, 3),
                                 f32({1, 6, 9, 12}), f32({4, 3, 3, 2}), f32({1, 4, 7, 11}), false));
}

TEST(CudaConvGraphSpec, OneDimensionalIsTwoDimensionalOverOneRow) {
    auto s = graph_conv_spec(ConvKind::BackwardFilter, {false, {2}, {1}, {3}, 2}, f32({3, 4, 17}),
                             f32({6, 2, 3}), f32({3, 6, 7}), false);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->x.dims, (V{3, 4, 1, 17}));
    EXPECT_EQ(s->x.strides, (V{68, 17, 17, 1}));
    EXPECT_EQ(s->w.dims, (V{6, 2, 1, 3}));
    EXPECT_EQ(s->w.strides, (V{6, 3, 3, 1}));
    EXPECT_EQ(s->pre_pad, (V{0, 1}));
    EXPECT_EQ(s->stride, (V{1, 2}));
    EXPECT_EQ(s->dilation, (V{1, 3}));
}

TEST(CudaConvGraphSpec, ThreeDimensional) {
    auto s = graph_conv_spec(ConvKind::Forward, args2d({1, 2, 1}, {1, 0, 1}, {1, 1, 2}),
                             f32({2, 3, 5, 6, 7}), f32({4, 3, 3, 2, 3}), f32({2, 4, 5, 3, 5}),
                             false);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->x.dims.size(), 5u);
    EXPECT_EQ(s->x.strides, (V{630, 210, 42, 7, 1}));
    EXPECT_EQ(s->pre_pad, (V{1, 0, 1}));
    EXPECT_EQ(s->stride, (V{1, 2, 1}));
    EXPECT_EQ(s->dilation, (V{1, 1, 2}));
}

TEST(CudaConvGraphSpec, SizeOneAxesKeepPackedStrides) {
    // One input channel, a batch of one: NCHW strides as a packed tensor has them, so that cuDNN
    // does not read a channel stride of 1 as NHWC.
    auto s = graph_conv_spec(ConvKind::Forward, args2d({1, 1}, {0, 0}, {1, 1}), f32({1, 1, 5, 6}),
                             f32({2, 1, 1, 1}), f32({1, 2, 5, 6}), false);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->x.strides, (V{30, 30, 6, 1}));
    EXPECT_EQ(s->w.strides, (V{1, 1, 1, 1}));
    EXPECT_EQ(s->y.strides, (V{60, 30, 6, 1}));
}

TEST(CudaConvGraphSpec, NhwcViewsKeepTheirStrides) {
    TensorLayout x = TensorLayout({2, 6, 7, 4}, dtype::Float32).dimshuffle({0, 3, 1, 2});
    TensorLayout y = TensorLayout({2, 6, 7, 5}, dtype::Float32).dimshuffle({0, 3, 1, 2});
    auto s = graph_conv_spec(ConvKind::Forward, args2d({1, 1}, {1, 1}, {1, 1}), x,
                             f32({5, 4, 3, 3}), y, false);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->x.dims, (V{2, 4, 6, 7}));
    EXPECT_EQ(s->x.strides, (V{168, 1, 28, 4}));
    EXPECT_EQ(s->y.strides, (V{210, 1, 35, 5}));
}

TEST(CudaConvGraphSpec, DeclinesWhatTheGraphApiCannotBeToldAbout) {
    auto args = args2d({1, 1}, {1, 1}, {1, 1});
    TensorLayout x = f32({2, 3, 7, 7}), w = f32({5, 3, 3, 3}), y = f32({2, 5, 7, 7});
    ASSERT_TRUE(graph_conv_spec(ConvKind::Forward, args, x, w, y, false));
    // Integer data.
    EXPECT_FALSE(graph_conv_spec(ConvKind::Forward, args, TensorLayout(x, dtype::Int8),
                                 TensorLayout(w, dtype::Int8), TensorLayout(y, dtype::Int8),
                                 false));
    // Mixed dtypes.
    EXPECT_FALSE(
            graph_conv_spec(ConvKind::Forward, args, TensorLayout(x, dtype::Float16), w, y, false));
    // A filter broadcast over output channels, and one that is not contiguous.
    EXPECT_FALSE(graph_conv_spec(ConvKind::Forward, args, x,
                                 TensorLayout({5, 3, 3, 3}, {0, 9, 3, 1}, dtype::Float32), y,
                                 false));
    EXPECT_FALSE(graph_conv_spec(ConvKind::Forward, args, x,
                                 TensorLayout({5, 3, 3, 3}, {54, 9, 3, 1}, dtype::Float32), y,
                                 false));
    // A broadcast input.
    EXPECT_FALSE(graph_conv_spec(ConvKind::Forward, args,
                                 TensorLayout({2, 3, 7, 7}, {0, 49, 7, 1}, dtype::Float32), w, y,
                                 false));
    // An empty batch.
    EXPECT_FALSE(graph_conv_spec(ConvKind::Forward, args, f32({0, 3, 7, 7}), w, f32({0, 5, 7, 7}),
                                 false));
    // Params of another rank than the tensors.
    EXPECT_FALSE(graph_conv_spec(ConvKind::Forward, args2d({1, 1, 1}, {1, 1, 1}, {1, 1, 1}), x, w,
                                 y, false));
}

TEST(CudaConvGraphSpec, Tf32IsAFloat32Matter) {
    EXPECT_TRUE(forward_spec(true)->allow_tf32);
    EXPECT_FALSE(forward_spec(false)->allow_tf32);
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto s = forward_spec(true, dt);
        ASSERT_TRUE(s);
        EXPECT_FALSE(s->allow_tf32);
        EXPECT_EQ(s->x.type, dt == dtype::Float16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16);
        EXPECT_EQ(s->compute, CUDNN_DATA_FLOAT);  // accumulates in float
    }
}

TEST(CudaConvGraphSpec, CacheKeyTellsEveryFieldApart) {
    GraphConvSpec base = *forward_spec();
    EXPECT_EQ(graph_cache_key(base), graph_cache_key(*forward_spec()));
    std::vector<GraphConvSpec> variants(12, base);
    variants[0].kind = ConvKind::BackwardData;
    variants[1].mode = CUDNN_CONVOLUTION;
    variants[2].allow_tf32 = true;
    variants[3].x.type = CUDNN_DATA_HALF;
    variants[4].x.dims[0] = 3;
    variants[5].y.strides = {150, 1, 30, 6};
    variants[6].w.alignment = 4;
    variants[7].pre_pad = {0, 1};
    variants[8].post_pad = {1, 2};
    variants[9].stride = {1, 2};
    variants[10].dilation = {2, 1};
    variants[11].compute = CUDNN_DATA_DOUBLE;
    std::set<std::string> keys{graph_cache_key(base)};
    for (const auto& v : variants)
        keys.insert(graph_cache_key(v));
    EXPECT_EQ(keys.size(), variants.size() + 1);
}

TEST(CudaConvGraphSpec, EnginesAllowedUnderTf32OnAndOff) {
    using N = cudnnBackendNumericalNote_t;
    const std::vector<N> none, tc{CUDNN_NUMERICAL_NOTE_TENSOR_CORE},
            winograd{CUDNN_NUMERICAL_NOTE_WINOGRAD, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC},
            down{CUDNN_NUMERICAL_NOTE_TENSOR_CORE, CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS},
            reduced{CUDNN_NUMERICAL_NOTE_TENSOR_CORE,
                    CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION};
    GraphConvSpec fp32 = *forward_spec(false), tf32 = *forward_spec(true),
                  fp16 = *forward_spec(false, dtype::Float16);
    // float32 without TF32: no tensor core.
    EXPECT_TRUE(graph_engine_allowed(fp32, none));
    EXPECT_TRUE(graph_engine_allowed(fp32, winograd));
    EXPECT_FALSE(graph_engine_allowed(fp32, tc));
    // TF32 on: tensor cores, but never inputs converted down to half.
    EXPECT_TRUE(graph_engine_allowed(tf32, tc));
    EXPECT_FALSE(graph_engine_allowed(tf32, down));
    // Half precision: tensor cores, accumulating in float.
    EXPECT_TRUE(graph_engine_allowed(fp16, tc));
    EXPECT_TRUE(graph_engine_allowed(fp16, none));
    EXPECT_FALSE(graph_engine_allowed(fp16, reduced));
    // Runtime-compiled engines, whatever the numbers.
    const std::vector<cudnnBackendBehaviorNote_t> rtc{CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION},
            graph_native{CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API};
    EXPECT_FALSE(graph_engine_allowed(fp16, tc, rtc));
    EXPECT_FALSE(graph_engine_allowed(fp32, none, rtc));
    EXPECT_TRUE(graph_engine_allowed(fp32, none, graph_native));
}

TEST(CudaConvGraphSpec, KernelNamesAreStable) {
    const char* a = graph_kernel_name(12, false);
    EXPECT_STREQ(a, "cudnn-graph:engine12");
    EXPECT_STREQ(graph_kernel_name(12, true), "cudnn-graph(measured):engine12");
    EXPECT_STREQ(graph_kernel_name(0, false), "cudnn-graph:engine0");
    for (int64_t e = 0; e < 64; ++e)
        graph_kernel_name(e, false);
    EXPECT_EQ(graph_kernel_name(12, false), a);  // the same storage, still valid
}

TEST(CudaConvGraphSpec, PointerAlignment) {
    alignas(16) static std::byte buf[64];
    const void* aligned[] = {buf, buf + 16, nullptr};
    const void* off[] = {buf, buf + 4};
    EXPECT_TRUE(graph_pointers_aligned(aligned));
    EXPECT_FALSE(graph_pointers_aligned(off));
}
