// What the CUDA kernels of ROIAlign and ROIPooling share (roi_align.cpp, roi_pooling.cpp): their
// launch arguments from the layouts, and the rois' batch column checked on the device before an
// image is read: a roi naming no image of the batch raises the IndexError naive raises
// (src/common/roi.h's rule and message). The check waits for the stream, since the error must
// come from exec and no image may be read through a bad index.
#pragma once

#include <string>

#include "src/common/roi.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernel.h"
#include "src/cuda/kernels/args.h"
#include "src/cuda/layout_util.h"

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

// The frame of the four kernels: every layout accepted, the batch check before each run.
template <class Op>
class RoiKernel : public CudaKernel<Op> {
public:
    using CudaKernel<Op>::CudaKernel;

protected:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    // The double accumulator of a backward op, one per grad element.
    size_t backward_workspace(std::span<const TensorLayout> out) {
        return out[0].total_nr_elems() * sizeof(double);
    }
    void check_batch(const kern::RoiArgs& a, const TensorND& rois) {
        m_check.run(a, rois.raw_ptr(), this->param_str(), this->stream());
    }

private:
    RoiBatchCheck m_check;
};

}  // namespace neomeg::dnn::cuda
