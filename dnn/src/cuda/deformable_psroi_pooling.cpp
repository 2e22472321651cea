// DeformablePSROIPooling and its gradient on the CUDA handle (kernels/psroi.cu): dense float32
// tensors; other dtypes and strided layouts run the staged naive kernel. The rois' batch column
// is checked on the device first, as naive checks it (roi_kernel.h).
#include "neomeg/dnn/operators/vision.h"
#include "src/cuda/kernel.h"
#include "src/cuda/kernels/psroi_args.h"
#include "src/cuda/layout_util.h"
#include "src/cuda/roi_kernel.h"

namespace neomeg::dnn::cuda {
namespace {

kern::PsroiArgs args_of(const param::DeformablePSROIPooling& p, const TensorLayout& src,
                        const TensorLayout& rois, const TensorLayout& trans) {
    kern::PsroiArgs a{};
    a.k = static_cast<int64_t>(rois[0]);
    a.c = static_cast<int64_t>(src[1]);
    a.batch = static_cast<int64_t>(src[0]);
    a.h = static_cast<int64_t>(src[2]);
    a.w = static_cast<int64_t>(src[3]);
    a.ph = p.pooled_h;
    a.pw = p.pooled_w;
    a.trans_elems = static_cast<int64_t>(trans.total_nr_elems());
    a.spatial_scale = p.spatial_scale;
    a.trans_std = p.trans_std;
    a.part_size = p.part_size;
    a.sample_per_part = p.sample_per_part;
    a.no_trans = p.no_trans;
    return a;
}

// The frame of both: dense float32 only, the rois' batch column checked before a run.
template <class Op>
class PsroiKernel : public CudaKernel<Op> {
public:
    using CudaKernel<Op>::CudaKernel;

protected:
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout> out) override {
        return dense_float32(in, out);
    }
    kern::PsroiArgs checked_args(std::span<const TensorND> in) {
        kern::PsroiArgs a = args_of(this->m_param, in[0].layout, in[1].layout, in[2].layout);
        TensorLayout none({0, 0, 0, 0}, dtype::Float32);
        kern::RoiArgs r = roi_args(in[0].layout, in[1].layout,
                                   TensorLayout({in[1].layout[0], 0, 0, 0}, dtype::Float32), none);
        m_check.run(r, in[1].raw_ptr(), this->param_str(), this->stream());
        return a;
    }

private:
    RoiBatchCheck m_check;
};

class DeformablePSROIPoolingImpl final : public PsroiKernel<DeformablePSROIPooling> {
public:
    using PsroiKernel::PsroiKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        kern::psroi_forward(checked_args(in), static_cast<const float*>(in[0].raw_ptr()),
                            static_cast<const float*>(in[1].raw_ptr()),
                            static_cast<const float*>(in[2].raw_ptr()),
                            static_cast<float*>(out[0].raw_ptr()),
                            static_cast<float*>(out[1].raw_ptr()), stream());
        return "cuda";
    }
};

class DeformablePSROIPoolingBackwardImpl final
    : public PsroiKernel<DeformablePSROIPoolingBackward> {
public:
    using PsroiKernel::PsroiKernel;

private:
    size_t workspace_in_bytes(std::span<const TensorLayout>,
                              std::span<const TensorLayout> out) override {
        return (out[0].total_nr_elems() + out[1].total_nr_elems()) * sizeof(double);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        kern::psroi_backward(checked_args(in), static_cast<const float*>(in[0].raw_ptr()),
                             static_cast<const float*>(in[1].raw_ptr()),
                             static_cast<const float*>(in[2].raw_ptr()),
                             static_cast<const float*>(in[3].raw_ptr()),
                             static_cast<const float*>(in[4].raw_ptr()),
                             reinterpret_cast<double*>(ws.ptr),
                             static_cast<float*>(out[0].raw_ptr()),
                             static_cast<float*>(out[1].raw_ptr()), stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(DeformablePSROIPooling, DeformablePSROIPoolingImpl);
NM_REGISTER_CUDA(DeformablePSROIPoolingBackward, DeformablePSROIPoolingBackwardImpl);
}  // namespace neomeg::dnn::cuda
