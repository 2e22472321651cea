#include "src/common/convolution_geometry.h"

#include <string>

namespace neomeg::dnn {
namespace {

void check_list(const OperatorBase& op, const char* name, const std::vector<int32_t>& v,
                size_t spatial, int32_t min) {
    NM_OP_REQUIRE(op, ParamError, v.size() == spatial, name, " has ", v.size(),
                  " entries, expected ", spatial, " (one per spatial dim)");
    for (int32_t x : v)
        NM_OP_REQUIRE(op, ParamError, x >= min, name, " entries must be >= ", min);
}

}  // namespace

void conv_check_args(const OperatorBase& op, const ConvArgs& args, size_t spatial) {
    check_list(op, "stride", args.stride, spatial, 1);
    check_list(op, "padding", args.padding, spatial, 0);
    check_list(op, "dilation", args.dilation, spatial, 1);
    NM_OP_REQUIRE(op, ParamError, args.group >= 1, "group must be >= 1");
}

ConvGeometry conv_forward_geometry(const OperatorBase& op, const ConvArgs& args,
                                   const TensorLayout& src, const TensorLayout& filter) {
    // Built only for a failing check's message: formatting layouts costs more than the checks.
    auto shapes = [&] { return str_cat("src ", src.to_string(), ", filter ", filter.to_string()); };
    NM_OP_REQUIRE(op, ShapeError, src.ndim >= 3 && src.ndim <= 2 + kMaxConvSpatial,
                  "src must be (N, C, spatial...) with 1 to 3 spatial dims; ", shapes());
    NM_OP_REQUIRE(op, ShapeError, filter.ndim == src.ndim,
                  "filter must have src's rank (OC, IC/group, k...); ", shapes());
    NM_OP_REQUIRE(op, DTypeError, src.dtype.is_float(), "dtype ", src.dtype.name(),
                  " is not supported (float only); ", shapes());
    NM_OP_REQUIRE(op, DTypeError, filter.dtype == src.dtype, "src and filter dtypes differ; ",
                  shapes());

    ConvGeometry g;
    g.spatial = src.ndim - 2;
    conv_check_args(op, args, g.spatial);

    g.flip = args.flip;
    g.group = args.group;
    g.n = src[0];
    g.ic = src[1];
    g.oc = filter[0];
    NM_OP_REQUIRE(op, ParamError, g.ic % g.group == 0 && g.oc % g.group == 0, "group ", g.group,
                  " must divide the input channels ", g.ic, " and output channels ", g.oc, "; ",
                  shapes());
    g.icg = g.ic / g.group;
    g.ocg = g.oc / g.group;
    NM_OP_REQUIRE(op, ShapeError, filter[1] == g.icg, "filter has ", filter[1],
                  " input channels per group, src has ", g.ic, " channels in ", g.group,
                  " groups; ", shapes());

    size_t off = kMaxConvSpatial - g.spatial;  // lower ranks occupy the trailing dims
    for (size_t d = 0; d < g.spatial; ++d) {
        size_t gd = off + d;
        g.in[gd] = src[2 + d];
        g.k[gd] = filter[2 + d];
        g.stride[gd] = args.stride[d];
        g.pad[gd] = args.padding[d];
        g.dil[gd] = args.dilation[d];
        NM_OP_REQUIRE(op, ShapeError, g.k[gd] >= 1, "kernel size must be >= 1; ", shapes());
        auto padded = static_cast<ptrdiff_t>(g.in[gd]) + 2 * g.pad[gd];
        auto extent = g.dil[gd] * static_cast<ptrdiff_t>(g.k[gd] - 1) + 1;
        NM_OP_REQUIRE(op, ShapeError, extent <= padded, "dilated kernel ", extent,
                      " is larger than the padded input ", padded, " in spatial dim ", d, "; ",
                      shapes());
        g.out[gd] = static_cast<size_t>((padded - extent) / g.stride[gd] + 1);
    }
    return g;
}

TensorLayout conv_dst_layout(const ConvGeometry& g, DType dtype) {
    TensorShape s;
    s.ndim = 2 + g.spatial;
    s[0] = g.n;
    s[1] = g.oc;
    for (size_t d = 0; d < g.spatial; ++d)
        s[2 + d] = g.out[kMaxConvSpatial - g.spatial + d];
    return TensorLayout(s, dtype);
}

std::array<ptrdiff_t, 5> conv_strides5(const TensorLayout& l) {
    std::array<ptrdiff_t, 5> s{};
    s[0] = l.stride[0];
    s[1] = l.stride[1];
    size_t spatial = l.ndim - 2;
    for (size_t d = 0; d < spatial; ++d)
        s[2 + kMaxConvSpatial - spatial + d] = l.stride[2 + d];
    return s;
}

}  // namespace neomeg::dnn
