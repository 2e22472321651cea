#include "src/x86/conv_common.h"

#include <algorithm>

#include "neomeg/dnn/channels_last.h"

namespace neomeg::dnn::x86 {
namespace {

// The filter (OC, IC/group, k...) as oneDNN's grouped weights (group, OC/group, IC/group, k...):
// the same memory, its first axis split.
memory::dims weights_dims(const TensorLayout& l, uint32_t group) {
    memory::dims d = dims_of(l);
    if (group == 1)
        return d;
    d[0] /= group;
    d.insert(d.begin(), group);
    return d;
}

std::optional<memory::desc> weights_desc(const TensorLayout& l, uint32_t group) {
    memory::dims s = strides_of(l);
    if (group > 1)
        s.insert(s.begin(), s[0] * static_cast<memory::dim>(l[0] / group));
    return plain_desc(weights_dims(l, group), s, *dnnl_type_of(l.dtype));
}

std::optional<memory::desc> data_desc(const TensorLayout& l) {
    return plain_desc(dims_of(l), strides_of(l), *dnnl_type_of(l.dtype));
}

// The pixels per image (the product of the axes after N and C).
size_t spatial_size(const TensorLayout& l) {
    size_t n = 1;
    for (size_t d = 2; d < l.ndim; ++d)
        n *= l[d];
    return n;
}

}  // namespace

bool onednn_runs_isa(dnnl::cpu_isa want) {
    // cpu_isa values are bit sets: each ISA's bits include those of the ISAs below it.
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa()),
               w = static_cast<unsigned>(want);
    return (isa & w) == w;
}

bool has_avx512_core() {
    return onednn_runs_isa(dnnl::cpu_isa::avx512_core);
}

std::optional<ConvDims> conv_geometry(const ConvArgs& args, const TensorLayout& src,
                                      const TensorLayout& filter, const TensorLayout& dst) {
    for (const TensorLayout* l : {&src, &filter, &dst})
        if (l->ndim != src.ndim || l->dtype != src.dtype || l->is_empty())
            return std::nullopt;
    size_t spatial = src.ndim - 2;
    if (spatial < 1 || spatial > kMaxConvSpatial || !dnnl_type_of(src.dtype))
        return std::nullopt;
    ConvDims g;
    for (size_t d = 0; d < spatial; ++d) {
        g.stride.push_back(args.stride[d]);
        g.dilate.push_back(args.dilation[d] - 1);
        g.pad.push_back(args.padding[d]);
    }
    g.group = args.group;
    g.flip = args.flip;
    g.depthwise = g.group > 1 && src[1] == g.group;
    g.pointwise = g.group == 1;
    g.min_channels = std::min(src[1], dst[1]);
    for (size_t d = 0; d < spatial; ++d)
        g.pointwise = g.pointwise && filter[2 + d] == 1 && g.stride[d] == 1 && g.pad[d] == 0;
    return g;
}

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

memory::desc any_desc(const TensorLayout& l) {
    return memory::desc(dims_of(l), *dnnl_type_of(l.dtype), memory::format_tag::any);
}

bool nhwc_pinned(const TensorLayout& l, const ConvDims& g, const TensorLayout& partner) {
    if (l.ndim != partner.ndim)
        return false;
    const bool l_cl = is_channels_last(l), partner_cl = is_channels_last(partner);
    if (l_cl == partner_cl)
        return l_cl;
    if (g.depthwise)
        return true;
    const TensorLayout& cl = l_cl ? l : partner;
    const TensorLayout& plain = l_cl ? partner : l;
    return g.pointwise && cl.total_nr_elems() > plain.total_nr_elems();
}

bool pointwise_gemm(ConvPass pass, const ConvDims& g, const TensorLayout& l) {
    if (!g.pointwise || l.dtype != dtype::Float32 || !l.is_contiguous())
        return false;
    const size_t pixels = spatial_size(l);
    switch (pass) {
        case ConvPass::forward:
        case ConvPass::forward_const_filter:
        case ConvPass::backward_data:
            return pixels >= kMinPointwiseGemmPixels &&
                   (g.min_channels > kMaxBlockedPointwiseChannels || has_avx512_core());
        case ConvPass::backward_filter:
            if (!has_avx512_core())
                return pixels >= kMinPointwiseFilterGemmPixelsAvx2;
            return l[0] >= 2 && pixels >= kMinPointwiseFilterGemmPixels &&
                   pixels < kMaxPointwiseFilterGemmPixels;
    }
    return false;
}

memory::desc any_desc(const TensorLayout& l, const ConvDims& g, ConvPass pass) {
    if (!pointwise_gemm(pass, g, l))
        return any_desc(l);
    using tag = memory::format_tag;
    tag t = l.ndim == 3 ? tag::abc : l.ndim == 4 ? tag::abcd : tag::abcde;
    return memory::desc(dims_of(l), memory::data_type::f32, t);
}

memory::desc any_desc(const TensorLayout& l, const ConvDims& g, ConvPass pass,
                      const TensorLayout& partner, dnnl::algorithm alg) {
    if (alg == dnnl::algorithm::convolution_winograd || !nhwc_pinned(l, g, partner))
        return any_desc(l, g, pass);
    using tag = memory::format_tag;
    return memory::desc(dims_of(l), *dnnl_type_of(l.dtype), l.ndim == 4 ? tag::acdb : tag::acdeb);
}

memory::desc any_weights_desc(const TensorLayout& filter, const ConvDims& g) {
    return memory::desc(weights_dims(filter, g.group), *dnnl_type_of(filter.dtype),
                        memory::format_tag::any);
}

dnnl::convolution_forward::primitive_desc conv_forward_pd(
        const HandleImpl& handle, const ConvDims& g, ConvPass pass, const TensorLayout& src,
        const TensorLayout& filter, const TensorLayout& dst,
        const std::optional<memory::desc>& bias, const dnnl::primitive_attr& attr,
        dnnl::algorithm alg) {
    using dnnl::prop_kind;
    const memory::desc s = any_desc(src, g, pass, dst, alg), d = any_desc(dst, g, pass, src, alg);
    auto desc = bias ? dnnl::convolution_forward::desc(prop_kind::forward_training, alg, s,
                                                       any_weights_desc(filter, g), *bias, d,
                                                       g.stride, g.dilate, g.pad, g.pad)
                     : dnnl::convolution_forward::desc(prop_kind::forward_training, alg, s,
                                                       any_weights_desc(filter, g), d, g.stride,
                                                       g.dilate, g.pad, g.pad);
    return {desc, attr, handle.engine()};
}

Operand data_operand(const TensorLayout& l) {
    return Operand::of(l, false, data_desc);
}

Operand weights_operand(const TensorLayout& filter, const ConvDims& g) {
    uint32_t group = g.group;
    return Operand::of(
                   filter, false, [group](const TensorLayout& x) { return weights_desc(x, group); },
                   g.flip ? size_t{2} : TensorLayout::MAX_NDIM)
            .cached();
}

bool per_channel(const TensorLayout& bias, const TensorLayout& dst) {
    for (size_t i = 0; i < bias.ndim; ++i)
        if (bias[i] != (i == 1 ? dst[1] : 1))
            return false;
    return true;
}

}  // namespace neomeg::dnn::x86
