// Layout rules of ConvolutionForward, ConvolutionBackwardData and ConvolutionBackwardFilter.
//
// A strided forward convolution floors (in + 2p - extent) / stride, so several input sizes (and
// several kernel sizes) give the same output. The backward ops therefore accept a grad shape preset
// by the caller (autograd knows the forward's src and filter; conv_transpose's output_padding picks
// a larger size) and check that its forward output is diff; without one they deduce the smallest
// input (backward data) or the largest kernel (backward filter).
#include "neomeg/dnn/operators/convolution.h"
#include "src/common/conv_backward_layout.h"
#include "src/common/convolution_geometry.h"

namespace neomeg::dnn {

void ConvolutionForward::deduce_layout(std::span<const TensorLayout> inputs,
                                       std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    ConvGeometry g = conv_forward_geometry(*this, ConvArgs::of(m_param), inputs[0], inputs[1]);
    outputs[0] = conv_dst_layout(g, inputs[0].dtype);
}

namespace {

// Checks the ranks and dtypes the backward ops share; `a` is filter or src, `diff` the gradient.
void check_backward_inputs(const OperatorBase& op, const char* a_name, const TensorLayout& a,
                           const TensorLayout& diff) {
    // Built only for a failing check's message: formatting layouts costs more than the checks.
    auto shapes = [&] { return str_cat(a_name, " ", a.to_string(), ", diff ", diff.to_string()); };
    NM_OP_REQUIRE(op, ShapeError,
                  diff.ndim >= 3 && diff.ndim <= 2 + kMaxConvSpatial && a.ndim == diff.ndim,
                  "diff must be (N, OC, spatial...) with 1 to 3 spatial dims and ", a_name,
                  " of the same rank; ", shapes());
    NM_OP_REQUIRE(op, DTypeError, a.dtype.is_float() && a.dtype == diff.dtype,
                  "dtypes must be equal and float; ", shapes());
}

// The forward geometry of (src, filter) must reproduce diff.
void check_forward_gives_diff(const OperatorBase& op, const ConvGeometry& g,
                              const TensorLayout& src, const TensorLayout& filter,
                              const TensorLayout& diff) {
    TensorLayout dst = conv_dst_layout(g, diff.dtype);
    NM_OP_REQUIRE(op, ShapeError, dst.eq_shape(diff), "forward of src ", src.to_string(),
                  " and filter ", filter.to_string(), " gives ", dst.TensorShape::to_string(),
                  ", not diff's ", diff.to_string());
}

}  // namespace

TensorLayout conv_backward_data_grad(const OperatorBase& op, const ConvArgs& args,
                                     const TensorLayout& filter, const TensorLayout& diff,
                                     const TensorLayout& preset) {
    check_backward_inputs(op, "filter", filter, diff);
    size_t spatial = diff.ndim - 2;
    conv_check_args(op, args, spatial);
    auto shapes = [&] {
        return str_cat("filter ", filter.to_string(), ", diff ", diff.to_string());
    };
    NM_OP_REQUIRE(op, ShapeError, filter[0] == diff[1], "filter has ", filter[0],
                  " output channels, diff has ", diff[1], "; ", shapes());

    TensorLayout grad = preset;
    if (grad.ndim == 0) {
        grad.ndim = diff.ndim;
        grad[0] = diff[0];
        grad[1] = filter[1] * args.group;
        for (size_t d = 0; d < spatial; ++d) {
            auto out = static_cast<ptrdiff_t>(diff[2 + d]);
            auto k = static_cast<ptrdiff_t>(filter[2 + d]);
            ptrdiff_t in = (out - 1) * args.stride[d] - 2 * args.padding[d] +
                           args.dilation[d] * (k - 1) + 1;
            NM_OP_REQUIRE(op, ShapeError, out >= 1 && k >= 1 && in >= 1,
                          "no input size gives diff in spatial dim ", d, " (deduced ", in, "); ",
                          shapes());
            grad[2 + d] = static_cast<size_t>(in);
        }
    }
    NM_OP_REQUIRE(op, ShapeError, grad.ndim == diff.ndim, "preset grad shape ",
                  grad.TensorShape::to_string(), " must have diff's rank; ", shapes());
    grad = TensorLayout(grad, diff.dtype);
    ConvGeometry g = conv_forward_geometry(op, args, grad, filter);
    check_forward_gives_diff(op, g, grad, filter, diff);
    return grad;
}

TensorLayout conv_backward_filter_grad(const OperatorBase& op, const ConvArgs& args,
                                       const TensorLayout& src, const TensorLayout& diff,
                                       const TensorLayout& preset) {
    check_backward_inputs(op, "src", src, diff);
    size_t spatial = diff.ndim - 2;
    conv_check_args(op, args, spatial);
    auto shapes = [&] { return str_cat("src ", src.to_string(), ", diff ", diff.to_string()); };
    NM_OP_REQUIRE(op, ParamError, src[1] % args.group == 0, "group ", args.group,
                  " must divide the input channels ", src[1], "; ", shapes());

    TensorLayout grad = preset;
    if (grad.ndim == 0) {
        grad.ndim = diff.ndim;
        grad[0] = diff[1];
        grad[1] = src[1] / args.group;
        for (size_t d = 0; d < spatial; ++d) {
            auto in = static_cast<ptrdiff_t>(src[2 + d]);
            auto out = static_cast<ptrdiff_t>(diff[2 + d]);
            ptrdiff_t room = in + 2 * args.padding[d] - 1 - (out - 1) * args.stride[d];
            NM_OP_REQUIRE(op, ShapeError, out >= 1 && room >= 0,
                          "no kernel size gives diff in spatial dim ", d, "; ", shapes());
            grad[2 + d] = static_cast<size_t>(room / args.dilation[d] + 1);
        }
    }
    NM_OP_REQUIRE(op, ShapeError, grad.ndim == diff.ndim, "preset grad shape ",
                  grad.TensorShape::to_string(), " must have diff's rank; ", shapes());
    grad = TensorLayout(grad, diff.dtype);
    ConvGeometry g = conv_forward_geometry(op, args, src, grad);
    check_forward_gives_diff(op, g, src, grad, diff);
    return grad;
}

void ConvolutionBackwardData::deduce_layout(std::span<const TensorLayout> inputs,
                                            std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    outputs[0] =
            conv_backward_data_grad(*this, ConvArgs::of(m_param), inputs[0], inputs[1], outputs[0]);
}

void ConvolutionBackwardFilter::deduce_layout(std::span<const TensorLayout> inputs,
                                              std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    outputs[0] = conv_backward_filter_grad(*this, ConvArgs::of(m_param), inputs[0], inputs[1],
                                           outputs[0]);
}

}  // namespace neomeg::dnn
