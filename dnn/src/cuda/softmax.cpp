// SoftmaxForward/Backward and LogSoftmaxForward/Backward through cuDNN (accurate softmax: the max
// is subtracted first), float32/float16/bfloat16. The tensor is described to cuDNN as
// (outer, axis, inner, 1) with the softmax over the channel axis, which needs the axes before and
// after `axis` each to merge into one strided axis (true of every dense tensor and of most views);
// other layouts go to the staged naive kernel.
#include <optional>

#include "neomeg/dnn/operators/norm.h"
#include "src/cuda/cudnn_util.h"
#include "src/cuda/kernel.h"

namespace neomeg::dnn::cuda {
namespace {

// Axes [begin, end) of l as one (size, stride) axis, when they merge.
std::optional<std::pair<size_t, ptrdiff_t>> merge_axes(const TensorLayout& l, size_t begin,
                                                       size_t end) {
    size_t size = 1;
    ptrdiff_t stride = 1;
    bool any = false;
    for (size_t i = end; i-- > begin;) {
        if (l[i] == 1)
            continue;
        if (any && l.stride[i] != stride * static_cast<ptrdiff_t>(size))
            return std::nullopt;
        if (!any)
            stride = l.stride[i];
        any = true;
        size *= l[i];
    }
    return std::pair{size, stride};
}

// The (outer, axis, inner, 1) description of l for a softmax over `axis`.
std::optional<NdDims> softmax_dims(const TensorLayout& l, size_t axis) {
    auto outer = merge_axes(l, 0, axis), inner = merge_axes(l, axis + 1, l.ndim);
    if (!outer || !inner || l.is_empty())
        return std::nullopt;
    ptrdiff_t axis_stride = l[axis] == 1 ? 1 : l.stride[axis];
    NdDims d;
    for (auto [size, stride] : {*outer, std::pair{l[axis], axis_stride}, *inner}) {
        ptrdiff_t s = size == 1 ? 1 : stride;
        if (s <= 0 || size >= (1u << 31) || s >= (ptrdiff_t{1} << 31))
            return std::nullopt;
        d.dims.push_back(static_cast<int>(size));
        d.strides.push_back(static_cast<int>(s));
    }
    d.dims.push_back(1);
    d.strides.push_back(1);
    return d;
}

// The frame of the four operators: `kLog` picks cuDNN's log-softmax, `kBackward` the gradient
// (inputs dst, diff) instead of the forward (input src).
template <class Op, bool kLog, bool kBackward>
class SoftmaxImpl final : public CudaKernel<Op> {
public:
    using CudaKernel<Op>::CudaKernel;

private:
    size_t axis_of(const TensorLayout& l) const {
        int32_t a = this->m_param.axis;
        return static_cast<size_t>(a < 0 ? a + static_cast<int32_t>(l.ndim) : a);
    }

    bool describe(std::span<const TensorLayout> in, std::span<const TensorLayout> out,
                  TensorDesc* descs) const {
        size_t axis = axis_of(out[0]);
        for (size_t i = 0; i < in.size() + 1; ++i) {
            const TensorLayout& l = i < in.size() ? in[i] : out[0];
            auto d = softmax_dims(l, axis);
            if (!d || l.dtype != out[0].dtype || !descs[i].set_dims(l.dtype, *d))
                return false;
        }
        return true;
    }

    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout> out) override {
        TensorDesc descs[3];
        return cudnn_type(out[0].dtype) && describe(in, out, descs);
    }

    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        std::vector<TensorLayout> il, ol{out[0].layout};
        for (auto& t : in)
            il.push_back(t.layout);
        TensorDesc descs[3];
        describe(il, ol, descs);
        float alpha = 1, beta = 0;
        cudnnSoftmaxAlgorithm_t algo = kLog ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE;
        if constexpr (kBackward)
            NM_CUDNN_CHECK(libcudnn().cudnnSoftmaxBackward(
                    this->cuda_handle().cudnn(), algo, CUDNN_SOFTMAX_MODE_CHANNEL, &alpha,
                    descs[0].get(), in[0].raw_ptr(), descs[1].get(), in[1].raw_ptr(), &beta,
                    descs[2].get(), out[0].raw_ptr()));
        else
            NM_CUDNN_CHECK(libcudnn().cudnnSoftmaxForward(
                    this->cuda_handle().cudnn(), algo, CUDNN_SOFTMAX_MODE_CHANNEL, &alpha,
                    descs[0].get(), in[0].raw_ptr(), &beta, descs[1].get(), out[0].raw_ptr()));
        return "cudnn";
    }
};

using SoftmaxForwardImpl = SoftmaxImpl<SoftmaxForward, false, false>;
using SoftmaxBackwardImpl = SoftmaxImpl<SoftmaxBackward, false, true>;
using LogSoftmaxForwardImpl = SoftmaxImpl<LogSoftmaxForward, true, false>;
using LogSoftmaxBackwardImpl = SoftmaxImpl<LogSoftmaxBackward, true, true>;

}  // namespace
NM_REGISTER_CUDA(SoftmaxForward, SoftmaxForwardImpl);
NM_REGISTER_CUDA(SoftmaxBackward, SoftmaxBackwardImpl);
NM_REGISTER_CUDA(LogSoftmaxForward, LogSoftmaxForwardImpl);
NM_REGISTER_CUDA(LogSoftmaxBackward, LogSoftmaxBackwardImpl);
}  // namespace neomeg::dnn::cuda
