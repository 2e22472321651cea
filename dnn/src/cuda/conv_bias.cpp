// ConvBias through cuDNN: dst = nonline(conv(src, filter) + bias + z). Where cuDNN can fuse it,
// one cudnnConvolutionBiasActivationForward call (act(conv + z + bias)): identity or ReLU, a
// per-channel bias (1, C, 1...) or none (zeros in the workspace then), z as described or none.
// Identity runs on IMPLICIT_PRECOMP_GEMM only (cuDNN's rule for it; a measured algorithm that is
// another stays, unfused). Everything else (sigmoid, h-swish, a bias of another shape, a case
// cuDNN reports NOT_SUPPORTED for) runs the convolution and then adds bias and z and applies the
// nonlinearity with the Elemwise kernel. The convolution's algorithm is chosen as for
// ConvolutionForward (conv_plan.h) on the legacy API alone: the fused call takes a legacy
// algorithm, and the graph API's fused epilogues are not wired here.
#include <array>

#include "neomeg/dnn/operators/convolution.h"
#include "src/cuda/conv_kernel.h"
#include "src/cuda/kernels/args.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

using NonlineMode = param::ConvBias::NonlineMode;

// dst = op(dst, other) (or op(dst)) elementwise in place on the device, through the Elemwise
// kernel.
void elemwise_inplace(kern::EwMode mode, const TensorND& dst, const TensorND* other,
                      cudaStream_t stream) {
    std::vector<TensorLayout> layouts{dst.layout, dst.layout};
    if (other)
        layouts.push_back(other->layout.broadcast(dst.layout));
    auto c = collapse_jointly(layouts);
    kern::ElemwiseArgs args{};
    args.mode = mode;
    args.arity = other ? 2 : 1;
    args.in_float = true;
    args.data_bits = static_cast<int>(dst.layout.dtype.size() * 8);
    args.src[0] = dst.raw_ptr();
    args.src_dt[0] = to_kern(dst.layout.dtype);
    args.src_layout[0] = c[1];
    if (other) {
        args.src[1] = other->raw_ptr();
        args.src_dt[1] = to_kern(other->layout.dtype);
        args.src_layout[1] = c[2];
    }
    args.dst = dst.raw_ptr();
    args.dst_dt = to_kern(dst.layout.dtype);
    args.dst_layout = c[0];
    args.nr_elems = static_cast<int64_t>(dst.layout.total_nr_elems());
    kern::elemwise(args, stream);
}

// A bias cuDNN can add: one value per output channel, (1, C, 1...) with dst's rank.
bool per_channel(const TensorLayout& bias, const TensorLayout& dst) {
    if (bias.ndim != dst.ndim || dst.ndim < 3 || bias[1] != dst[1])
        return false;
    for (size_t i = 0; i < bias.ndim; ++i)
        if (i != 1 && bias[i] != 1)
            return false;
    return bias[1] == 1 || bias.stride[1] == 1;
}

// The fused epilogue for these layouts, or null where cuDNN cannot fuse them.
std::unique_ptr<BiasActivation> fused_epilogue(NonlineMode mode, const TensorLayout& bias,
                                               const TensorLayout& z, const TensorLayout& dst) {
    if (mode != NonlineMode::IDENTITY && mode != NonlineMode::RELU)
        return nullptr;
    if (mode == NonlineMode::IDENTITY && bias.ndim == 0 && z.ndim == 0)
        return nullptr;  // a plain convolution: nothing to fuse
    if (bias.ndim != 0 && !per_channel(bias, dst))
        return nullptr;
    auto dims = cudnn_dims(dst);
    if (!dims)
        return nullptr;
    auto e = std::make_unique<BiasActivation>();
    // The bias as cuDNN wants it: (1, C, 1...) packed, with y's rank.
    NdDims b;
    b.dims.assign(dims->dims.size(), 1);
    b.strides.assign(dims->dims.size(), 1);
    b.dims[1] = static_cast<int>(dst[1]);
    b.strides[0] = b.dims[1];
    if (!e->bias.set_dims(dst.dtype, b))
        return nullptr;
    e->zero_bias = bias.ndim == 0;
    if (z.ndim != 0) {
        if (!e->z.set(z))
            return nullptr;
        e->has_z = true;
    }
    e->act.set(mode == NonlineMode::RELU ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY);
    return e;
}

class ConvBiasImpl final : public ConvKernel<ConvBias> {
public:
    using ConvKernel::ConvKernel;

private:
    // inputs: src, filter, bias, z; output: dst. Only dst's layout may overlap nothing else: the
    // unfused path reads bias and z after the convolution wrote dst.
    std::unique_ptr<ConvPlan> build(std::span<const TensorLayout> in,
                                    std::span<const TensorLayout> out) override {
        auto plan = make_conv_plan(cuda_handle(), ConvKind::Forward, ConvArgs::of(m_param), in[0],
                                   in[1], out[0], false);
        if (!plan)
            return nullptr;
        plan->fused = fused_epilogue(m_param.nonlineMode, in[2], in[3], out[0]);
        // cuDNN runs the identity epilogue on IMPLICIT_PRECOMP_GEMM only: the heuristics' choice
        // gives way to it, a measured one does not (the fastest convolution plus an Elemwise
        // pass, as measuring asked for).
        if (plan->fused && m_param.nonlineMode == NonlineMode::IDENTITY &&
            plan->algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM &&
            (plan->measured || !use_forward_algo(cuda_handle(), *plan,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)))
            plan->fused.reset();
        if (plan->fused && plan->fused->zero_bias) {
            constexpr size_t kAlign = 256;
            plan->fused->bias_offset = (plan->workspace + kAlign - 1) / kAlign * kAlign;
            plan->workspace = plan->fused->bias_offset + out[0].dtype.size(out[0][1]);
        }
        return plan;
    }

    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        std::array<TensorLayout, 4> il{in[0].layout, in[1].layout, in[2].layout, in[3].layout};
        std::array<TensorLayout, 1> ol{out[0].layout};
        ConvPlan& p = *plan_for(il, ol);
        if (p.fused && run_fused(p, in, out, ws))
            return "cudnn(fused)";
        run_unfused(p, in, out, ws);
        bool epilogue = in[2].layout.ndim != 0 || in[3].layout.ndim != 0 ||
                        m_param.nonlineMode != NonlineMode::IDENTITY;
        return epilogue ? "cudnn+elemwise" : "cudnn";
    }

    // false where cuDNN turns the case down at run time (the plan then stays unfused).
    bool run_fused(ConvPlan& p, std::span<const TensorND> in, std::span<const TensorND> out,
                   Workspace ws) {
        const BiasActivation& e = *p.fused;
        const void* bias = in[2].raw_ptr();
        size_t conv_ws = ws.size;
        if (e.zero_bias) {
            void* zeros = ws.ptr + e.bias_offset;
            NM_CUDA_CHECK(cudaMemsetAsync(zeros, 0, out[0].layout.dtype.size(out[0].layout[1]),
                                          stream()));
            bias = zeros;
            conv_ws = e.bias_offset;
        }
        float alpha1 = 1, alpha2 = e.has_z ? 1.f : 0.f;
        // Without z, z is dst under alpha2 = 0: cuDNN needs a tensor there, and does not read
        // one it scales by zero.
        cudnnStatus_t st = libcudnn().cudnnConvolutionBiasActivationForward(
                cuda_handle().cudnn(), &alpha1, p.x.get(), in[0].raw_ptr(), p.w.get(),
                in[1].raw_ptr(), p.conv, static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), ws.ptr,
                conv_ws, &alpha2, e.has_z ? e.z.get() : p.y.get(),
                e.has_z ? in[3].raw_ptr() : out[0].raw_ptr(), e.bias.get(), bias, e.act.get(),
                p.y.get(), out[0].raw_ptr());
        if (st == CUDNN_STATUS_NOT_SUPPORTED) {
            p.fused.reset();
            return false;
        }
        NM_CUDNN_CHECK(st);
        return true;
    }

    void run_unfused(const ConvPlan& p, std::span<const TensorND> in, std::span<const TensorND> out,
                     Workspace ws) {
        float alpha = 1, beta = 0;
        NM_CUDNN_CHECK(libcudnn().cudnnConvolutionForward(
                cuda_handle().cudnn(), &alpha, p.x.get(), in[0].raw_ptr(), p.w.get(),
                in[1].raw_ptr(), p.conv, static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), ws.ptr,
                ws.size, &beta, p.y.get(), out[0].raw_ptr()));
        if (in[2].layout.ndim != 0)
            elemwise_inplace(kern::EwMode::ADD, out[0], &in[2], stream());
        if (in[3].layout.ndim != 0)
            elemwise_inplace(kern::EwMode::ADD, out[0], &in[3], stream());
        switch (m_param.nonlineMode) {
            case NonlineMode::IDENTITY:
                break;
            case NonlineMode::RELU:
                elemwise_inplace(kern::EwMode::RELU, out[0], nullptr, stream());
                break;
            case NonlineMode::SIGMOID:
                elemwise_inplace(kern::EwMode::SIGMOID, out[0], nullptr, stream());
                break;
            case NonlineMode::H_SWISH:
                elemwise_inplace(kern::EwMode::H_SWISH, out[0], nullptr, stream());
                break;
        }
    }
};

}  // namespace
NM_REGISTER_CUDA(ConvBias, ConvBiasImpl);
}  // namespace neomeg::dnn::cuda
