// Naive ConvolutionForward, ConvolutionBackwardData and ConvolutionBackwardFilter. Both backward
// kernels gather (each output element sums what it depends on) rather than scatter, so they write
// every output element exactly once and need no workspace to accumulate in.
#include "src/naive/convolution.h"

#include "neomeg/dnn/operators/convolution.h"
#include "src/common/dtype_dispatch.h"
#include "src/naive/handle.h"

namespace neomeg::dnn::naive {
namespace {

class ConvolutionForwardImpl final : public ConvolutionForward {
public:
    using ConvolutionForward::ConvolutionForward;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &filter = inputs[1], &dst = outputs[0];
        ConvGeometry g =
                conv_forward_geometry(*this, ConvArgs::of(m_param), src.layout, filter.layout);
        const auto ds = conv_strides5(dst.layout);
        dispatch_float(src.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            conv_forward_sums<T>(g, src, filter, [&](size_t n, size_t oc, const auto& o, double s) {
                store_from_double<T>(dst, offset5(ds, n, oc, o), s);
            });
        });
    }
};

class ConvolutionBackwardDataImpl final : public ConvolutionBackwardData {
public:
    using ConvolutionBackwardData::ConvolutionBackwardData;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &filter = inputs[0], &diff = inputs[1], &grad = outputs[0];
        ConvGeometry g =
                conv_forward_geometry(*this, ConvArgs::of(m_param), grad.layout, filter.layout);
        const auto fs = conv_strides5(filter.layout), ys = conv_strides5(diff.layout),
                   gs = conv_strides5(grad.layout);
        dispatch_float(grad.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            for (size_t n = 0; n < g.n; ++n) {
                for (size_t ic = 0; ic < g.ic; ++ic) {
                    const size_t grp = ic / g.icg, c = ic % g.icg;
                    for_each_pos3(g.in, [&](const auto& i) {
                        double sum = 0;
                        for_each_pos3(g.k, [&](const auto& t) {
                            std::array<size_t, kMaxConvSpatial> o{};
                            for (size_t d = 0; d < kMaxConvSpatial; ++d) {
                                // i = o*stride + in_pos(d, 0, t): solve for an integral o.
                                ptrdiff_t num = static_cast<ptrdiff_t>(i[d]) - g.in_pos(d, 0, t[d]);
                                if (num < 0 || num % g.stride[d] != 0 ||
                                    num / g.stride[d] >= static_cast<ptrdiff_t>(g.out[d]))
                                    return;
                                o[d] = static_cast<size_t>(num / g.stride[d]);
                            }
                            for (size_t oc = grp * g.ocg; oc < (grp + 1) * g.ocg; ++oc)
                                sum += load_as_double<T>(diff, offset5(ys, n, oc, o)) *
                                       load_as_double<T>(filter, offset5(fs, oc, c, t));
                        });
                        store_from_double<T>(grad, offset5(gs, n, ic, i), sum);
                    });
                }
            }
        });
    }
};

class ConvolutionBackwardFilterImpl final : public ConvolutionBackwardFilter {
public:
    using ConvolutionBackwardFilter::ConvolutionBackwardFilter;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &diff = inputs[1], &grad = outputs[0];
        ConvGeometry g =
                conv_forward_geometry(*this, ConvArgs::of(m_param), src.layout, grad.layout);
        const auto ss = conv_strides5(src.layout), ys = conv_strides5(diff.layout),
                   gs = conv_strides5(grad.layout);
        dispatch_float(grad.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            for (size_t oc = 0; oc < g.oc; ++oc) {
                const size_t ic0 = oc / g.ocg * g.icg;
                for (size_t c = 0; c < g.icg; ++c) {
                    for_each_pos3(g.k, [&](const auto& t) {
                        double sum = 0;
                        for (size_t n = 0; n < g.n; ++n) {
                            for_each_pos3(g.out, [&](const auto& o) {
                                std::array<size_t, kMaxConvSpatial> i{};
                                for (size_t d = 0; d < kMaxConvSpatial; ++d) {
                                    ptrdiff_t pos = g.in_pos(d, o[d], t[d]);
                                    if (pos < 0 || pos >= static_cast<ptrdiff_t>(g.in[d]))
                                        return;
                                    i[d] = static_cast<size_t>(pos);
                                }
                                sum += load_as_double<T>(diff, offset5(ys, n, oc, o)) *
                                       load_as_double<T>(src, offset5(ss, n, ic0 + c, i));
                            });
                        }
                        store_from_double<T>(grad, offset5(gs, oc, c, t), sum);
                    });
                }
            }
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(ConvolutionForward, ConvolutionForwardImpl);
NM_REGISTER_NAIVE(ConvolutionBackwardData, ConvolutionBackwardDataImpl);
NM_REGISTER_NAIVE(ConvolutionBackwardFilter, ConvolutionBackwardFilterImpl);
}  // namespace neomeg::dnn::naive
