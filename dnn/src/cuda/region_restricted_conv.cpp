// RegionRestrictedConvolutionForward and its gradients on the CUDA handle
// (kernels/region_restricted_conv.cu): any NCHW strides, float dtypes and int32/uint8 region ids,
// naive's arithmetic in double.
#include "src/common/region_restricted_conv.h"
#include "neomeg/dnn/operators/convolution.h"
#include "src/cuda/layout_util.h"
#include "src/cuda/strided_kernel.h"

namespace neomeg::dnn::cuda {
namespace {

template <size_t N>
void copy_strides(const TensorLayout& l, int64_t (&st)[N]) {
    for (size_t d = 0; d < N; ++d)
        st[d] = l.stride[d];
}

kern::RegionConvArgs region_args(const ConvGeometry& g, const TensorLayout& image,
                                 const TensorLayout& filter, const TensorLayout& out,
                                 const TensorLayout& rin, const TensorLayout& rout) {
    kern::RegionConvArgs a{};
    a.n = static_cast<int64_t>(g.n);
    a.ic = static_cast<int64_t>(g.ic);
    a.ih = static_cast<int64_t>(g.in[1]);
    a.iw = static_cast<int64_t>(g.in[2]);
    a.oc = static_cast<int64_t>(g.oc);
    a.oh = static_cast<int64_t>(g.out[1]);
    a.ow = static_cast<int64_t>(g.out[2]);
    a.fh = static_cast<int64_t>(g.k[1]);
    a.fw = static_cast<int64_t>(g.k[2]);
    a.group = static_cast<int64_t>(g.group);
    a.sh = g.stride[1];
    a.sw = g.stride[2];
    a.ph = g.pad[1];
    a.pw = g.pad[2];
    a.dh = g.dil[1];
    a.dw = g.dil[2];
    a.dt = to_kern(image.dtype);
    a.rdt = to_kern(rin.dtype);
    copy_strides(image, a.image_strides);
    copy_strides(filter, a.filter_strides);
    copy_strides(out, a.out_strides);
    copy_strides(rin, a.rin_strides);
    copy_strides(rout, a.rout_strides);
    return a;
}

class ForwardImpl final : public StridedKernel<RegionRestrictedConvolutionForward> {
public:
    using StridedKernel::StridedKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &src = in[0], &filter = in[1], &rin = in[2], &rout = in[3];
        auto g = region_restricted_geometry(*this, m_param, src.layout, filter.layout, rin.layout,
                                            rout.layout);
        kern::region_conv_forward(
                region_args(g, src.layout, filter.layout, out[0].layout, rin.layout, rout.layout),
                src.raw_ptr(), filter.raw_ptr(), rin.raw_ptr(), rout.raw_ptr(), out[0].raw_ptr(),
                stream());
        return "cuda";
    }
};

class BackwardDataImpl final : public StridedKernel<RegionRestrictedConvolutionBackwardData> {
public:
    using StridedKernel::StridedKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &filter = in[0], &diff = in[1], &rin = in[2], &rout = in[3];
        const TensorND& grad = out[0];
        auto g = region_restricted_geometry(*this, m_param, grad.layout, filter.layout, rin.layout,
                                            rout.layout);
        kern::region_conv_backward_data(
                region_args(g, grad.layout, filter.layout, diff.layout, rin.layout, rout.layout),
                filter.raw_ptr(), diff.raw_ptr(), rin.raw_ptr(), rout.raw_ptr(), grad.raw_ptr(),
                stream());
        return "cuda";
    }
};

class BackwardFilterImpl final : public StridedKernel<RegionRestrictedConvolutionBackwardFilter> {
public:
    using StridedKernel::StridedKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &src = in[0], &diff = in[1], &rin = in[2], &rout = in[3];
        const TensorND& grad = out[0];
        auto g = region_restricted_geometry(*this, m_param, src.layout, grad.layout, rin.layout,
                                            rout.layout);
        kern::region_conv_backward_filter(
                region_args(g, src.layout, grad.layout, diff.layout, rin.layout, rout.layout),
                src.raw_ptr(), diff.raw_ptr(), rin.raw_ptr(), rout.raw_ptr(), grad.raw_ptr(),
                stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(RegionRestrictedConvolutionForward, ForwardImpl);
NM_REGISTER_CUDA(RegionRestrictedConvolutionBackwardData, BackwardDataImpl);
NM_REGISTER_CUDA(RegionRestrictedConvolutionBackwardFilter, BackwardFilterImpl);
}  // namespace neomeg::dnn::cuda
