// Naive ConvBias: the convolution sum, then + bias (broadcast) + z, then the nonlinearity, all in
// double before the one rounding to the output dtype.
#include <algorithm>

#include "neomeg/dnn/operators/convolution.h"
#include "src/common/conv_bias_quantized.h"
#include "src/common/dtype_dispatch.h"
#include "src/naive/convolution.h"
#include "src/naive/handle.h"

namespace neomeg::dnn::naive {
namespace {

dt_int32 saturate_int32(double s) {
    return static_cast<dt_int32>(std::clamp(s, -2147483648.0, 2147483647.0));
}

class ConvBiasImpl final : public ConvBias {
public:
    using ConvBias::ConvBias;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &filter = inputs[1], &bias = inputs[2], &z = inputs[3],
                       &dst = outputs[0];
        ConvGeometry g = src.layout.dtype.is_quantized()
                                 ? quantized_conv_geometry(*this, src.layout, filter.layout)
                                 : conv_forward_geometry(*this, ConvArgs::of(m_param), src.layout,
                                                         filter.layout);
        const bool has_bias = bias.layout.ndim != 0, has_z = z.layout.ndim != 0;
        // A bias dim of size 1 repeats along dst's dim.
        TensorLayout bias_l = bias.layout;
        for (size_t i = 0; i < bias_l.ndim; ++i)
            if (bias_l[i] == 1)
                bias_l.stride[i] = 0;
        const auto ds = conv_strides5(dst.layout);
        const auto bs = has_bias ? conv_strides5(bias_l) : std::array<ptrdiff_t, 5>{};
        const auto zs = has_z ? conv_strides5(z.layout) : std::array<ptrdiff_t, 5>{};
        if (src.layout.dtype.is_quantized()) {
            // deduce_layout admitted: int8/uint8 src, int8 filter, int32 bias and dst, IDENTITY or
            // RELU. The double sums of integer products are exact (|sum| < 2^53).
            auto run = [&](auto tag) {
                using T = typename decltype(tag)::type;
                conv_forward_sums<T, dt_int8>(
                        g, src, filter,
                        [&](size_t n, size_t oc, const auto& o, double s) {
                            if (has_bias)
                                s += load_as_double<dt_int32>(bias, offset5(bs, n, oc, o));
                            s = conv_bias_nonlinearity(m_param.nonlineMode, s);
                            elem<dt_int32>(dst, offset5(ds, n, oc, o)) = saturate_int32(s);
                        },
                        src.layout.dtype.zero_point());
            };
            if (src.layout.dtype.enumv() == DTypeEnum::Quantized8Asymm)
                run(TypeTag<dt_uint8>{});
            else
                run(TypeTag<dt_int8>{});
            return;
        }
        dispatch_float(src.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            conv_forward_sums<T>(g, src, filter, [&](size_t n, size_t oc, const auto& o, double s) {
                if (has_bias)
                    s += load_as_double<T>(bias, offset5(bs, n, oc, o));
                if (has_z)
                    s += load_as_double<T>(z, offset5(zs, n, oc, o));
                store_from_double<T>(dst, offset5(ds, n, oc, o),
                                     conv_bias_nonlinearity(m_param.nonlineMode, s));
            });
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(ConvBias, ConvBiasImpl);
}  // namespace neomeg::dnn::naive
