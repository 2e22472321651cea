// The model file round trip: one-op graphs over the registry's operators (sample inputs and
// params per op), small nets, and metadata. A loaded graph must give the original's outputs
// byte for byte: both run the same kernels on the same inputs.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "neomeg/op/defs/convolution.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/reduce.h"
#include "neomeg/op/defs/vision.h"
#include "neomeg/op/op_ids.h"
#include "neomeg/op/view_layouts.h"
#include "serialization_test_util.h"

namespace neomeg::serialization::test {
namespace {

namespace P = dnn::param;
using dnn::TensorShape;

struct In {
    TensorShape shape;
    dnn::DType dtype = dnn::dtype::Float32;
    std::vector<float> values = {};  // cycled; empty: random
};

struct Sample {
    std::string label;
    std::shared_ptr<OpDef> op;
    std::vector<In> inputs;
    std::vector<TensorShape> preset = {};  // output shapes, for generators
};

std::vector<Sample> samples() {
    auto f32 = dnn::dtype::Float32;
    auto i32 = dnn::dtype::Int32;
    using V = std::vector<int32_t>;
    return {
            {"conv",
             make_op("ConvolutionForward", {{"padding", V{1, 1}}, {"stride", V{2, 1}}}),
             {{{1, 2, 5, 5}}, {{3, 2, 3, 3}}}},
            {"conv_bias",
             make_op("ConvBias", {{"nonlineMode", ev(P::ConvBias::NonlineMode::RELU)}}),
             {{{1, 2, 5, 5}}, {{3, 2, 3, 3}}, {{1, 3, 1, 1}}, {{1, 3, 3, 3}}}},
            {"channel_block", make_op("ChannelBlock", {{"block", uint32_t(4)}}), {{{1, 6, 2, 3}}}},
            {"channel_unblock",
             make_op("ChannelUnblock", {{"channels", uint32_t(6)}}),
             {{{1, 2, 2, 3, 4}}}},
            {"conv_bias_blocked",
             make_op("ConvBiasBlocked", {{"block", uint32_t(4)}, {"filter_is_const", true}}),
             {{{1, 2, 5, 5, 4}}, {{3, 8, 3, 3}}, {{1, 3, 1, 1}}, {{1, 1, 3, 3, 4}}}},
            {"pooling_blocked", make_op("PoolingBlocked"), {{{1, 2, 4, 4, 4}}}},
            {"conv_bwd_data_blocked",
             make_op("ConvolutionBackwardDataBlocked", {{"padding", V{1, 1}}}),
             {{{3, 2, 3, 3}}, {{1, 1, 4, 4, 4}}}},
            {"conv_bwd_filter_blocked",
             make_op("ConvolutionBackwardFilterBlocked", {{"padding", V{1, 1}}}),
             {{{1, 1, 4, 4, 4}}, {{1, 1, 4, 4, 4}}},
             {{3, 2, 3, 3}}},
            {"bn_fwd_blocked",
             make_op("BatchNormForwardBlocked"),
             {{{2, 1, 3, 3, 4}}, {{1, 3, 1, 1}}, {{1, 3, 1, 1}}, {{1, 3, 1, 1}}, {{1, 3, 1, 1}}}},
            {"bn_bwd_blocked",
             make_op("BatchNormBackwardBlocked"),
             {{{2, 1, 3, 3, 4}},
              {{2, 1, 3, 3, 4}},
              {{1, 3, 1, 1}},
              {{1, 3, 1, 1}},
              {{1, 3, 1, 1}}}},
            {"bn_relu_fwd_blocked",
             make_op("BatchNormReluForwardBlocked"),
             {{{2, 1, 3, 3, 4}}, {{1, 3, 1, 1}}, {{1, 3, 1, 1}}, {{1, 3, 1, 1}}, {{1, 3, 1, 1}}}},
            {"bn_relu_bwd_blocked",
             make_op("BatchNormReluBackwardBlocked"),
             {{{2, 1, 3, 3, 4}},
              {{2, 1, 3, 3, 4}},
              {{1, 3, 1, 1}},
              {{1, 3, 1, 1}},
              {{1, 3, 1, 1}},
              {{2, 1, 3, 3, 4}}}},
            {"bn_add_relu_fwd_blocked",
             make_op("BatchNormAddReluForwardBlocked"),
             {{{2, 1, 3, 3, 4}},
              {{1, 3, 1, 1}},
              {{1, 3, 1, 1}},
              {{1, 3, 1, 1}},
              {{1, 3, 1, 1}},
              {{2, 1, 3, 3, 4}}}},
            {"bn_add_relu_bwd_blocked",
             make_op("BatchNormAddReluBackwardBlocked"),
             {{{2, 1, 3, 3, 4}},
              {{2, 1, 3, 3, 4}},
              {{2, 1, 3, 3, 4}},
              {{1, 3, 1, 1}},
              {{1, 3, 1, 1}},
              {{1, 3, 1, 1}},
              {{2, 1, 3, 3, 4}}}},
            {"conv_bwd_data",
             make_op("ConvolutionBackwardData", {{"stride", V{2, 2}}}),
             {{{3, 2, 3, 3}}, {{1, 3, 2, 2}}},
             {{1, 2, 5, 5}}},
            {"conv_bwd_filter",
             make_op("ConvolutionBackwardFilter"),
             {{{1, 2, 5, 5}}, {{1, 3, 3, 3}}},
             {{3, 2, 3, 3}}},
            {"deformable_conv",
             make_op("DeformableConvForward", {{"padding", V{1, 1}}, {"group", uint32_t(2)}}),
             {{{1, 4, 4, 4}}, {{2, 2, 3, 3}}, {{1, 36, 4, 4}}, {{1, 18, 4, 4}}}},
            {"deformable_conv_bwd_data",
             make_op("DeformableConvBackwardData", {{"padding", V{1, 1}}, {"group", uint32_t(2)}}),
             {{{1, 4, 4, 4}}, {{2, 2, 3, 3}}, {{1, 36, 4, 4}}, {{1, 18, 4, 4}}, {{1, 2, 4, 4}}}},
            {"deformable_conv_bwd_filter",
             make_op("DeformableConvBackwardFilter",
                     {{"padding", V{1, 1}}, {"group", uint32_t(2)}}),
             {{{1, 4, 4, 4}}, {{1, 36, 4, 4}}, {{1, 18, 4, 4}}, {{1, 2, 4, 4}}},
             {{2, 2, 3, 3}}},
            {"region_conv",
             make_op("RegionRestrictedConvolutionForward", {{"padding", V{1, 1}}}),
             {{{1, 2, 4, 4}},
              {{3, 2, 3, 3}},
              {{1, 4, 4}, i32, {0, 1, 1}},
              {{1, 4, 4}, i32, {1, 0}}}},
            {"region_conv_bwd_data",
             make_op("RegionRestrictedConvolutionBackwardData", {{"padding", V{1, 1}}}),
             {{{3, 2, 3, 3}},
              {{1, 3, 4, 4}},
              {{1, 4, 4}, i32, {0, 1, 1}},
              {{1, 4, 4}, i32, {1, 0}}},
             {{1, 2, 4, 4}}},
            {"region_conv_bwd_filter",
             make_op("RegionRestrictedConvolutionBackwardFilter", {{"padding", V{1, 1}}}),
             {{{1, 2, 4, 4}},
              {{1, 3, 4, 4}},
              {{1, 4, 4}, i32, {0, 1, 1}},
              {{1, 4, 4}, i32, {1, 0}}},
             {{3, 2, 3, 3}}},
            {"add",
             make_op("Elemwise", {{"mode", ev(P::Elemwise::Mode::ADD)}}),
             {{{2, 3}}, {{1, 3}}}},
            {"relu", make_op("Elemwise", {{"mode", ev(P::Elemwise::Mode::RELU)}}), {{{2, 3}}}},
            // complex64 graph values: the model file stores the dtype by name
            {"create_complex", make_op("CreateComplex"), {{{2, 3}}, {{1, 3}}}},
            {"complex_part",
             make_op("ComplexPart", {{"part", ev(P::ComplexPart::Part::IMAG)}}),
             {{{2, 3}, dnn::dtype::Complex64}}},
            {"complex_mul",
             make_op("Elemwise", {{"mode", ev(P::Elemwise::Mode::MUL)}}),
             {{{2, 3}, dnn::dtype::Complex64}, {{3}, dnn::dtype::Complex64}}},
            {"fma3",
             make_op("Elemwise", {{"mode", ev(P::Elemwise::Mode::FUSE_MUL_ADD3)}}),
             {{{2, 3}}, {{2, 3}}, {{2, 3}}}},
            {"one_hot",
             make_op("IndexingOneHot", {{"axis", int32_t(1)}}),
             {{{2, 3}}, {{2}, i32, {2, 0}}}},
            {"gather",
             make_op("Gather", {{"axis", int32_t(1)}}),
             {{{2, 3}}, {{2, 2}, i32, {0, 2, 1, 1}}}},
            {"scatter",
             make_op("Scatter", {{"axis", int32_t(1)}}),
             {{{2, 3}}, {{2, 1}, i32, {2, 0}}, {{2, 1}}}},
            {"multi_axis_vec",
             make_op("IndexingMultiAxisVec", {{"axes", V{1}}}),
             {{{2, 3}}, {{2}, i32, {2, 0}}}},
            {"matmul", make_op("MatrixMul", {{"transposeB", true}}), {{{2, 3}}, {{4, 3}}}},
            {"batched_matmul", make_op("BatchedMatrixMul"), {{{2, 2, 3}}, {{2, 3, 4}}}},
            {"dot", make_op("Dot"), {{{5}}, {{5}}}},
            {"matinv", make_op("MatrixInverse"), {{{2, 2}, f32, {2, 1, 1, 3}}}},
            {"bn_inference",
             make_op("BatchNormForward", {{"fwd_mode", ev(P::BatchNorm::FwdMode::INFERENCE)}}),
             {{{2, 3, 2, 2}},
              {{1, 3, 1, 1}},
              {{1, 3, 1, 1}},
              {{1, 3, 1, 1}},
              {{1, 3, 1, 1}, f32, {0.5f, 1, 2}}}},
            {"layer_norm", make_op("LayerNormForward"), {{{2, 4}}, {{4}}, {{4}}}},
            {"group_norm",
             make_op("GroupNormForward", {{"group", uint32_t(2)}}),
             {{{2, 4, 3}}, {{4}}, {{4}}}},
            {"softmax", make_op("SoftmaxForward", {{"axis", int32_t(1)}}), {{{2, 5}}}},
            {"log_softmax", make_op("LogSoftmaxForward"), {{{2, 5}}}},
            {"dropout",
             make_op("DropoutForward", {{"drop_prob", 0.5f}, {"seed", uint64_t(7)}}),
             {{{4, 4}}}},
            {"pool",
             make_op("PoolingForward", {{"mode", ev(P::Pooling::Mode::AVERAGE)}}),
             {{{1, 2, 4, 4}}}},
            {"adaptive_pool",
             make_op("AdaptivePoolingForward", {{"shape", V{2, 1}}}),
             {{{1, 2, 4, 4}}}},
            {"uniform", make_op("UniformRNG", {{"seed", uint64_t(3)}}), {}, {{4, 2}}},
            {"gaussian", make_op("GaussianRNG", {{"mean", 2.f}, {"std", 0.5f}}), {}, {{5}}},
            {"permutation", make_op("PermutationRNG", {{"seed", uint64_t(5)}}), {}, {{6}}},
            {"non_finite", make_op("CheckNonFinite"), {{{3}}, {{2}}}},
            {"reduce",
             make_op("Reduce", {{"mode", ev(P::Reduce::Mode::MAX)}, {"axis", int32_t(1)}}),
             {{{2, 3}}}},
            {"argmax", make_op("Argmax", {{"axis", int32_t(1)}}), {{{2, 3}}}},
            {"argmin", make_op("Argmin"), {{{2, 3}}}},
            {"cumsum", make_op("Cumsum", {{"axis", int32_t(1)}, {"reverse", true}}), {{{2, 3}}}},
            {"argsort",
             make_op("Argsort", {{"order", ev(P::Argsort::Order::DESCENDING)}}),
             {{{2, 5}}}},
            {"topk",
             make_op("TopK", {{"mode", ev(P::TopK::Mode::VALUE_IDX_SORTED)}, {"k", int32_t(2)}}),
             {{{2, 5}}}},
            {"fill", make_op("Fill", {{"value", 2.5f}}), {}, {{2, 2}}},
            {"typecvt",
             make_op("TypeCvt", {{"dtype", dnn::DTypeEnum::Int32}}),
             {{{2, 3}, f32, {1.5f, -2, 3}}}},
            {"relayout", make_op("Relayout"), {{{2, 3}}}},
            {"linspace", make_op("Linspace", {{"start", 1.f}, {"stop", 2.f}}), {}, {{5}}},
            {"arange", make_op("Arange", {{"start", 1.f}, {"step", 0.5f}}), {}, {{4}}},
            {"eye", make_op("Eye", {{"k", int32_t(1)}}), {}, {{3, 4}}},
            {"diag", make_op("Diag"), {{{3}}}},
            {"concat", make_op("Concat", {{"axis", int32_t(1)}}), {{{2, 3}}, {{2, 1}}}},
            {"split", make_op("Split", {{"axis", int32_t(1)}, {"sizes", V{1, 2}}}), {{{2, 3}}}},
            {"roll", make_op("Roll", {{"shift", V{1, -1}}, {"axis", V{0, 1}}}), {{{2, 3}}}},
            {"padding",
             make_op("Padding", {{"front_offsets", V{1, 0}}, {"back_offsets", V{0, 2}}}),
             {{{2, 3}}}},
            {"resize",
             make_op("Resize", {{"out_h", uint32_t(4)}, {"out_w", uint32_t(3)}}),
             {{{1, 1, 2, 2}}}},
            {"reshape", make_op("Reshape", {{"shape", V{3, 2}}}), {{{2, 3}}}},
            {"broadcast", make_op("Broadcast", {{"shape", V{2, 3}}}), {{{1, 3}}}},
            {"dimshuffle", make_op("Dimshuffle", {{"pattern", V{1, 0}}}), {{{2, 3}}}},
            {"add_axis", make_op("AddAxis", {{"axis", V{0}}}), {{{2, 3}}}},
            {"remove_axis", make_op("RemoveAxis", {{"axis", V{0}}}), {{{1, 3}}}},
            {"subtensor",
             make_op("Subtensor", {{"axis", V{0, 1}},
                                   {"begin", V{-1, param::kSubtensorNone}},
                                   {"end", V{param::kSubtensorNone, 0}},
                                   {"step", V{param::kSubtensorNone, -2}},
                                   {"is_index", V{1, 0}}}),
             {{{2, 5}}}},
            {"set_one_hot",
             make_op("IndexingSetOneHot", {{"axis", int32_t(1)}}),
             {{{2, 3}}, {{2}, i32, {2, 0}}, {{2, 1}}}},
            {"set_multi_axis_vec",
             make_op("IndexingSetMultiAxisVec", {{"axes", V{1}}}),
             {{{2, 3}}, {{2, 2}}, {{2}, i32, {2, 0}}}},
            {"incr_multi_axis_vec",
             make_op("IndexingIncrMultiAxisVec", {{"axes", V{1}}}),
             {{{2, 3}}, {{2, 2}}, {{2}, i32, {1, 1}}}},
            {"cond_take", make_op("CondTake"), {{{5}}, {{5}, dnn::dtype::Bool, {1, 0, 1, 1, 0}}}},
            {"non_zero", make_op("NonZero"), {{{2, 3}, f32, {0, 1, 0, 2, 3, 0}}}},
            // Value-shaped ops on graph inputs: dynamic shapes, inferred from the values as
            // the loaded graph runs.
            {"get_var_shape", make_op("GetVarShape", {{"axes", V{0, -1}}}), {{{2, 3, 4}}}},
            {"reshape_to", make_op("ReshapeTo"), {{{2, 3}}, {{2}, i32, {3, -1}}}},
            {"broadcast_to", make_op("BroadcastTo"), {{{1, 3}}, {{3}, i32, {2, 2, 3}}}},
            {"take_prefix", make_op("TakePrefix"), {{{4, 2}}, {{1}, i32, {3}}}},
            {"svd", make_op("SVD", {{"compute_uv", true}}), {{{3, 2}, f32, {3, 1, 1, 2, 0, 1}}}},
            {"softmax_bwd",
             make_op("SoftmaxBackward", {{"axis", int32_t(1)}}),
             {{{2, 5}}, {{2, 5}}}},
            {"log_softmax_bwd",
             make_op("LogSoftmaxBackward", {{"axis", int32_t(1)}}),
             {{{2, 5}}, {{2, 5}}}},
            {"dropout_bwd",
             make_op("DropoutBackward", {{"drop_prob", 0.5f}}),
             {{{2, 3}}, {{2, 3}, dnn::dtype::Uint8, {1, 0, 1, 1, 0, 0}}}},
            {"pool_bwd",
             make_op("PoolingBackward"),
             {{{1, 2, 4, 4}}, {{1, 2, 2, 2}}, {{1, 2, 2, 2}}}},
            {"adaptive_pool_bwd",
             make_op("AdaptivePoolingBackward", {{"shape", V{2, 2}}}),
             {{{1, 2, 4, 4}}, {{1, 2, 2, 2}}, {{1, 2, 2, 2}}}},
            {"padding_bwd",
             make_op("PaddingBackward", {{"front_offsets", V{1, 0}}, {"back_offsets", V{0, 2}}}),
             {{{3, 5}}},
             {{2, 3}}},
            {"fake_quant",
             make_op("FakeQuant", {{"qmin", int32_t(-8)}, {"qmax", int32_t(7)}}),
             {{{2, 3}}, {{1}, f32, {0.25f}}, {{1}, f32, {1}}}},
            {"fake_quant_bwd",
             make_op("FakeQuantBackward", {{"qmin", int32_t(-8)}, {"qmax", int32_t(7)}}),
             {{{2, 3}}, {{2, 3}}, {{1}, f32, {0.25f}}, {{1}, f32, {1}}}},
            {"tqt",
             make_op("TQT", {{"qmin", int32_t(-8)}, {"qmax", int32_t(7)}}),
             {{{2, 3}}, {{1}, f32, {-2}}}},
            {"tqt_bwd",
             make_op("TQTBackward", {{"qmin", int32_t(-8)}, {"qmax", int32_t(7)}}),
             {{{2, 3}}, {{2, 3}}, {{1}, f32, {-2}}}},
            {"lsq",
             make_op("LSQ", {{"qmin", int32_t(-8)}, {"qmax", int32_t(7)}}),
             {{{2, 3}}, {{1}, f32, {0.25f}}, {{1}, f32, {1}}, {{1}, f32, {0.5f}}}},
            {"lsq_bwd",
             make_op("LSQBackward", {{"qmin", int32_t(-8)}, {"qmax", int32_t(7)}}),
             {{{2, 3}}, {{2, 3}}, {{1}, f32, {0.25f}}, {{1}, f32, {1}}, {{1}, f32, {0.5f}}}},
            {"warp_perspective",
             make_op("WarpPerspective", {{"out_h", uint32_t(3)}, {"out_w", uint32_t(2)}}),
             {{{1, 2, 4, 4}},
              {{1, 3, 3}, f32, {1, 0.1f, 0.5f, 0, 1, 0.25f, 0, 0, 1}},
              {{1}, i32, {0}}}},
            {"warp_perspective_bwd_data",
             make_op("WarpPerspectiveBackwardData",
                     {{"out_h", uint32_t(3)}, {"out_w", uint32_t(2)}}),
             {{{1, 3, 3}, f32, {1, 0.1f, 0.5f, 0, 1, 0.25f, 0, 0, 1}},
              {{1}, i32, {0}},
              {{1, 2, 3, 2}}},
             {{1, 2, 4, 4}}},
            {"warp_perspective_bwd_mat",
             make_op("WarpPerspectiveBackwardMat",
                     {{"out_h", uint32_t(3)}, {"out_w", uint32_t(2)}}),
             {{{1, 2, 4, 4}},
              {{1, 3, 3}, f32, {1, 0.1f, 0.5f, 0, 1, 0.25f, 0, 0, 1}},
              {{1}, i32, {0}},
              {{1, 2, 3, 2}}}},
            {"roi_align",
             make_op("ROIAlign", {{"pooled_height", uint32_t(2)}, {"pooled_width", uint32_t(3)}}),
             {{{2, 2, 5, 6}}, {{2, 5}, f32, {1, 0.5f, 1, 4, 3.5f, 0, -1, 0, 2, 6}}}},
            {"roi_align_bwd",
             make_op("ROIAlignBackward", {{"mode", ev(P::ROIAlign::Mode::AVERAGE)},
                                          {"pooled_height", uint32_t(2)},
                                          {"pooled_width", uint32_t(3)}}),
             {{{2, 2, 2, 3}},
              {{2, 5}, f32, {1, 0.5f, 1, 4, 3.5f, 0, -1, 0, 2, 6}},
              {{2, 2, 2, 3}, i32, {-1}}},
             {{2, 2, 5, 6}}},
            {"roi_pooling",
             make_op("ROIPooling", {{"pooled_height", uint32_t(2)}, {"pooled_width", uint32_t(2)}}),
             {{{2, 2, 5, 6}}, {{2, 5}, f32, {1, 0, 1, 4, 3, 0, -1, 0, 2, 6}}}},
            {"roi_pooling_bwd",
             make_op("ROIPoolingBackward", {{"mode", ev(P::ROIPooling::Mode::AVERAGE)},
                                            {"pooled_height", uint32_t(2)},
                                            {"pooled_width", uint32_t(2)}}),
             {{{2, 2, 2, 2}},
              {{2, 5}, f32, {1, 0, 1, 4, 3, 0, -1, 0, 2, 6}},
              {{2, 2, 2, 2}, i32, {-1}}},
             {{2, 2, 5, 6}}},
            {"nms_keep",
             make_op("NMSKeep", {{"iou_thresh", 0.4f}, {"max_output", uint32_t(4)}}),
             {{{2, 3, 4}, f32, {0, 0, 4, 4, 1, 1, 4, 4, 5, 5, 8, 9,
                                2, 2, 3, 3, 0, 0, 6, 6, 2, 2, 3, 3}}}},
            {"remap",
             make_op("Remap", {{"border_type", ev(P::Remap::BorderMode::REFLECT)}}),
             {{{1, 2, 4, 4}}, {{1, 3, 2, 2}, f32, {0.5f, 1, -1.25f, 2.5f, 3.5f, 0}}}},
            {"remap_bwd_data",
             make_op("RemapBackwardData"),
             {{{1, 3, 2, 2}, f32, {0.5f, 1, -1.25f, 2.5f, 3.5f, 0}}, {{1, 2, 3, 2}}},
             {{1, 2, 4, 4}}},
            {"remap_bwd_mat",
             make_op("RemapBackwardMat", {{"scalar", 0.5f}}),
             {{{1, 2, 4, 4}},
              {{1, 3, 2, 2}, f32, {0.5f, 1, -1.25f, 2.5f, 3.5f, 0}},
              {{1, 2, 3, 2}}}},
            {"correlation",
             make_op("Correlation", {{"kernel_size", uint32_t(3)}, {"pad_size", uint32_t(1)}}),
             {{{1, 2, 4, 5}}, {{1, 2, 4, 5}}}},
            {"correlation_bwd1",
             make_op("CorrelationBackwardData1", {{"is_multiply", false}}),
             {{{1, 9, 2, 3}}, {{1, 2, 4, 5}}, {{1, 2, 4, 5}}}},
            {"correlation_bwd2",
             make_op("CorrelationBackwardData2", {{"stride2", uint32_t(2)}}),
             {{{1, 1, 2, 3}}, {{1, 2, 4, 5}}, {{1, 2, 4, 5}}}},
            {"deformable_psroi_pooling",
             make_op("DeformablePSROIPooling", {{"no_trans", false},
                                                {"pooled_h", uint32_t(2)},
                                                {"pooled_w", uint32_t(2)},
                                                {"part_size", uint32_t(2)},
                                                {"sample_per_part", uint32_t(2)},
                                                {"trans_std", 0.1f}}),
             {{{2, 2, 5, 6}},
              {{2, 5}, f32, {1, 0.5f, 1, 4, 3.5f, 0, -1, 0, 2, 6}},
              {{2, 2, 2, 2}}}},
            {"deformable_psroi_pooling_bwd",
             make_op("DeformablePSROIPoolingBackward", {{"pooled_h", uint32_t(2)},
                                                        {"pooled_w", uint32_t(2)},
                                                        {"sample_per_part", uint32_t(2)}}),
             {{{2, 2, 5, 6}},
              {{2, 5}, f32, {1, 0.5f, 1, 4, 3.5f, 0, -1, 0, 2, 6}},
              {{2, 2, 2, 2}},
              {{2, 2, 2, 2}},
              {{2, 2, 2, 2}, f32, {4}}}},
            {"resize_bwd",
             make_op("ResizeBackward", {{"out_h", uint32_t(4)}, {"out_w", uint32_t(3)}}),
             {{{1, 1, 4, 3}}},
             {{1, 1, 2, 2}}},
            {"bn_bwd",
             make_op("BatchNormBackward"),
             {{{2, 3, 2, 2}}, {{2, 3, 2, 2}}, {{1, 3, 1, 1}}, {{1, 3, 1, 1}}, {{1, 3, 1, 1}}}},
            {"layer_norm_bwd",
             make_op("LayerNormBackward"),
             {{{2, 4}}, {{2, 4}}, {{2}}, {{2}}, {{4}}}},
            {"group_norm_bwd",
             make_op("GroupNormBackward", {{"group", uint32_t(2)}}),
             {{{2, 4, 3}}, {{2, 4, 3}}, {{2, 2}}, {{2, 2}}, {{4}}}},
            {"lstm",
             make_op("LSTMForward", {{"reverse", true}}),
             {{{3, 2, 5}}, {{2, 4}}, {{2, 4}}, {{16, 5}}, {{16, 4}}, {{16}}}},
            {"lstm_bwd",
             make_op("LSTMBackward", {{"bias", false}}),
             {{{3, 2, 5}}, {{16, 5}}, {{16, 4}}, {{3, 2, 28}}, {{3, 2, 4}}, {{2, 4}}, {{2, 4}}}},
    };
}

// Builds the sample as a one-op graph (inputs in0.., outputs out0..), dumps and loads it, and
// compares the outputs of both on the same inputs.
void check_round_trip(const Sample& s) {
    SCOPED_TRACE(s.label + ": " + s.op->to_string());
    std::mt19937 rng(42);
    ComputingGraph g;
    std::vector<VarNode*> ins;
    std::map<std::string, std::vector<uint8_t>> values;
    for (size_t i = 0; i < s.inputs.size(); ++i) {
        const auto& in = s.inputs[i];
        std::string name = "in" + std::to_string(i);
        ins.push_back(g.input(name, in.shape, in.dtype, graph::test::cpu()));
        values[name] = host_values(in.shape, in.dtype, in.values, rng);
    }
    graph::InsertOptions opt;
    opt.output_shapes = s.preset;
    opt.comp_node = graph::test::cpu();
    const auto& outs = g.insert(*s.op, ins, opt);
    std::vector<NamedVar> named;
    for (size_t i = 0; i < outs.size(); ++i)
        named.push_back({"out" + std::to_string(i), outs[i]});

    auto bytes = dump(g, named);
    auto loaded = load(bytes);
    ASSERT_EQ(loaded.outputs.size(), outs.size());
    ASSERT_EQ(loaded.inputs.size(), ins.size());
    for (size_t i = 0; i < outs.size(); ++i) {
        EXPECT_EQ(loaded.outputs[i].name, named[i].name);
        EXPECT_EQ(loaded.outputs[i].var->layout().to_string(), outs[i]->layout().to_string());
        ASSERT_TRUE(loaded.outputs[i].var->owner());
        EXPECT_TRUE(loaded.outputs[i].var->owner()->op().is_same(*s.op));
    }
    auto want = run_graph(g, {outs.begin(), outs.end()}, values);
    auto got = run_graph(*loaded.graph, loaded.output_vars(), values);
    ASSERT_EQ(got.size(), want.size());
    if (s.op->name() == std::string("CondTake") || s.op->name() == std::string("NonZero")) {
        // Outputs of capacity {..., cap} whose first `count` (the last output) entries along
        // the last axis are defined; the rest is whatever the memory held.
        int32_t count;
        ASSERT_EQ(got.back(), want.back());
        std::memcpy(&count, want.back().data(), 4);
        for (size_t i = 0; i + 1 < got.size(); ++i) {
            size_t cap = outs[i]->shape().shape[outs[i]->shape().ndim - 1];
            size_t esize = outs[i]->dtype().size();
            for (size_t e = 0; e < got[i].size() / esize; ++e) {
                if (e % cap < static_cast<size_t>(count)) {
                    EXPECT_EQ(std::memcmp(&got[i][e * esize], &want[i][e * esize], esize), 0)
                            << "output " << i << " element " << e;
                }
            }
        }
        return;
    }
    for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], want[i]) << "output " << i;
}

TEST(ModelFile, EverySampledOpRoundTrips) {
    std::set<std::string> covered;
    for (const auto& s : samples()) {
        check_round_trip(s);
        covered.insert(s.op->name());
    }
    // Every op of the registry has a sample: a new op needs one here.
    std::string missing;
    for (OpId id : kAllOpIds)
        if (!covered.count(op_id_name(id)))
            missing += std::string(" ") + op_id_name(id);
    EXPECT_EQ(missing, "") << "ops without a sample in samples()";
}

TEST(ModelFile, ConvMatmulElemwiseNetRoundTripsWithWeights) {
    std::mt19937 rng(1);
    auto cn = graph::test::cpu();
    ComputingGraph g;
    auto* x = g.input("image", {2, 1, 6, 6}, dnn::dtype::Float32, cn);
    auto* w = g.constant(graph::test::tensor(graph::test::random_floats(4 * 9, rng), {4, 1, 3, 3}),
                         "conv.weight");
    auto* b = g.constant(graph::test::tensor(graph::test::random_floats(4, rng), {1, 4, 1, 1}),
                         "conv.bias");
    auto* fc = g.constant(graph::test::tensor(graph::test::random_floats(64 * 3, rng), {64, 3}),
                          "fc.weight");
    auto* y = g.insert1(*make_op("ConvolutionForward"), {x, w});
    y = g.insert1(graph::test::elemwise(graph::test::Mode::ADD), {y, b});
    y = g.insert1(graph::test::elemwise(graph::test::Mode::RELU), {y});
    y->set_name("features");
    y = g.insert1(graph::test::reshape({2, 64}), {y});
    y = g.insert1(*make_op("MatrixMul"), {y, fc});
    auto* prob = g.insert1(*make_op("SoftmaxForward", {{"axis", int32_t(1)}}), {y});
    std::vector<NamedVar> named{{"prob", prob}, {"logits", y}};

    std::ostringstream os;
    dump(g, named, os);
    std::string s = os.str();
    auto loaded = load({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
    EXPECT_EQ(loaded.graph->dump(loaded.output_vars()), g.dump(std::vector<VarNode*>{prob, y}));

    std::map<std::string, std::vector<uint8_t>> in{
            {"image", host_values({2, 1, 6, 6}, dnn::dtype::Float32, {}, rng)}};
    EXPECT_EQ(run_graph(*loaded.graph, loaded.output_vars(), in), run_graph(g, {prob, y}, in));
}

TEST(ModelFile, OnlyWhatTheOutputsNeedIsWritten) {
    ComputingGraph g;
    auto cn = graph::test::cpu();
    auto* a = g.input("a", {3}, dnn::dtype::Float32, cn);
    auto* unused = g.input("unused", {3}, dnn::dtype::Float32, cn);
    auto* c = g.constant(graph::test::tensor({1, 2, 3}, {3}), "c");
    g.insert1(graph::test::elemwise(graph::test::Mode::MUL), {unused, c});
    auto* y = g.insert1(graph::test::elemwise(graph::test::Mode::ADD), {a, c});
    auto loaded = load(dump(g, std::vector<NamedVar>{{"y", y}}));
    ASSERT_EQ(loaded.inputs.size(), 1u);
    EXPECT_EQ(loaded.inputs[0].name, "a");
    EXPECT_EQ(loaded.graph->topo_order().size(), 1u);
}

TEST(ModelFile, AnOutputMayBeAnInputOrAConstant) {
    ComputingGraph g;
    auto* a = g.input("a", {2}, dnn::dtype::Float32, graph::test::cpu());
    auto* c = g.constant(graph::test::tensor({4, 5}, {2}), "c");
    auto loaded = load(dump(g, std::vector<NamedVar>{{"a_out", a}, {"c_out", c}}));
    ASSERT_EQ(loaded.outputs.size(), 2u);
    EXPECT_EQ(loaded.outputs[0].var, loaded.inputs[0].var);
    EXPECT_EQ(loaded.outputs[1].var->kind(), VarNode::Kind::Const);
    EXPECT_EQ(graph::test::floats(loaded.outputs[1].var->value()), (std::vector<float>{4, 5}));
}

TEST(ModelFile, MetadataAndNamesRoundTrip) {
    ComputingGraph g;
    auto* a = g.input("data", {2}, dnn::dtype::Int32, graph::test::cpu());
    auto* y = g.insert1(graph::test::elemwise(graph::test::Mode::NEGATE), {a});
    y->set_name("negated");
    DumpOptions opt;
    opt.user_info = "trained on \xE2\x9C\x93 data\n";
    opt.producer_name = "unit-test";
    opt.producer_version = "9.9";
    auto bytes = dump(g, std::vector<NamedVar>{{"y", y}}, opt);
    auto loaded = load(bytes);
    EXPECT_EQ(loaded.metadata.user_info, opt.user_info);
    EXPECT_EQ(loaded.metadata.producer_name, "unit-test");
    EXPECT_EQ(loaded.metadata.producer_version, "9.9");
    EXPECT_EQ(loaded.metadata.format_version, kFormatVersion);
    EXPECT_EQ(loaded.outputs[0].var->name(), "negated");
    EXPECT_EQ(loaded.inputs[0].var->dtype(), dnn::dtype::Int32);
    EXPECT_EQ(read_metadata(bytes).user_info, opt.user_info);

    // Defaults: this build's name and version; names of computed vars can be dropped.
    opt = {};
    opt.keep_var_names = false;
    auto plain = load(dump(g, std::vector<NamedVar>{{"y", y}}, opt));
    EXPECT_EQ(plain.metadata.producer_name, "NeoMeg");
    EXPECT_EQ(plain.metadata.producer_version, neomeg_version());
    EXPECT_EQ(plain.outputs[0].var->name(), "");
}

TEST(ModelFile, DynamicInputShapeIsSetAtLoad) {
    ComputingGraph g;
    auto* x = g.input("x", {2, 3}, dnn::dtype::Float32, graph::test::cpu());
    auto* y = g.insert1(*make_op("Reduce", {{"axis", int32_t(1)}}), {x});
    DumpOptions opt;
    opt.input_shapes["x"] = {-1, 3};
    auto bytes = dump(g, std::vector<NamedVar>{{"sum", y}}, opt);

    auto same = load(bytes);
    EXPECT_EQ(same.inputs[0].declared_shape, (std::vector<int64_t>{-1, 3}));
    EXPECT_EQ(same.inputs[0].var->shape().to_string(), "{2,3}");

    LoadOptions lo;
    lo.input_shapes["x"] = TensorShape{5, 3};
    auto big = load(bytes, lo);
    EXPECT_EQ(big.outputs[0].var->shape().to_string(), "{5,1}");
    std::mt19937 rng(0);
    auto got = run_graph(*big.graph, big.output_vars(),
                         {{"x", host_values({5, 3}, dnn::dtype::Float32, {1, 2, 3}, rng)}});
    std::vector<float> sums(5);
    std::memcpy(sums.data(), got[0].data(), 20);
    EXPECT_EQ(sums, std::vector<float>(5, 6.f));

    lo.input_shapes["x"] = TensorShape{5, 4};  // the fixed dimension differs
    EXPECT_THROW(load(bytes, lo), dnn::ParamError);
    lo.input_shapes = {{"nope", TensorShape{1}}};
    EXPECT_THROW(load(bytes, lo), dnn::ParamError);
    opt.input_shapes["x"] = {-1, 4};  // does not fit the graph's {2,3}
    EXPECT_THROW(dump(g, std::vector<NamedVar>{{"sum", y}}, opt), ModelError);
}

TEST(ModelFile, DumpRejectsWhatItCannotWrite) {
    ComputingGraph g;
    auto cn = graph::test::cpu();
    auto* a = g.input("", {2}, dnn::dtype::Float32, cn);
    auto* y = g.insert1(graph::test::elemwise(graph::test::Mode::RELU), {a});
    EXPECT_THROW(dump(g, std::vector<NamedVar>{{"y", y}}), ModelError);  // an unnamed input
    ComputingGraph h;
    auto* b = h.input("b", {2}, dnn::dtype::Float32, cn);
    EXPECT_THROW(dump(h, std::vector<NamedVar>{{"", b}}), ModelError);
    EXPECT_THROW(dump(h, std::vector<NamedVar>{{"o", b}, {"o", b}}), ModelError);
    EXPECT_THROW(dump(h, std::vector<NamedVar>{{"o", y}}), ModelError);  // another graph's var
    EXPECT_THROW(dump(h, std::vector<NamedVar>{}), ModelError);
}

TEST(ModelFile, DumpFileIsAtomicAndLoadFileReadsIt) {
    auto dir = std::filesystem::temp_directory_path() /
               ("neomeg_model_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto path = (dir / "m.nmeg").string();
    {
        std::ofstream old(path);
        old << "an older file";
    }
    ComputingGraph g;
    auto* a = g.input("a", {2}, dnn::dtype::Float32, graph::test::cpu());
    auto* y = g.insert1(graph::test::elemwise(graph::test::Mode::EXP), {a});
    dump_file(g, std::vector<NamedVar>{{"y", y}}, path);
    EXPECT_EQ(load_file(path).outputs[0].name, "y");
    // Only the model is left: no temporary file beside it.
    size_t files = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir))
        ++files;
    EXPECT_EQ(files, 1u);
    EXPECT_THROW(dump_file(g, std::vector<NamedVar>{{"y", y}}, (dir / "no/such/dir.nmeg").string()),
                 std::system_error);
    EXPECT_THROW(load_file((dir / "missing.nmeg").string()), std::system_error);
    std::filesystem::remove_all(dir);
}

TEST(ModelFile, SharedConstantsAreCopiedOnceAndChecked) {
    ComputingGraph g;
    auto* a = g.input("a", {2}, dnn::dtype::Float32, graph::test::cpu());
    auto* c = g.constant(graph::test::tensor({4, 5}, {2}), "c");
    auto* y = g.insert1(graph::test::elemwise(graph::test::Mode::ADD), {a, c});
    auto bytes = dump(g, std::vector<NamedVar>{{"y", y}});
    LoadOptions opt;
    opt.shared_constants = std::make_shared<std::vector<DeviceTensor>>();
    auto first = load(bytes, opt);
    ASSERT_EQ(opt.shared_constants->size(), 1u);
    auto second = load(bytes, opt);
    auto const_of = [](const LoadedGraph& l) { return l.outputs[0].var->owner()->inputs()[1]; };
    EXPECT_EQ(const_of(first)->value().raw_ptr(), const_of(second)->value().raw_ptr());
    EXPECT_NE(const_of(first)->value().raw_ptr(), const_of(load(bytes))->value().raw_ptr());

    // A cache from another model does not fit.
    ComputingGraph h;
    auto* b = h.input("b", {3}, dnn::dtype::Float32, graph::test::cpu());
    auto* d = h.constant(graph::test::tensor({1, 2, 3}, {3}), "d");
    auto other = dump(
            h, std::vector<NamedVar>{
                       {"z", h.insert1(graph::test::elemwise(graph::test::Mode::MUL), {b, d})}});
    EXPECT_THROW(load(other, opt), dnn::ParamError);
}

// A file written by format version 1 (src/test/fixtures/README.md) loads and computes what its
// weights say: softmax(relu(data @ W + b)) with W picking feature j for class j (plus 0.1 of
// feature 3) and b = (0, 0, 0.5).
TEST(ModelFile, FormatVersion1FileStillLoads) {
    auto loaded = load_file(NEOMEG_TEST_FIXTURES "/classifier_v1.nmeg");
    EXPECT_EQ(loaded.metadata.format_version, 1u);
    EXPECT_EQ(loaded.metadata.user_info, "example classifier");
    ASSERT_EQ(loaded.inputs.size(), 1u);
    EXPECT_EQ(loaded.inputs[0].name, "data");
    EXPECT_EQ(loaded.inputs[0].declared_shape, (std::vector<int64_t>{-1, 4}));
    ASSERT_EQ(loaded.outputs.size(), 1u);
    EXPECT_EQ(loaded.outputs[0].name, "prob");

    std::vector<float> x{1, 2, 3, 4};
    std::vector<uint8_t> xb(16);
    std::memcpy(xb.data(), x.data(), 16);
    auto got = run_graph(*loaded.graph, loaded.output_vars(), {{"data", xb}});
    std::vector<float> prob(3);
    ASSERT_EQ(got[0].size(), 12u);
    std::memcpy(prob.data(), got[0].data(), 12);
    float l[3] = {1 + 0.4f, 2 + 0.4f, 3 + 0.4f + 0.5f};
    float sum = std::exp(l[0]) + std::exp(l[1]) + std::exp(l[2]);
    for (int i = 0; i < 3; ++i)
        EXPECT_NEAR(prob[i], std::exp(l[i]) / sum, 1e-6f) << i;
}

}  // namespace
}  // namespace neomeg::serialization::test
