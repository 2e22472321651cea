// The primitive descriptors onednn_versions.cpp builds, written once for oneDNN's v2 API (2.x,
// Debian's 2.6) and once for its v3 API (3.x): v3 dropped the operation descriptors (`desc`),
// so a primitive descriptor takes the engine first and the attributes last, pooling always takes
// a dilation, batch normalisation names its dst and the backward passes name their propagation;
// memory::desc's accessors got a get_ prefix; 2.6's backward batch normalisation needs its scale
// and shift packed.
// Everything else the benchmark uses (memory, reorder, execute, impl_info_str) is the same in
// both. This is the whole difference a port of the x86 backend would have to absorb (see
// docs/x86-backend-log.md, "What a port to the v3 API needs").
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <utility>
#include <vector>

namespace onednn_shim {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::primitive_attr;
using dnnl::prop_kind;

inline constexpr bool kV3 = DNNL_VERSION_MAJOR >= 3;

// v3 renamed memory::desc's accessors (data_type() -> get_data_type(), dims() -> get_dims()).
inline memory::data_type data_type_of(const memory::desc& md) {
#if DNNL_VERSION_MAJOR >= 3
    return md.get_data_type();
#else
    return md.data_type();
#endif
}

struct ConvGeom {
    memory::dims strides, dilates, pad;
};

inline dnnl::convolution_forward::primitive_desc conv_fwd(
        const dnnl::engine& eng, prop_kind prop, const memory::desc& src, const memory::desc& wei,
        const memory::desc& dst, const ConvGeom& g, const primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    return {eng,   prop, algorithm::convolution_direct, src, wei, dst, g.strides, g.dilates, g.pad,
            g.pad, attr};
#else
    dnnl::convolution_forward::desc d(prop, algorithm::convolution_direct, src, wei, dst, g.strides,
                                      g.dilates, g.pad, g.pad);
    return {d, attr, eng};
#endif
}

inline dnnl::convolution_backward_data::primitive_desc conv_bwd_data(
        const dnnl::engine& eng, const memory::desc& diff_src, const memory::desc& wei,
        const memory::desc& diff_dst, const ConvGeom& g,
        const dnnl::convolution_forward::primitive_desc& hint, const primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    return {eng,       algorithm::convolution_direct,
            diff_src,  wei,
            diff_dst,  g.strides,
            g.dilates, g.pad,
            g.pad,     hint,
            attr};
#else
    dnnl::convolution_backward_data::desc d(algorithm::convolution_direct, diff_src, wei, diff_dst,
                                            g.strides, g.dilates, g.pad, g.pad);
    return {d, attr, eng, hint};
#endif
}

inline dnnl::convolution_backward_weights::primitive_desc conv_bwd_weights(
        const dnnl::engine& eng, const memory::desc& src, const memory::desc& diff_wei,
        const memory::desc& diff_dst, const ConvGeom& g,
        const dnnl::convolution_forward::primitive_desc& hint, const primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    return {eng,       algorithm::convolution_direct,
            src,       diff_wei,
            diff_dst,  g.strides,
            g.dilates, g.pad,
            g.pad,     hint,
            attr};
#else
    dnnl::convolution_backward_weights::desc d(algorithm::convolution_direct, src, diff_wei,
                                               diff_dst, g.strides, g.dilates, g.pad, g.pad);
    return {d, attr, eng, hint};
#endif
}

inline dnnl::matmul::primitive_desc matmul(const dnnl::engine& eng, const memory::desc& a,
                                           const memory::desc& b, const memory::desc& c,
                                           const primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    return {eng, a, b, c, attr};
#else
    return {dnnl::matmul::desc(a, b, c), attr, eng};
#endif
}

struct PoolGeom {
    memory::dims strides, kernel, pad;
};

inline dnnl::pooling_forward::primitive_desc pool_fwd(const dnnl::engine& eng, prop_kind prop,
                                                      algorithm alg, const memory::desc& src,
                                                      const memory::desc& dst, const PoolGeom& g,
                                                      const primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    memory::dims dilation(g.kernel.size(), 0);
    return {eng, prop, alg, src, dst, g.strides, g.kernel, dilation, g.pad, g.pad, attr};
#else
    dnnl::pooling_forward::desc d(prop, alg, src, dst, g.strides, g.kernel, g.pad, g.pad);
    return {d, attr, eng};
#endif
}

inline dnnl::pooling_backward::primitive_desc pool_bwd(
        const dnnl::engine& eng, algorithm alg, const memory::desc& diff_src,
        const memory::desc& diff_dst, const PoolGeom& g,
        const dnnl::pooling_forward::primitive_desc& hint, const primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    memory::dims dilation(g.kernel.size(), 0);
    return {eng, alg, diff_src, diff_dst, g.strides, g.kernel, dilation, g.pad, g.pad, hint, attr};
#else
    dnnl::pooling_backward::desc d(alg, diff_src, diff_dst, g.strides, g.kernel, g.pad, g.pad);
    return {d, attr, eng, hint};
#endif
}

inline dnnl::batch_normalization_forward::primitive_desc bnorm_fwd(
        const dnnl::engine& eng, prop_kind prop, const memory::desc& src, float eps,
        dnnl::normalization_flags flags, const primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    return {eng, prop, src, src, eps, flags, attr};
#else
    dnnl::batch_normalization_forward::desc d(prop, src, eps, flags);
    return {d, attr, eng};
#endif
}

// oneDNN 2.6's backward batch normalisation rejects separate scale and shift at execution; it
// takes them packed ({2, C}: use_scale_shift), which v3 removed.
inline dnnl::normalization_flags bnorm_bwd_flags() {
#if DNNL_VERSION_MAJOR >= 3
    return dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
#else
    return dnnl::normalization_flags::use_scale_shift;
#endif
}

// The scale arguments of that backward (read) and its scale gradients (written).
inline std::vector<std::pair<int, memory::desc>> bnorm_bwd_scale_args(memory::dim channels) {
#if DNNL_VERSION_MAJOR >= 3
    memory::desc vec({channels}, memory::data_type::f32, memory::format_tag::a);
    return {{DNNL_ARG_SCALE, vec}, {DNNL_ARG_DIFF_SCALE, vec}, {DNNL_ARG_DIFF_SHIFT, vec}};
#else
    memory::desc packed({2, channels}, memory::data_type::f32, memory::format_tag::ab);
    return {{DNNL_ARG_SCALE_SHIFT, packed}, {DNNL_ARG_DIFF_SCALE_SHIFT, packed}};
#endif
}

inline dnnl::batch_normalization_backward::primitive_desc bnorm_bwd(
        const dnnl::engine& eng, const memory::desc& src, float eps,
        dnnl::normalization_flags flags,
        const dnnl::batch_normalization_forward::primitive_desc& hint, const primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    return {eng, prop_kind::backward, src, src, src, eps, flags, hint, attr};
#else
    dnnl::batch_normalization_backward::desc d(prop_kind::backward, src, src, eps, flags);
    return {d, attr, eng, hint};
#endif
}

}  // namespace onednn_shim
