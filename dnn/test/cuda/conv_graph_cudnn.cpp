// The graph path's descriptors on the installed cuDNN, without a GPU: the tensor, convolution and
// operation descriptors conv_graph.cpp builds for each direction, dtype and rank finalize, so their
// attribute names, types and values are ones cuDNN accepts. The operation graph needs a cuDNN
// handle (a GPU), so building stops there, and says so; a case cuDNN rejects stops before it.
#include <gtest/gtest.h>

#include "src/cuda/conv_graph.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::cuda;

TEST(CudaConvGraphCudnn, DescriptorsFinalizeUpToTheOperationGraph) {
    LoadReport report;
    CudnnApi api = load_cudnn(
            library_candidates("NEOMEG_TEST_UNSET", "libcudnn.so." + std::to_string(CUDNN_MAJOR),
                               NEOMEG_TEST_CUDNN_LIBRARY_DIR),
            report);
    ASSERT_EQ(report.error, "");
    struct Shape {
        ConvArgs args;
        TensorShape x, w, y;
    };
    const Shape shapes[] = {
            {{false, {2, 2}, {1, 1}, {1, 1}, 1}, {2, 4, 9, 9}, {6, 4, 3, 3}, {2, 6, 5, 5}},
            {{true, {1, 1}, {2, 0}, {2, 3}, 2}, {1, 6, 9, 12}, {4, 3, 3, 2}, {1, 4, 9, 9}},
            {{false, {2}, {1}, {2}, 2}, {3, 4, 17}, {6, 2, 3}, {3, 6, 8}},
            {{false, {1, 2, 1}, {1, 0, 1}, {1, 1, 2}, 1},
             {2, 3, 5, 6, 7},
             {4, 3, 3, 2, 3},
             {2, 4, 5, 3, 5}},
    };
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (ConvKind kind : {ConvKind::Forward, ConvKind::BackwardData, ConvKind::BackwardFilter})
            for (const Shape& s : shapes) {
                auto spec = graph_conv_spec(kind, s.args, TensorLayout(s.x, dt),
                                            TensorLayout(s.w, dt), TensorLayout(s.y, dt), false);
                ASSERT_TRUE(spec);
                GraphBuild r = build_graph_plan(api, nullptr, *spec);
                EXPECT_FALSE(r.plan);
                EXPECT_TRUE(r.why_not.starts_with("the operation graph: "))
                        << graph_cache_key(*spec) << ": " << r.why_not;
            }
    // An output of the wrong size: cuDNN declines the operation, and the case runs legacy.
    auto bad = graph_conv_spec(ConvKind::Forward, shapes[0].args,
                               TensorLayout(shapes[0].x, dtype::Float32),
                               TensorLayout(shapes[0].w, dtype::Float32),
                               TensorLayout({2, 6, 4, 5}, dtype::Float32), false);
    ASSERT_TRUE(bad);
    GraphBuild r = build_graph_plan(api, nullptr, *bad);
    EXPECT_FALSE(r.plan);
    EXPECT_TRUE(r.why_not.starts_with("the operation: ")) << r.why_not;
}
