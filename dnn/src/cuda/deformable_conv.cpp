// DeformableConvForward and its gradients on the CUDA handle (kernels/deformable_conv.cu): any
// NCHW strides and float dtype, naive's arithmetic in double.
#include "src/common/deformable_conv.h"
#include "neomeg/dnn/operators/convolution.h"
#include "src/cuda/layout_util.h"
#include "src/cuda/strided_kernel.h"

namespace neomeg::dnn::cuda {
namespace {

void copy_strides(const TensorLayout& l, int64_t (&st)[4]) {
    for (size_t d = 0; d < 4; ++d)
        st[d] = l.stride[d];
}

kern::DeformArgs deform_args(const DeformableGeometry& g, const TensorLayout& src,
                             const TensorLayout& filter, const TensorLayout& offset,
                             const TensorLayout& mask, const TensorLayout& out) {
    kern::DeformArgs a{};
    const ConvGeometry& c = g.conv;
    a.n = static_cast<int64_t>(c.n);
    a.ic = static_cast<int64_t>(c.ic);
    a.ih = static_cast<int64_t>(g.ih());
    a.iw = static_cast<int64_t>(g.iw());
    a.oc = static_cast<int64_t>(c.oc);
    a.oh = static_cast<int64_t>(g.oh());
    a.ow = static_cast<int64_t>(g.ow());
    a.fh = static_cast<int64_t>(g.fh());
    a.fw = static_cast<int64_t>(g.fw());
    a.group = static_cast<int64_t>(c.group);
    a.dg = static_cast<int64_t>(g.dg);
    a.sh = c.stride[1];
    a.sw = c.stride[2];
    a.ph = c.pad[1];
    a.pw = c.pad[2];
    a.dh = c.dil[1];
    a.dw = c.dil[2];
    a.dt = to_kern(src.dtype);
    copy_strides(src, a.src_strides);
    copy_strides(filter, a.filter_strides);
    copy_strides(offset, a.offset_strides);
    copy_strides(mask, a.mask_strides);
    copy_strides(out, a.out_strides);
    return a;
}

class ForwardImpl final : public StridedKernel<DeformableConvForward> {
public:
    using StridedKernel::StridedKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        auto g = deformable_conv_geometry(*this, m_param, in[0].layout, in[1].layout, in[2].layout,
                                          in[3].layout);
        kern::deformable_conv_forward(deform_args(g, in[0].layout, in[1].layout, in[2].layout,
                                                  in[3].layout, out[0].layout),
                                      in[0].raw_ptr(), in[1].raw_ptr(), in[2].raw_ptr(),
                                      in[3].raw_ptr(), out[0].raw_ptr(), stream());
        return "cuda";
    }
};

class BackwardFilterImpl final : public StridedKernel<DeformableConvBackwardFilter> {
public:
    using StridedKernel::StridedKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &src = in[0], &offset = in[1], &mask = in[2], &diff = in[3];
        const TensorND& grad = out[0];
        auto g = deformable_conv_geometry(*this, m_param, src.layout, grad.layout, offset.layout,
                                          mask.layout);
        auto a = deform_args(g, src.layout, grad.layout, offset.layout, mask.layout, diff.layout);
        copy_strides(grad.layout, a.grad_strides[0]);
        kern::deformable_conv_backward_filter(a, src.raw_ptr(), offset.raw_ptr(), mask.raw_ptr(),
                                              diff.raw_ptr(), grad.raw_ptr(), stream());
        return "cuda";
    }
};

class BackwardDataImpl final : public StridedKernel<DeformableConvBackwardData> {
public:
    using StridedKernel::StridedKernel;

private:
    // The double accumulators of the three gradients.
    size_t workspace_in_bytes(std::span<const TensorLayout>,
                              std::span<const TensorLayout> out) override {
        return (out[0].total_nr_elems() + out[1].total_nr_elems() + out[2].total_nr_elems()) *
               sizeof(double);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        auto g = deformable_conv_geometry(*this, m_param, in[0].layout, in[1].layout, in[2].layout,
                                          in[3].layout);
        auto a = deform_args(g, in[0].layout, in[1].layout, in[2].layout, in[3].layout,
                             in[4].layout);
        for (size_t k = 0; k < 3; ++k)
            copy_strides(out[k].layout, a.grad_strides[k]);
        kern::deformable_conv_backward_data(a, in[0].raw_ptr(), in[1].raw_ptr(), in[2].raw_ptr(),
                                            in[3].raw_ptr(), in[4].raw_ptr(),
                                            reinterpret_cast<double*>(ws.ptr), out[0].raw_ptr(),
                                            out[1].raw_ptr(), out[2].raw_ptr(), stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(DeformableConvForward, ForwardImpl);
NM_REGISTER_CUDA(DeformableConvBackwardData, BackwardDataImpl);
NM_REGISTER_CUDA(DeformableConvBackwardFilter, BackwardFilterImpl);
}  // namespace neomeg::dnn::cuda
