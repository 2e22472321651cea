// NMSKeep on the CUDA handle (kernels/nms.cu): any strides; the count stays on the device, so
// nothing waits for the stream.
#include "neomeg/dnn/operators/vision.h"
#include "src/cuda/kernel.h"
#include "src/cuda/kernels/args.h"

namespace neomeg::dnn::cuda {
namespace {

class NMSKeepImpl final : public CudaKernel<NMSKeep> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout>) override {
        // One block per batch item: the grid's x dimension bounds the batch.
        return in[0].shape[0] <= 0x7fffffffu;
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorLayout &bl = in[0].layout, &il = out[0].layout;
        kern::NmsKeepArgs a;
        a.boxes = static_cast<const float*>(in[0].raw_ptr());
        for (size_t d = 0; d < 3; ++d)
            a.box_strides[d] = bl.stride[d];
        a.batch = static_cast<int64_t>(bl.shape[0]);
        a.n = static_cast<int64_t>(bl.shape[1]);
        a.cap = static_cast<int64_t>(m_param.max_output);
        a.thresh = m_param.iou_thresh;
        a.indices = static_cast<int32_t*>(out[0].raw_ptr());
        a.idx_strides[0] = il.stride[0];
        a.idx_strides[1] = il.stride[1];
        a.count = static_cast<int32_t*>(out[1].raw_ptr());
        a.count_stride = out[1].layout.stride[0];
        kern::nms_keep(a, stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(NMSKeep, NMSKeepImpl);
}  // namespace neomeg::dnn::cuda
