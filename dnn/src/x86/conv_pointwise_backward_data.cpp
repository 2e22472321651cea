#include "src/x86/conv_pointwise_backward_data.h"

#include <string_view>

namespace neomeg::dnn::x86 {

bool pointwise_backward_data_as_forward(const ConvDims& g, const TensorLayout& filter,
                                        const TensorLayout& diff, const TensorLayout& grad) {
    return filter.dtype == dtype::Float32 && pointwise_gemm(ConvPass::backward_data, g, diff) &&
           pointwise_gemm(ConvPass::backward_data, g, grad) && grad[1] > diff[1];
}

std::unique_ptr<Plan> pointwise_backward_data_plan(const HandleImpl& handle, const ConvDims& g,
                                                   const TensorLayout& filter,
                                                   const TensorLayout& diff,
                                                   const TensorLayout& grad) {
    // The forward's filter (IC, OC, 1...): the caller's with its first two axes swapped. A
    // pointwise convolution has one group, and the flipped mode reverses only axes of size 1.
    TensorLayout transposed = filter;
    std::swap(transposed.shape[0], transposed.shape[1]);
    transposed.init_contiguous_stride();
    auto pd = conv_forward_pd(handle, g, ConvPass::backward_data, diff, transposed, grad);
    if (std::string_view(pd.impl_info_str()).find("gemm") == std::string_view::npos)
        return nullptr;
    auto describe = [](const TensorLayout& l) {
        memory::dims dims = dims_of(l), strides = strides_of(l);
        std::swap(dims[0], dims[1]);
        std::swap(strides[0], strides[1]);
        return plain_desc(dims, strides, *dnnl_type_of(l.dtype));
    };
    auto plan = std::make_unique<PrimitivePlan>(dnnl::convolution_forward(pd), pd, handle.engine(),
                                                str_cat(pd.impl_info_str(), " as forward"));
    plan->add(DNNL_ARG_WEIGHTS, Operand::of(filter, false, describe).cached(), pd.weights_desc(),
              false);
    plan->add(DNNL_ARG_SRC, data_operand(diff), pd.src_desc(), false);
    plan->add(DNNL_ARG_DST, data_operand(grad), pd.dst_desc(), true);
    plan->finalize();
    return plan;
}

}  // namespace neomeg::dnn::x86
