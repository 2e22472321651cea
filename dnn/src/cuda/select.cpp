// CondTake and NonZero on the CUDA handle (kernels/select.cu): any strides, every dtype. The
// count is written on the device like the taken elements, so nothing waits for the stream; a
// caller that sizes a view by it reads it back (the static-shape contract of
// dnn/ops/defs/indexing.py).
#include "neomeg/dnn/operators/indexing.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

// inputs: data, mask; outputs: values, indices, count.
class CondTakeImpl final : public CudaKernel<CondTake> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout>) override {
        return kern::select_workspace_bytes(static_cast<int64_t>(in[0].total_nr_elems()));
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorND &data = in[0], &mask = in[1];
        auto c = collapse_jointly({data.layout, mask.layout});
        kern::cond_take(data.raw_ptr(), static_cast<int>(data.layout.dtype.size()), c[0],
                        mask.raw_ptr(), c[1], static_cast<int64_t>(data.layout.total_nr_elems()),
                        out[0].raw_ptr(), out[0].layout.stride[0],
                        static_cast<int32_t*>(out[1].raw_ptr()), out[1].layout.stride[0],
                        static_cast<int32_t*>(out[2].raw_ptr()), ws.ptr, stream());
        return "cuda:cub";
    }
};

// inputs: src; outputs: coords {ndim, N}, count.
class NonZeroImpl final : public CudaKernel<NonZero> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout>) override {
        return kern::select_workspace_bytes(static_cast<int64_t>(in[0].total_nr_elems()));
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorLayout& l = in[0].layout;
        int64_t shape[kern::kMaxNdim] = {};
        for (size_t d = 0; d < l.ndim; ++d)
            shape[d] = static_cast<int64_t>(l[d]);
        int64_t coord_strides[2] = {out[0].layout.stride[0], out[0].layout.stride[1]};
        kern::nonzero(in[0].raw_ptr(), to_kern(l.dtype), collapse_jointly({l})[0], shape,
                      static_cast<int>(l.ndim), static_cast<int64_t>(l.total_nr_elems()),
                      static_cast<int32_t*>(out[0].raw_ptr()), coord_strides,
                      static_cast<int32_t*>(out[1].raw_ptr()), ws.ptr, stream());
        return "cuda:cub";
    }
};

}  // namespace
NM_REGISTER_CUDA(CondTake, CondTakeImpl);
NM_REGISTER_CUDA(NonZero, NonZeroImpl);
}  // namespace neomeg::dnn::cuda
