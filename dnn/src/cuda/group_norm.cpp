// GroupNormForward and GroupNormBackward on the CUDA handle, on LayerNorm's row kernels
// (kernels/layer_norm.cu): each (sample, group) is one row of (C / group) * S elements in src's
// row-major order, the affine parameters indexed per channel; dweight and dbias sum per channel.
// Affine or not, float dtypes, any strides.
#include "neomeg/dnn/operators/norm.h"
#include "src/cuda/norm_args.h"

namespace neomeg::dnn::cuda {
namespace {

kern::LayerNormArgs gn_args(const param::GroupNorm& p, const TensorND& src, const TensorND& mean,
                            const TensorND& rstd, const TensorND* weight, const TensorND* bias) {
    kern::LayerNormArgs a{};
    const TensorLayout& l = src.layout;
    int64_t spatial = 1;
    for (size_t i = 2; i < l.ndim; ++i)
        spatial *= static_cast<int64_t>(l[i]);
    a.groups = p.group;
    a.spatial = spatial;
    a.rows = static_cast<int64_t>(l[0]) * a.groups;
    a.len = static_cast<int64_t>(l[1]) / a.groups * spatial;
    a.eps = p.eps;
    set_norm_tensors(a, src, mean, rstd, weight, bias);
    return a;
}

class GroupNormForwardImpl final : public CudaKernel<GroupNormForward> {
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
        auto a = gn_args(m_param, in[0], out[1], out[2], affine ? &in[1] : nullptr,
                         affine ? &in[2] : nullptr);
        kern::layer_norm_forward(a, out[0].raw_ptr(), to_kern(out[0].layout.dtype),
                                 flat(out[0].layout), stream());
        return "cuda";
    }
};

class GroupNormBackwardImpl final : public CudaKernel<GroupNormBackward> {
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
        auto a = gn_args(m_param, in[1], in[2], in[3], affine ? &in[4] : nullptr, nullptr);
        kern::DT diff_dt = to_kern(in[0].layout.dtype);
        kern::Strided none, diff = flat(in[0].layout);
        kern::layer_norm_backward(a, in[0].raw_ptr(), diff_dt, diff, out[0].raw_ptr(),
                                  flat(out[0].layout), nullptr, none, nullptr, none, stream());
        if (affine)
            kern::group_norm_affine_grad(a, static_cast<int64_t>(in[1].layout[1]), in[0].raw_ptr(),
                                         diff_dt, diff, out[1].raw_ptr(), flat(out[1].layout),
                                         out[2].raw_ptr(), flat(out[2].layout), stream());
        return "cuda";
    }
};

}  // namespace
NM_REGISTER_CUDA(GroupNormForward, GroupNormForwardImpl);
NM_REGISTER_CUDA(GroupNormBackward, GroupNormBackwardImpl);
}  // namespace neomeg::dnn::cuda
