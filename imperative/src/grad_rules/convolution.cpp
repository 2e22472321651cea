// Backward rules of the convolutions. ConvolutionForward, ConvolutionBackwardData and
// ConvolutionBackwardFilter are the three bilinear maps of one convolution, each the adjoint of the
// others in one argument:
//   <G, conv(x, w)> = <BD(w, G), x> = <BF(x, G), w>
// so the gradients of each are the other two, with the same param. That closes the family under
// differentiation: every order of gradient stays within these three fused kernels.
//
// The backward ops take the gradient's shape preset to the forward input's (or filter's) shape: a
// strided forward floors its output size, so several input sizes give the same output and the one
// BD/BF would deduce is not necessarily the one autograd needs.
#include "neomeg/op/defs/convolution.h"
#include "neomeg/imperative/op_def.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;

// ConvBias carries a convolution's geometry next to its nonlinearity.
dnn::param::Convolution conv_param_of(const dnn::param::ConvBias& p) {
    dnn::param::Convolution c;
    c.mode = static_cast<dnn::param::Convolution::Mode>(p.mode);
    c.stride = p.stride;
    c.padding = p.padding;
    c.dilation = p.dilation;
    c.group = p.group;
    return c;
}

Tensor conv_forward(const dnn::param::Convolution& p, const Tensor& src, const Tensor& filter) {
    std::array<Tensor, 2> in{src, filter};
    return imperative::apply(*shared_op<ops::ConvolutionForward>(p), in)[0];
}

// Gradient with respect to the forward's src, of `src_shape`.
Tensor conv_backward_data(const dnn::param::Convolution& p, const Tensor& filter,
                          const Tensor& diff, const dnn::TensorShape& src_shape) {
    std::array<Tensor, 2> in{filter, diff};
    return imperative::apply(*shared_op<ops::ConvolutionBackwardData>(p), in, {&src_shape, 1})[0];
}

// Gradient with respect to the forward's filter, of `filter_shape`.
Tensor conv_backward_filter(const dnn::param::Convolution& p, const Tensor& src, const Tensor& diff,
                            const dnn::TensorShape& filter_shape) {
    std::array<Tensor, 2> in{src, diff};
    return imperative::apply(*shared_op<ops::ConvolutionBackwardFilter>(p), in,
                             {&filter_shape, 1})[0];
}

// dst = conv(src, filter)
std::vector<Tensor> conv_forward_grad(const OpDef& def, std::span<const Tensor> x,
                                      std::span<const Tensor>, std::span<const Tensor> dy,
                                      std::span<const bool> needs) {
    const auto& p = static_cast<const ops::ConvolutionForward&>(def).param();
    const Tensor &src = x[0], &filter = x[1];
    std::vector<Tensor> g(2);
    if (needs[0])
        g[0] = conv_backward_data(p, filter, dy[0], src.shape());
    if (needs[1])
        g[1] = conv_backward_filter(p, src, dy[0], filter.shape());
    return g;
}

// grad = BD(filter, diff), src-shaped: <G, BD(w, d)> = <conv(G, w), d> = <BF(G, d), w>.
std::vector<Tensor> conv_backward_data_grad(const OpDef& def, std::span<const Tensor> x,
                                            std::span<const Tensor>, std::span<const Tensor> dy,
                                            std::span<const bool> needs) {
    const auto& p = static_cast<const ops::ConvolutionBackwardData&>(def).param();
    const Tensor &filter = x[0], &diff = x[1], &dgrad = dy[0];
    std::vector<Tensor> g(2);
    if (needs[0])
        g[0] = conv_backward_filter(p, dgrad, diff, filter.shape());
    if (needs[1])
        g[1] = conv_forward(p, dgrad, filter);
    return g;
}

// grad = BF(src, diff), filter-shaped: <G, BF(x, d)> = <conv(x, G), d> = <BD(G, d), x>.
std::vector<Tensor> conv_backward_filter_grad(const OpDef& def, std::span<const Tensor> x,
                                              std::span<const Tensor>, std::span<const Tensor> dy,
                                              std::span<const bool> needs) {
    const auto& p = static_cast<const ops::ConvolutionBackwardFilter&>(def).param();
    const Tensor &src = x[0], &diff = x[1], &dgrad = dy[0];
    std::vector<Tensor> g(2);
    if (needs[0])
        g[0] = conv_backward_data(p, dgrad, diff, src.shape());
    if (needs[1])
        g[1] = conv_forward(p, src, dgrad);
    return g;
}

// dst = act(conv(src, filter) + bias + z); bias and z of ndim 0 are absent.
std::vector<Tensor> conv_bias_grad(const OpDef& def, std::span<const Tensor> x,
                                   std::span<const Tensor> y, std::span<const Tensor> dy,
                                   std::span<const bool> needs) {
    const auto& p = static_cast<const ops::ConvBias&>(def).param();
    using Nonline = dnn::param::ConvBias::NonlineMode;
    const Tensor &src = x[0], &filter = x[1], &bias = x[2], &z = x[3];
    // The gradient with respect to the pre-activation sum.
    Tensor dpre;
    switch (p.nonlineMode) {
        case Nonline::IDENTITY:
            dpre = dy[0];
            break;
        case Nonline::RELU:  // dst > 0 exactly where the sum is
            dpre = elemwise(Mode::SWITCH_GT0, {y[0], dy[0]});
            break;
        case Nonline::SIGMOID:
            dpre = elemwise(Mode::SIGMOID_GRAD, {y[0], dy[0]});
            break;
        case Nonline::H_SWISH: {  // not invertible from dst: recompute the sum
            dnn::param::ConvBias id = p;
            id.nonlineMode = Nonline::IDENTITY;
            Tensor pre = imperative::apply(ops::ConvBias(id), x)[0];
            dpre = elemwise(Mode::H_SWISH_GRAD, {pre, dy[0]});
            break;
        }
    }
    dnn::param::Convolution cp = conv_param_of(p);
    std::vector<Tensor> g(4);
    if (needs[0])
        g[0] = conv_backward_data(cp, filter, dpre, src.shape());
    if (needs[1])
        g[1] = conv_backward_filter(cp, src, dpre, filter.shape());
    if (needs[2] && bias.shape().ndim != 0)
        g[2] = reduce_to(dpre, bias.shape());
    if (needs[3] && z.shape().ndim != 0)
        g[3] = dpre;
    return g;
}

// dst = deformable_conv(src, filter, offset, mask): one DeformableConvBackwardData gives the
// gradients of src, offset and mask together (they share the sampling), BackwardFilter the
// filter's, whose kernel size it cannot deduce. The backward ops have no rules of their own, so
// second derivatives of a deformable convolution are not available.
std::vector<Tensor> deformable_conv_grad(const OpDef& def, std::span<const Tensor> x,
                                         std::span<const Tensor>, std::span<const Tensor> dy,
                                         std::span<const bool> needs) {
    const auto& p = static_cast<const ops::DeformableConvForward&>(def).param();
    std::vector<Tensor> g(4);
    if (needs[0] || needs[2] || needs[3]) {
        std::array<Tensor, 5> in{x[0], x[1], x[2], x[3], dy[0]};
        auto r = imperative::apply(*shared_op<ops::DeformableConvBackwardData>(p), in);
        // Outputs src_grad, offset_grad, mask_grad: inputs 0, 2, 3.
        const size_t input_of[3] = {0, 2, 3};
        for (size_t k = 0; k < 3; ++k)
            if (needs[input_of[k]])
                g[input_of[k]] = r[k];
    }
    if (needs[1]) {
        dnn::TensorShape shape = x[1].shape();
        std::array<Tensor, 4> in{x[0], x[2], x[3], dy[0]};
        g[1] = imperative::apply(*shared_op<ops::DeformableConvBackwardFilter>(p), in,
                                 {&shape, 1})[0];
    }
    return g;
}

// dst = region_restricted_conv(src, filter, rin, rout): the gradients of src and filter, each
// preset to its input's shape; the region ids have none. The backward ops have no rules of their
// own.
std::vector<Tensor> region_restricted_conv_grad(const OpDef& def, std::span<const Tensor> x,
                                                std::span<const Tensor>, std::span<const Tensor> dy,
                                                std::span<const bool> needs) {
    const auto& p = static_cast<const ops::RegionRestrictedConvolutionForward&>(def).param();
    std::vector<Tensor> g(4);
    if (needs[0]) {
        dnn::TensorShape shape = x[0].shape();
        std::array<Tensor, 4> in{x[1], dy[0], x[2], x[3]};
        g[0] = imperative::apply(*shared_op<ops::RegionRestrictedConvolutionBackwardData>(p), in,
                                 {&shape, 1})[0];
    }
    if (needs[1]) {
        dnn::TensorShape shape = x[1].shape();
        std::array<Tensor, 4> in{x[0], dy[0], x[2], x[3]};
        g[1] = imperative::apply(*shared_op<ops::RegionRestrictedConvolutionBackwardFilter>(p), in,
                                 {&shape, 1})[0];
    }
    return g;
}

}  // namespace

NM_REGISTER_GRAD(ConvolutionForward, conv_forward_grad);
NM_REGISTER_GRAD(ConvolutionBackwardData, conv_backward_data_grad);
NM_REGISTER_GRAD(ConvolutionBackwardFilter, conv_backward_filter_grad);
NM_REGISTER_GRAD(ConvBias, conv_bias_grad);
NM_REGISTER_GRAD(DeformableConvForward, deformable_conv_grad);
NM_REGISTER_GRAD(RegionRestrictedConvolutionForward, region_restricted_conv_grad);

}  // namespace neomeg::imperative
