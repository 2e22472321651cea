// What the CUDA kernels of ROIAlign and ROIPooling share (roi_align.cpp, roi_pooling.cpp): their
// launch arguments from the layouts, the forward and backward kernels themselves (each operator
// gives its arguments and launches), and the rois' batch column checked on the device before an
// image is read: a roi naming no image of the batch raises the IndexError naive raises
// (src/common/roi.h's rule and message). The check waits for the stream, since the error must
// come from exec and no image may be read through a bad index.
#pragma once

#include <string>

#include "src/common/roi.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/args.h"
#include "src/cuda/layout_util.h"
#include "src/cuda/strided_kernel.h"

namespace neomeg::dnn::cuda {

class RoiBatchCheck {
public:
    RoiBatchCheck() = default;
    RoiBatchCheck(const RoiBatchCheck&) = delete;
    RoiBatchCheck& operator=(const RoiBatchCheck&) = delete;
    ~RoiBatchCheck() {
        if (m_buf)
            cudaFree(m_buf);
    }

    void run(const kern::RoiArgs& a, const void* rois, const std::string& who,
             cudaStream_t stream) {
        if (a.k == 0)
            return;
        if (!m_buf)
            NM_CUDA_CHECK(cudaMalloc(&m_buf, sizeof(Found)));
        auto* dev = static_cast<Found*>(m_buf);
        kern::roi_find_bad_batch(a, rois, &dev->first, &dev->value, stream);
        NM_CUDA_CHECK(cudaGetLastError());
        Found found{};
        NM_CUDA_CHECK(cudaMemcpyAsync(&found, dev, sizeof(Found), cudaMemcpyDeviceToHost, stream));
        NM_CUDA_CHECK(cudaStreamSynchronize(stream));
        if (found.first != ~0ull)
            throw IndexError(roi::bad_batch_message(who, found.first, found.value,
                                                    static_cast<size_t>(a.batch)));
    }

private:
    struct Found {
        unsigned long long first;
        double value;
    };
    void* m_buf = nullptr;
};

// `image` is the (batch, C, H, W) side; `pooled` and `index` the (K, C, ph, pw) ones.
inline kern::RoiArgs roi_args(const TensorLayout& image, const TensorLayout& rois,
                              const TensorLayout& pooled, const TensorLayout& index) {
    kern::RoiArgs a{};
    a.k = static_cast<int64_t>(pooled[0]);
    a.c = static_cast<int64_t>(image[1]);
    a.batch = static_cast<int64_t>(image[0]);
    a.in_h = static_cast<int64_t>(image[2]);
    a.in_w = static_cast<int64_t>(image[3]);
    a.ph = static_cast<int64_t>(pooled[2]);
    a.pw = static_cast<int64_t>(pooled[3]);
    a.dt = to_kern(image.dtype);
    a.rois_dt = to_kern(rois.dtype);
    for (size_t d = 0; d < 4; ++d) {
        a.image_strides[d] = image.stride[d];
        a.pooled_strides[d] = pooled.stride[d];
        a.index_strides[d] = index.stride[d];
    }
    a.rois_strides[0] = rois.stride[0];
    a.rois_strides[1] = rois.stride[1];
    return a;
}

// The kernels' pooling mode of a ROIAlign or ROIPooling param's Mode.
template <class Mode>
kern::RoiMode roi_mode(Mode m) {
    static_assert(static_cast<uint32_t>(kern::RoiMode::MAX) == static_cast<uint32_t>(Mode::MAX));
    static_assert(static_cast<uint32_t>(kern::RoiMode::AVERAGE) ==
                  static_cast<uint32_t>(Mode::AVERAGE));
    return static_cast<kern::RoiMode>(m);
}

// The frame of the four kernels: every layout accepted, the batch check before each run.
template <class Op, bool kBackward>
class RoiKernel : public StridedKernel<Op, kBackward> {
public:
    using StridedKernel<Op, kBackward>::StridedKernel;

protected:
    void check_batch(const kern::RoiArgs& a, const TensorND& rois) {
        m_check.run(a, rois.raw_ptr(), this->param_str(), this->stream());
    }

private:
    RoiBatchCheck m_check;
};

// Args(param, image, rois, pooled, index) gives the launch arguments; Launch is the operator's
// kernel (kernels/roi.cu).
template <class Op, auto Args, auto Launch>
class RoiForward final : public RoiKernel<Op, false> {
public:
    using RoiKernel<Op, false>::RoiKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        const TensorND &src = in[0], &rois = in[1], &dst = out[0], &index = out[1];
        auto a = Args(this->m_param, src.layout, rois.layout, dst.layout, index.layout);
        this->check_batch(a, rois);
        Launch(a, src.raw_ptr(), rois.raw_ptr(), dst.raw_ptr(),
               static_cast<int32_t*>(index.raw_ptr()), this->stream());
        return "cuda";
    }
};

template <class Op, auto Args, auto Launch>
class RoiBackward final : public RoiKernel<Op, true> {
public:
    using RoiKernel<Op, true>::RoiKernel;

private:
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorND &diff = in[0], &rois = in[1], &index = in[2], &grad = out[0];
        auto a = Args(this->m_param, grad.layout, rois.layout, diff.layout, index.layout);
        this->check_batch(a, rois);
        Launch(a, diff.raw_ptr(), rois.raw_ptr(), static_cast<const int32_t*>(index.raw_ptr()),
               reinterpret_cast<double*>(ws.ptr), grad.raw_ptr(), this->stream());
        return "cuda";
    }
};

}  // namespace neomeg::dnn::cuda
