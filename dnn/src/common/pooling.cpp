// Layout rules of PoolingForward/PoolingBackward and
// AdaptivePoolingForward/AdaptivePoolingBackward, and the geometry their kernels share.
#include "src/common/pooling.h"

#include <string>

#include "neomeg/dnn/operators/pooling.h"
#include "src/common/convolution_geometry.h"

namespace neomeg::dnn {
namespace {

// Ranks, dtype and the per-dim params' lengths; returns the geometry with n, c and in filled.
PoolGeometry pool_common(const OperatorBase& op, const TensorLayout& src) {
    NM_OP_REQUIRE(op, ShapeError, src.ndim >= 3 && src.ndim <= 2 + kMaxPoolSpatial,
                  "src must be (N, C, spatial...) with 1 to 3 spatial dims, got ", src.to_string());
    NM_OP_REQUIRE(op, DTypeError, src.dtype.is_float() || src.dtype.is_quantized(), "dtype ",
                  src.dtype.name(), " is not supported (float or quantized only); src ",
                  src.to_string());
    PoolGeometry g;
    g.spatial = src.ndim - 2;
    g.n = src[0];
    g.c = src[1];
    for (size_t d = 0; d < g.spatial; ++d) {
        g.in[kMaxPoolSpatial - g.spatial + d] = src[2 + d];
        // An empty spatial dim leaves every window without an element to reduce.
        NM_OP_REQUIRE(op, ShapeError, src[2 + d] >= 1, "spatial dims must be >= 1, src ",
                      src.to_string());
    }
    return g;
}

void check_list(const OperatorBase& op, const char* name, const std::vector<int32_t>& v,
                size_t spatial, int32_t min) {
    NM_OP_REQUIRE(op, ParamError, v.size() == spatial, name, " has ", v.size(),
                  " entries, expected ", spatial, " (one per spatial dim)");
    for (int32_t x : v)
        NM_OP_REQUIRE(op, ParamError, x >= min, name, " entries must be >= ", min);
}

}  // namespace

PoolGeometry pooling_geometry(const OperatorBase& op, const param::Pooling& p,
                              const TensorLayout& src) {
    PoolGeometry g = pool_common(op, src);
    check_list(op, "window", p.window, g.spatial, 1);
    check_list(op, "stride", p.stride, g.spatial, 1);
    check_list(op, "padding", p.padding, g.spatial, 0);
    for (size_t d = 0; d < g.spatial; ++d) {
        size_t gd = kMaxPoolSpatial - g.spatial + d;
        g.window[gd] = p.window[d];
        g.stride[gd] = p.stride[d];
        g.pad[gd] = p.padding[d];
        // padding < window keeps at least one input element in every window.
        NM_OP_REQUIRE(op, ParamError, g.pad[gd] < g.window[gd], "padding ", g.pad[gd],
                      " must be smaller than window ", g.window[gd]);
        auto padded = static_cast<ptrdiff_t>(g.in[gd]) + 2 * g.pad[gd];
        NM_OP_REQUIRE(op, ShapeError, g.window[gd] <= padded, "window ", g.window[gd],
                      " is larger than the padded input ", padded, " in spatial dim ", d, "; src ",
                      src.to_string());
        g.out[gd] = static_cast<size_t>((padded - g.window[gd]) / g.stride[gd] + 1);
    }
    return g;
}

PoolGeometry adaptive_pooling_geometry(const OperatorBase& op, const param::AdaptivePooling& p,
                                       const TensorLayout& src) {
    PoolGeometry g = pool_common(op, src);
    check_list(op, "shape", p.shape, g.spatial, 1);
    g.adaptive = true;
    for (size_t d = 0; d < g.spatial; ++d)
        g.out[kMaxPoolSpatial - g.spatial + d] = static_cast<size_t>(p.shape[d]);
    return g;
}

TensorLayout pool_dst_layout(const PoolGeometry& g, DType dtype) {
    TensorShape s;
    s.ndim = 2 + g.spatial;
    s[0] = g.n;
    s[1] = g.c;
    for (size_t d = 0; d < g.spatial; ++d)
        s[2 + d] = g.out[kMaxPoolSpatial - g.spatial + d];
    return TensorLayout(s, dtype);
}

void check_pool_backward(const OperatorBase& op, const PoolGeometry& g, const TensorLayout& src,
                         const TensorLayout& dst, const TensorLayout& diff) {
    TensorLayout want = pool_dst_layout(g, src.dtype);
    for (const TensorLayout* l : {&dst, &diff}) {
        const char* name = l == &dst ? "dst" : "diff";
        NM_OP_REQUIRE(op, ShapeError, l->eq_shape(want), name, " ", l->to_string(),
                      " must have the forward output shape ", want.TensorShape::to_string(),
                      " of src ", src.to_string());
        NM_OP_REQUIRE(op, DTypeError, l->dtype == src.dtype, name, " dtype ", l->dtype.name(),
                      " differs from src's ", src.dtype.name());
    }
}

void PoolingForward::deduce_layout(std::span<const TensorLayout> inputs,
                                   std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    // Quantized src keeps its dtype: the maximum of the stored integers (a positive scale keeps
    // the order), or their rounded average (naive pooling: MegEngine's rule).
    outputs[0] = pool_dst_layout(pooling_geometry(*this, m_param, inputs[0]), inputs[0].dtype);
}

void PoolingBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                    std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    NM_REQUIRE(DTypeError, !inputs[0].dtype.is_quantized(), "quantized src ",
               inputs[0].dtype.full_name(), " has no gradient");
    PoolGeometry g = pooling_geometry(*this, m_param, inputs[0]);
    check_pool_backward(*this, g, inputs[0], inputs[1], inputs[2]);
    outputs[0] = TensorLayout(inputs[0], inputs[0].dtype);
}

void AdaptivePoolingForward::deduce_layout(std::span<const TensorLayout> inputs,
                                           std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    outputs[0] =
            pool_dst_layout(adaptive_pooling_geometry(*this, m_param, inputs[0]), inputs[0].dtype);
}

void AdaptivePoolingBackward::deduce_layout(std::span<const TensorLayout> inputs,
                                            std::span<TensorLayout> outputs) {
    check_num_inputs(inputs);
    PoolGeometry g = adaptive_pooling_geometry(*this, m_param, inputs[0]);
    check_pool_backward(*this, g, inputs[0], inputs[1], inputs[2]);
    outputs[0] = TensorLayout(inputs[0], inputs[0].dtype);
}

}  // namespace neomeg::dnn
