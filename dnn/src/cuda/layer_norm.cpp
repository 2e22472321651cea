// LayerNormForward and LayerNormBackward on the CUDA handle (kernels/layer_norm.cu), affine or
// not, float dtypes, any strides.
#include "neomeg/dnn/operators/norm.h"
#include "src/cuda/norm_args.h"

namespace neomeg::dnn::cuda {
namespace {

// The rows x len view of src and the statistics.
kern::LayerNormArgs ln_args(const param::LayerNorm& p, const TensorND& src, const TensorND& mean,
                            const TensorND& rstd, const TensorND* weight, const TensorND* bias) {
    kern::LayerNormArgs a{};
    int64_t len = 1;
    for (size_t i = src.layout.ndim - p.normalized_dim; i < src.layout.ndim; ++i)
        len *= static_cast<int64_t>(src.layout[i]);
    a.len = len;
    a.rows = static_cast<int64_t>(mean.layout.total_nr_elems());
    a.eps = p.eps;
    set_norm_tensors(a, src, mean, rstd, weight, bias);
    return a;
}

class LayerNormForwardImpl final : public CudaKernel<LayerNormForward> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    // inputs: src, [weight, bias]; outputs: dst, mean, rstd.
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        bool affine = m_param.affine;
        auto a = ln_args(m_param, in[0], out[1], out[2], affine ? &in[1] : nullptr,
                         affine ? &in[2] : nullptr);
        kern::layer_norm_forward(a, out[0].raw_ptr(), to_kern(out[0].layout.dtype),
                                 flat(out[0].layout), stream());
        return "cuda";
    }
};

class LayerNormBackwardImpl final : public CudaKernel<LayerNormBackward> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    // inputs: diff, src, mean, rstd, [weight]; outputs: grad, [dweight, dbias].
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        bool affine = m_param.affine;
        auto a = ln_args(m_param, in[1], in[2], in[3], affine ? &in[4] : nullptr, nullptr);
        kern::Strided none;
        kern::layer_norm_backward(
                a, in[0].raw_ptr(), to_kern(in[0].layout.dtype), flat(in[0].layout),
                out[0].raw_ptr(), flat(out[0].layout), affine ? out[1].raw_ptr() : nullptr,
                affine ? flat(out[1].layout) : none, affine ? out[2].raw_ptr() : nullptr,
                affine ? flat(out[2].layout) : none, stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(LayerNormForward, LayerNormForwardImpl);
NM_REGISTER_CUDA(LayerNormBackward, LayerNormBackwardImpl);
}  // namespace neomeg::dnn::cuda
