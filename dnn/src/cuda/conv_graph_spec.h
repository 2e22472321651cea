// What cuDNN's graph (backend) API is told about one convolution case, as plain values: the three
// tensors (dims, strides, unique ids, byte alignment), the convolution (mode, paddings, strides,
// dilations, compute type) and the direction, built from NeoMeg layouts and params; the key a
// finalized plan is cached under; which engines a case may run (TF32 off keeps float32 off tensor
// cores, as PyTorch's filter does); and the kernel name an engine reports. Pure logic, so that the
// host tests check it without cuDNN or a GPU (conv_graph.cpp turns it into descriptors).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/common/convolution_geometry.h"
#include "src/cuda/conv_plan.h"

namespace neomeg::dnn::cuda {

// The variant pack's ids of the plan's x, w and y (conv_plan.h's roles).
inline constexpr int64_t kGraphUidX = 1, kGraphUidW = 2, kGraphUidY = 3;
// The byte alignment the tensors are described with; a call whose pointers are not this aligned
// runs the legacy plan instead (our allocator's blocks are 256-aligned, views may not be).
inline constexpr int64_t kGraphAlignment = 16;

struct GraphTensorSpec {
    int64_t uid = 0;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    std::vector<int64_t> dims, strides;
    int64_t alignment = kGraphAlignment;
};

struct GraphConvSpec {
    ConvKind kind = ConvKind::Forward;
    GraphTensorSpec x, w, y;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    // Half-precision data accumulates in float, as the legacy path's PSEUDO_HALF configuration.
    cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    // Per spatial dim; a 1-D convolution is a 2-D one over (1, W).
    std::vector<int64_t> pre_pad, post_pad, stride, dilation;
    // float32 only: whether engines may round the inputs to TF32 on tensor cores.
    bool allow_tf32 = false;
};

// The spec of a case, or nullopt where the graph API cannot describe it (an integer dtype, an
// empty tensor, a broadcast or reversed axis, a filter that is not contiguous, mixed dtypes).
std::optional<GraphConvSpec> graph_conv_spec(ConvKind kind, const ConvArgs& args,
                                             const TensorLayout& x, const TensorLayout& w,
                                             const TensorLayout& y, bool allow_tf32);

// Every field of the spec, so that two cases share a cached plan exactly when cuDNN would be told
// the same thing.
std::string graph_cache_key(const GraphConvSpec& spec);

// Whether an engine with these numerical and behavior notes may run the case: never one that
// converts the inputs down (float32 to half) or reduces in half precision, for float32 without
// TF32 none on tensor cores, and none compiled at run time (NVRTC, seconds on first use of each
// shape; the legacy plan is there for a case with no other engine).
bool graph_engine_allowed(const GraphConvSpec& spec,
                          std::span<const cudnnBackendNumericalNote_t> notes,
                          std::span<const cudnnBackendBehaviorNote_t> behavior = {});

// "cudnn-graph:engine<N>", or "cudnn-graph(measured):engine<N>" where timing chose it; the storage
// lives as long as the process (last_kernel() hands the pointer out).
const char* graph_kernel_name(int64_t engine, bool measured);

// Whether the pointers of a call meet kGraphAlignment (the workspace may be null).
bool graph_pointers_aligned(std::span<const void* const> pointers);

}  // namespace neomeg::dnn::cuda
