// BatchNormForward (training) and BatchNormBackward (training) through cuDNN's spatial batch
// normalisation, float32/float16/bfloat16 data with float32 statistics (cuDNN's rule, and what
// MegEngine keeps for float16 activations). cuDNN's running-statistics update is MegEngine's with
// factor 1 - momentum, the unbiased variance included. Inference mode, float16 statistics, a
// per-channel tensor that is not dense, and channels of one element each (whose unbiased variance
// naive makes NaN, as MegEngine does) go to the staged naive kernel.
#include <array>

#include "neomeg/dnn/operators/norm.h"
#include "src/cuda/cudnn_util.h"
#include "src/cuda/kernel.h"

namespace neomeg::dnn::cuda {
namespace {

// The (1, C, 1, ...) description of a per-channel tensor of src's rank ({C} or {1, C, 1, ...}),
// when it is dense along C.
bool describe_per_channel(TensorDesc& desc, const TensorLayout& src, const TensorLayout& l) {
    size_t c = src[1];
    if (l.dtype != dtype::Float32 || l.total_nr_elems() != c)
        return false;
    for (size_t i = 0; i < l.ndim; ++i)
        if (l[i] == c && c != 1 && l.stride[i] != 1)
            return false;
    TensorLayout shaped = src;
    for (size_t i = 0; i < shaped.ndim; ++i)
        shaped[i] = i == 1 ? c : 1;
    shaped = TensorLayout(shaped, dtype::Float32);
    return desc.set(shaped);
}

bool batch_has_more_than_one(const TensorLayout& src) {
    return src.ndim >= 2 && src[1] > 0 && src.total_nr_elems() / src[1] > 1;
}

class BatchNormForwardImpl final : public CudaKernel<BatchNormForward> {
public:
    using CudaKernel::CudaKernel;

private:
    // inputs: src, scale, bias, running_mean, running_var;
    // outputs: dst, batch_mean, batch_inv_std, running_mean_out, running_var_out.
    bool describe(std::span<const TensorLayout> in, std::span<const TensorLayout> out,
                  TensorDesc& x, TensorDesc& y, TensorDesc& per_channel) const {
        if (m_param.fwd_mode != Param::FwdMode::TRAINING || !batch_has_more_than_one(in[0]) ||
            !x.set(in[0]) || !y.set(out[0]) || !describe_per_channel(per_channel, in[0], in[1]))
            return false;
        TensorDesc scratch;
        for (size_t i = 2; i < 5; ++i)
            if (!describe_per_channel(scratch, in[0], in[i]))
                return false;
        for (size_t i = 1; i < 5; ++i)
            if (!describe_per_channel(scratch, in[0], out[i]))
                return false;
        return true;
    }
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout> out) override {
        TensorDesc x, y, pc;
        return describe(in, out, x, y, pc);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        std::array<TensorLayout, 5> il, ol;
        for (size_t i = 0; i < 5; ++i) {
            il[i] = in[i].layout;
            ol[i] = out[i].layout;
        }
        TensorDesc x, y, pc;
        describe(il, ol, x, y, pc);
        // cuDNN updates the running statistics in place: start the outputs from the inputs.
        size_t stat_bytes = in[3].layout.access_bytes();
        for (size_t i = 3; i < 5; ++i)
            if (out[i].raw_ptr() != in[i].raw_ptr())
                NM_CUDA_CHECK(cudaMemcpyAsync(out[i].raw_ptr(), in[i].raw_ptr(), stat_bytes,
                                              cudaMemcpyDeviceToDevice, stream()));
        float alpha = 1, beta = 0;
        NM_CUDNN_CHECK(libcudnn().cudnnBatchNormalizationForwardTraining(
                cuda_handle().cudnn(), CUDNN_BATCHNORM_SPATIAL, &alpha, &beta, x.get(),
                in[0].raw_ptr(), y.get(), out[0].raw_ptr(), pc.get(), in[1].raw_ptr(),
                in[2].raw_ptr(), 1.0 - static_cast<double>(m_param.momentum), out[3].raw_ptr(),
                out[4].raw_ptr(), static_cast<double>(m_param.epsilon), out[1].raw_ptr(),
                out[2].raw_ptr()));
        return "cudnn";
    }
};

class BatchNormBackwardImpl final : public CudaKernel<BatchNormBackward> {
public:
    using CudaKernel::CudaKernel;

private:
    // inputs: diff, src, scale, saved_mean, saved_inv_std; outputs: grad, dscale, dbias.
    bool describe(std::span<const TensorLayout> in, std::span<const TensorLayout> out,
                  TensorDesc& dy, TensorDesc& x, TensorDesc& dx, TensorDesc& per_channel) const {
        if (m_param.fwd_mode != Param::FwdMode::TRAINING || !batch_has_more_than_one(in[1]) ||
            !dy.set(in[0]) || !x.set(in[1]) || !dx.set(out[0]) ||
            !describe_per_channel(per_channel, in[1], in[2]))
            return false;
        TensorDesc scratch;
        for (size_t i = 3; i < 5; ++i)
            if (!describe_per_channel(scratch, in[1], in[i]))
                return false;
        for (size_t i = 1; i < 3; ++i)
            if (!describe_per_channel(scratch, in[1], out[i]))
                return false;
        return true;
    }
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout> out) override {
        TensorDesc dy, x, dx, pc;
        return describe(in, out, dy, x, dx, pc);
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        std::array<TensorLayout, 5> il;
        std::array<TensorLayout, 3> ol;
        for (size_t i = 0; i < 5; ++i)
            il[i] = in[i].layout;
        for (size_t i = 0; i < 3; ++i)
            ol[i] = out[i].layout;
        TensorDesc dy, x, dx, pc;
        describe(il, ol, dy, x, dx, pc);
        float one = 1, zero = 0;
        NM_CUDNN_CHECK(libcudnn().cudnnBatchNormalizationBackward(
                cuda_handle().cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, x.get(),
                in[1].raw_ptr(), dy.get(), in[0].raw_ptr(), dx.get(), out[0].raw_ptr(), pc.get(),
                in[2].raw_ptr(), out[1].raw_ptr(), out[2].raw_ptr(),
                static_cast<double>(m_param.epsilon), in[3].raw_ptr(), in[4].raw_ptr()));
        return "cudnn";
    }
};

}  // namespace
NM_REGISTER_CUDA(BatchNormForward, BatchNormForwardImpl);
NM_REGISTER_CUDA(BatchNormBackward, BatchNormBackwardImpl);
}  // namespace neomeg::dnn::cuda
