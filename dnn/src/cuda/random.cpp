// UniformRNG, GaussianRNG, PermutationRNG, DropoutForward/Backward and CheckNonFinite on the CUDA
// handle (kernels/random.cu; the permutation's sort in kernels/sort.cu): the same Philox streams
// as the naive kernels, element i in dst's logical row-major order whatever its strides.
#include "neomeg/dnn/operators/random.h"
#include "neomeg/dnn/operators/norm.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"

namespace neomeg::dnn::cuda {
namespace {

// Random bits per value: the dtype's significand, as naive (more would round up to 1).
int significand_bits(DType dt) {
    switch (dt.enumv()) {
        case DTypeEnum::Float16:
            return 11;
        case DTypeEnum::BFloat16:
            return 8;
        default:
            return 24;
    }
}

double keep_scale(float p) {
    return p < 1.f ? 1.0 / (1.0 - double(p)) : 0.0;
}

int64_t count(const TensorLayout& l) {
    return static_cast<int64_t>(l.total_nr_elems());
}

class UniformRNGImpl final : public CudaKernel<UniformRNG> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND>, std::span<const TensorND> out, Workspace) override {
        const TensorLayout& l = out[0].layout;
        kern::uniform(out[0].raw_ptr(), to_kern(l.dtype), collapse_jointly({l})[0], count(l),
                      m_param.seed, significand_bits(l.dtype), stream());
        return "cuda";
    }
};

class GaussianRNGImpl final : public CudaKernel<GaussianRNG> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND>, std::span<const TensorND> out, Workspace) override {
        const TensorLayout& l = out[0].layout;
        kern::gaussian(out[0].raw_ptr(), to_kern(l.dtype), collapse_jointly({l})[0], count(l),
                       m_param.seed, m_param.mean, m_param.std, stream());
        return "cuda";
    }
};

class DropoutForwardImpl final : public CudaKernel<DropoutForward> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    // inputs: src; outputs: dst, mask.
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        auto c = collapse_jointly({in[0].layout, out[0].layout, out[1].layout});
        kern::dropout_forward(in[0].raw_ptr(), to_kern(in[0].layout.dtype), c[0], out[0].raw_ptr(),
                              to_kern(out[0].layout.dtype), c[1], out[1].raw_ptr(), c[2],
                              count(in[0].layout), m_param.seed, m_param.drop_prob,
                              keep_scale(m_param.drop_prob), stream());
        return "cuda";
    }
};

class DropoutBackwardImpl final : public CudaKernel<DropoutBackward> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    // inputs: diff, mask; outputs: grad.
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        auto c = collapse_jointly({in[0].layout, in[1].layout, out[0].layout});
        kern::dropout_backward(in[0].raw_ptr(), to_kern(in[0].layout.dtype), c[0], in[1].raw_ptr(),
                               c[1], out[0].raw_ptr(), to_kern(out[0].layout.dtype), c[2],
                               count(in[0].layout), keep_scale(m_param.drop_prob), stream());
        return "cuda";
    }
};

class CheckNonFiniteImpl final : public CudaKernel<CheckNonFinite> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout>) override {
        return true;
    }
    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace) override {
        auto* flag = static_cast<int32_t*>(out[0].raw_ptr());
        NM_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int32_t), stream()));
        for (const TensorND& t : in)
            kern::find_non_finite(t.raw_ptr(), to_kern(t.layout.dtype),
                                  collapse_jointly({t.layout})[0], count(t.layout), flag, stream());
        return "cuda";
    }
};

class PermutationRNGImpl final : public CudaKernel<PermutationRNG> {
public:
    using CudaKernel::CudaKernel;

private:
    bool accepts(std::span<const TensorLayout>, std::span<const TensorLayout> out) override {
        return out[0].total_nr_elems() < (size_t{1} << 30);
    }
    size_t workspace_in_bytes(std::span<const TensorLayout>,
                              std::span<const TensorLayout> out) override {
        return kern::permutation_workspace_bytes(count(out[0]));
    }
    const char* run(std::span<const TensorND>, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorLayout& l = out[0].layout;
        kern::permutation(out[0].raw_ptr(), to_kern(l.dtype), collapse_jointly({l})[0], count(l),
                          m_param.seed, ws.ptr, stream());
        return "cuda:cub";
    }
};

}  // namespace
NM_REGISTER_CUDA(PermutationRNG, PermutationRNGImpl);
NM_REGISTER_CUDA(UniformRNG, UniformRNGImpl);
NM_REGISTER_CUDA(GaussianRNG, GaussianRNGImpl);
NM_REGISTER_CUDA(DropoutForward, DropoutForwardImpl);
NM_REGISTER_CUDA(DropoutBackward, DropoutBackwardImpl);
NM_REGISTER_CUDA(CheckNonFinite, CheckNonFiniteImpl);
}  // namespace neomeg::dnn::cuda
