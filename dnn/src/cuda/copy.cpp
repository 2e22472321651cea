// TypeCvt, Relayout and Fill on the CUDA handle: one strided element walk (kernels/copy.cu);
// a Relayout between dense layouts is a single device-to-device copy. Quantized tensors move here
// as their storage type; a TypeCvt that rescales them runs staged naive.
#include <cstring>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/common/dtype_dispatch.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

void convert(const TensorND& src, const TensorND& dst, cudaStream_t stream) {
    auto c = collapse_jointly({src.layout, dst.layout});
    // Equal dtypes make it a move, which needs only the storage type (a quantized tensor's too).
    const bool move = src.layout.dtype == dst.layout.dtype;
    auto dt = [move](DType d) { return move ? storage_kern(d) : to_kern(d); };
    kern::convert(src.raw_ptr(), dt(src.layout.dtype), c[0], dst.raw_ptr(), dt(dst.layout.dtype),
                  c[1], static_cast<int64_t>(dst.layout.total_nr_elems()), stream);
}

class TypeCvtImpl final : public CudaKernel<TypeCvt> {
public:
    using CudaKernel<TypeCvt>::CudaKernel;

private:
    bool takes_quantized() const override { return true; }
    // A conversion from or to a quantized dtype rescales (naive's rounding and saturation); only
    // one that keeps the dtype, a move, runs here.
    bool accepts(std::span<const TensorLayout> inputs,
                 std::span<const TensorLayout> outputs) override {
        const DType from = inputs[0].dtype, to = outputs[0].dtype;
        return !(from.is_quantized() || to.is_quantized()) || from == to;
    }
    const char* run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                    Workspace) override {
        convert(inputs[0], outputs[0], stream());
        return "cuda";
    }
};

class RelayoutImpl final : public CudaKernel<Relayout> {
public:
    using CudaKernel<Relayout>::CudaKernel;

private:
    bool takes_quantized() const override { return true; }
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                    Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        if (src.layout.is_contiguous() && dst.layout.is_contiguous()) {
            NM_CUDA_CHECK(cudaMemcpyAsync(dst.raw_ptr(), src.raw_ptr(), dst.layout.access_bytes(),
                                          cudaMemcpyDeviceToDevice, stream()));
            return "cuda:memcpy";
        }
        convert(src, dst, stream());
        return "cuda";
    }
};

class FillImpl final : public CudaKernel<Fill> {
public:
    using CudaKernel<Fill>::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND>, std::span<const TensorND> outputs,
                    Workspace) override {
        const TensorND& dst = outputs[0];
        // The value converted on the host exactly as the naive kernel converts it.
        uint32_t bits = 0;
        dispatch_dtype(dst.layout.dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            static_assert(sizeof(T) <= sizeof(bits));
            T v = static_cast<T>(m_param.value);
            std::memcpy(&bits, &v, sizeof(T));
        });
        auto c = collapse_jointly({dst.layout});
        kern::fill_bytes(dst.raw_ptr(), static_cast<int>(dst.layout.dtype.size()), c[0],
                         static_cast<int64_t>(dst.layout.total_nr_elems()), bits, stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(TypeCvt, TypeCvtImpl);
NM_REGISTER_CUDA(Relayout, RelayoutImpl);
NM_REGISTER_CUDA(Fill, FillImpl);
}  // namespace neomeg::dnn::cuda
