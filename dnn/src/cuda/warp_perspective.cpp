// WarpPerspective and its gradients on the CUDA handle (kernels/warp_perspective.cu): every border
// mode over any NCHW strides and float dtype, naive's arithmetic in double. mat_idx is
// range-checked on the device first, as naive checks it.
#include "neomeg/dnn/operators/vision.h"
#include "src/cuda/index_range.h"
#include "src/cuda/layout_util.h"
#include "src/cuda/strided_kernel.h"
#include "src/cuda/warp_border.h"

namespace neomeg::dnn::cuda {
namespace {

// `image` is the (src_n, C, H, W) side, `warped` the (N, C, out_h, out_w) one.
kern::WarpArgs warp_args(const param::WarpPerspective& p, const TensorLayout& image,
                         const TensorLayout& mat, const TensorLayout& mat_idx,
                         const TensorLayout& warped) {
    kern::WarpArgs a{};
    a.bmode = warp_border(p.bmode);
    a.border_val = p.border_val;
    a.n = static_cast<int64_t>(warped[0]);
    a.c = static_cast<int64_t>(image[1]);
    a.src_n = static_cast<int64_t>(image[0]);
    a.in_h = static_cast<int64_t>(image[2]);
    a.in_w = static_cast<int64_t>(image[3]);
    a.out_h = static_cast<int64_t>(warped[2]);
    a.out_w = static_cast<int64_t>(warped[3]);
    a.dt = to_kern(image.dtype);
    for (size_t d = 0; d < 4; ++d) {
        a.image_strides[d] = image.stride[d];
        a.warped_strides[d] = warped.stride[d];
    }
    for (size_t d = 0; d < 3; ++d)
        a.mat_strides[d] = mat.stride[d];
    a.idx_stride = mat_idx.stride[0];
    return a;
}

// The frame shared by the three: mat_idx (input `idx_input`) checked against the src batch.
// kDoubleAccumulator: the gradients' (strided_kernel.h).
template <class Op, bool kDoubleAccumulator = false>
class WarpKernel : public StridedKernel<Op, kDoubleAccumulator> {
public:
    using StridedKernel<Op, kDoubleAccumulator>::StridedKernel;

protected:
    void check_mat_idx(const TensorND& mat_idx, size_t batch) {
        size_t axis = 0;
        m_check.run({&mat_idx, 1}, {&axis, 1}, {&batch, 1}, false, this->param_str(),
                    this->stream());
    }

private:
    IndexRangeCheck m_check;
};

class WarpPerspectiveImpl final : public WarpKernel<WarpPerspective> {
public:
    using WarpKernel::WarpKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &src = in[0], &mat = in[1], &idx = in[2];
        check_mat_idx(idx, src.layout[0]);
        kern::warp_perspective_forward(
                warp_args(m_param, src.layout, mat.layout, idx.layout, out[0].layout),
                src.raw_ptr(), static_cast<const float*>(mat.raw_ptr()),
                static_cast<const int32_t*>(idx.raw_ptr()), out[0].raw_ptr(), stream());
        return "cuda";
    }
};

class WarpPerspectiveBackwardDataImpl final : public WarpKernel<WarpPerspectiveBackwardData, true> {
public:
    using WarpKernel::WarpKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorND &mat = in[0], &idx = in[1], &diff = in[2], &grad = out[0];
        check_mat_idx(idx, grad.layout[0]);
        kern::warp_perspective_backward_data(
                warp_args(m_param, grad.layout, mat.layout, idx.layout, diff.layout),
                static_cast<const float*>(mat.raw_ptr()),
                static_cast<const int32_t*>(idx.raw_ptr()), diff.raw_ptr(),
                reinterpret_cast<double*>(ws.ptr), grad.raw_ptr(), stream());
        return "cuda";
    }
};

class WarpPerspectiveBackwardMatImpl final : public WarpKernel<WarpPerspectiveBackwardMat, true> {
public:
    using WarpKernel::WarpKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorND &src = in[0], &mat = in[1], &idx = in[2], &diff = in[3], &grad = out[0];
        check_mat_idx(idx, src.layout[0]);
        int64_t grad_strides[3] = {grad.layout.stride[0], grad.layout.stride[1],
                                   grad.layout.stride[2]};
        kern::warp_perspective_backward_mat(
                warp_args(m_param, src.layout, mat.layout, idx.layout, diff.layout), src.raw_ptr(),
                static_cast<const float*>(mat.raw_ptr()),
                static_cast<const int32_t*>(idx.raw_ptr()), diff.raw_ptr(),
                reinterpret_cast<double*>(ws.ptr), static_cast<float*>(grad.raw_ptr()),
                grad_strides, stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(WarpPerspective, WarpPerspectiveImpl);
NM_REGISTER_CUDA(WarpPerspectiveBackwardData, WarpPerspectiveBackwardDataImpl);
NM_REGISTER_CUDA(WarpPerspectiveBackwardMat, WarpPerspectiveBackwardMatImpl);
}  // namespace neomeg::dnn::cuda
