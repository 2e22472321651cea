// Layout rules of Correlation and its two gradients: format NCHW, data1 and data2 float tensors
// of one shape and dtype, an odd kernel_size, positive strides, and a geometry that leaves at
// least one output pixel (src/common/correlation_geometry.h); the gradients take diff of the
// forward's dst layout and give data1's (or data2's) shape.
#include "neomeg/dnn/operators/vision.h"
#include "src/common/correlation_geometry.h"

namespace neomeg::dnn {
namespace {

TensorLayout forward_layout(const OperatorBase& op, const param::Correlation& p,
                            const TensorLayout& data1, const TensorLayout& data2) {
    NM_OP_REQUIRE(op, ParamError, p.format == param::Correlation::Format::NCHW,
                  "only format NCHW is supported");
    NM_OP_REQUIRE(op, ShapeError, data1.ndim == 4, "data1 must be NCHW (4-D), got ",
                  data1.to_string());
    NM_OP_REQUIRE(op, ShapeError, data2.ndim == 4 && data2.eq_shape(data1),
                  "data2 must have data1's shape ", data1.TensorShape::to_string(), ", got ",
                  data2.to_string());
    NM_OP_REQUIRE(op, DTypeError, data1.dtype.is_float(), "dtype ", data1.dtype.name(),
                  " is not supported (float only), data1 ", data1.to_string());
    NM_OP_REQUIRE(op, DTypeError, data2.dtype == data1.dtype, "data2 ", data2.to_string(),
                  " must have data1's dtype ", data1.dtype.name());
    NM_OP_REQUIRE(op, ParamError, p.kernel_size % 2 == 1, "kernel_size must be odd, got ",
                  p.kernel_size);
    NM_OP_REQUIRE(op, ParamError, p.stride1 > 0 && p.stride2 > 0,
                  "stride1 and stride2 must be positive");
    NM_OP_REQUIRE(op, ShapeError, data1.shape[1] > 0, "data1 needs at least one channel, got ",
                  data1.to_string());
    auto g = correlation::geometry(p, data1);
    NM_OP_REQUIRE(op, ShapeError, g.out_h >= 1 && g.out_w >= 1, "data of ",
                  data1.TensorShape::to_string(),
                  " is smaller than the window with its displacements (2 * (max_displacement + "
                  "(kernel_size - 1) / 2) - 2 * pad_size + 1 pixels per side)");
    return TensorLayout({data1.shape[0], static_cast<size_t>(g.channels()),
                         static_cast<size_t>(g.out_h), static_cast<size_t>(g.out_w)},
                        data1.dtype);
}

void backward_layout(const OperatorBase& op, const param::Correlation& p,
                     std::span<const TensorLayout> inputs, TensorLayout& grad, size_t which) {
    const TensorLayout &diff = inputs[0], &data1 = inputs[1], &data2 = inputs[2];
    TensorLayout dst = forward_layout(op, p, data1, data2);
    NM_OP_REQUIRE(op, ShapeError, diff.eq_shape(dst), "diff must have the forward's shape ",
                  dst.TensorShape::to_string(), ", got ", diff.to_string());
    NM_OP_REQUIRE(op, DTypeError, diff.dtype == data1.dtype, "diff ", diff.to_string(),
                  " must have the data's dtype ", data1.dtype.name());
    grad = TensorLayout(inputs[which], data1.dtype);
}

}  // namespace

void Correlation::deduce_layout(std::span<const TensorLayout> inputs,
                                std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    outputs[0] = forward_layout(*this, m_param, inputs[0], inputs[1]);
}

void CorrelationBackwardData1::deduce_layout(std::span<const TensorLayout> inputs,
                                             std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    backward_layout(*this, m_param, inputs, outputs[0], 1);
}

void CorrelationBackwardData2::deduce_layout(std::span<const TensorLayout> inputs,
                                             std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    backward_layout(*this, m_param, inputs, outputs[0], 2);
}

}  // namespace neomeg::dnn
