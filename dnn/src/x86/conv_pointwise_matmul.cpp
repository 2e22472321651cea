#include "src/x86/conv_pointwise_matmul.h"

#include <string_view>

namespace neomeg::dnn::x86 {
namespace {

size_t pixels(const TensorLayout& l) {
    size_t n = 1;
    for (size_t d = 2; d < l.ndim; ++d)
        n *= l[d];
    return n;
}

// A contiguous (N, C, pixels...) tensor as N matrices of C x pixels.
std::optional<memory::desc> images_desc(const TensorLayout& l) {
    const memory::dim c = memory::dim(l[1]), p = memory::dim(pixels(l));
    return plain_desc({memory::dim(l[0]), c, p}, {c * p, p, 1});
}

// The filter (OC, IC, 1...) as one matrix for the whole batch: OC x IC, or read transposed,
// IC x OC. A pointwise convolution has one group, and the flipped mode reverses only axes of
// size 1.
std::optional<memory::desc> filter_desc(const TensorLayout& l, bool transposed) {
    memory::dims dims{1, memory::dim(l[0]), memory::dim(l[1])},
            strides{memory::dim(l[0] * l[1]), l.stride[0], l.stride[1]};
    if (transposed) {
        std::swap(dims[1], dims[2]);
        std::swap(strides[1], strides[2]);
    }
    return plain_desc(dims, strides);
}

// oneDNN 2.6's float32 matmul is its brgemm kernel from AVX-512 on and gemm:jit (its sgemm) below.
bool has_brgemm() {
    return has_avx512_core();
}

}  // namespace

bool pointwise_matmul(const ConvDims& g, const TensorLayout& in, const TensorLayout& out) {
    auto plain = [](const TensorLayout& l) {
        return l.dtype == dtype::Float32 && l.is_contiguous();
    };
    const size_t p = pixels(in);
    return g.pointwise && plain(in) && plain(out) && p < kMinPointwiseGemmPixels &&
           (p % kPointwiseMatmulPixelStep == 0 ||
            (p >= kMinPointwiseSgemmMatmulPixels && !has_brgemm()));
}

std::unique_ptr<Plan> pointwise_matmul_plan(const HandleImpl& handle, ConvPass pass,
                                            const TensorLayout& filter, const TensorLayout& in,
                                            const TensorLayout& out) {
    const bool transposed = pass == ConvPass::backward_data;
    Operand w = Operand::of(filter, false, [transposed](const TensorLayout& l) {
        return filter_desc(l, transposed);
    });
    Operand src = Operand::of(in, false, images_desc), dst = Operand::of(out, false, images_desc);
    // The primitive reads the filter plain: brgemm took 1.1x longer on the transposed one, sgemm
    // (below AVX-512) 1.2x on 4x4 512->512 images (the reorder is kept in the WeightCache).
    const memory::desc w_md(w.user_desc().dims(), memory::data_type::f32, memory::format_tag::abc);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(w_md, src.user_desc(), dst.user_desc()),
                                    user_scratchpad(), handle.engine());
    if (!std::string_view(pd.impl_info_str()).starts_with(has_brgemm() ? "brg" : "gemm"))
        return nullptr;
    auto plan = std::make_unique<PrimitivePlan>(dnnl::matmul(pd), pd, handle.engine(),
                                                str_cat(pd.impl_info_str(), " as pointwise"));
    // The call's tensors in order: the forward's src comes before its filter.
    if (transposed)
        plan->add(DNNL_ARG_SRC, std::move(w).cached(), pd.src_desc(), false);
    plan->add(DNNL_ARG_WEIGHTS, std::move(src), pd.weights_desc(), false);
    if (!transposed)
        plan->add(DNNL_ARG_SRC, std::move(w).cached(), pd.src_desc(), false);
    plan->add(DNNL_ARG_DST, std::move(dst), pd.dst_desc(), true);
    plan->finalize();
    return plan;
}

}  // namespace neomeg::dnn::x86
