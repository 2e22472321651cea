// The frame of a CUDA kernel: it says which cases it takes (`accepts`), how much device workspace
// it needs for them, and runs them on the handle's stream; every case it declines goes to the
// staged naive kernel of the same operator, so no case gets a wrong answer or an error naive would
// not give. last_kernel() names what ran ("cublas", "cudnn:<algo>", "cuda", "naive(staged)").
#pragma once

#include <memory>
#include <vector>

#include "src/cuda/staged.h"

namespace neomeg::dnn::cuda {

template <class Op>
class CudaKernel : public Op, public x86::KernelReport {
public:
    using Op::Op;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> inputs,
                                  std::span<const TensorLayout> outputs) final {
        return runs_here(inputs, outputs) ? workspace_in_bytes(inputs, outputs) : 0;
    }

    const char* last_kernel() const final { return m_last; }

protected:
    // Whether the CUDA kernel takes these layouts under the current params.
    virtual bool accepts(std::span<const TensorLayout> inputs,
                         std::span<const TensorLayout> outputs) = 0;
    virtual size_t workspace_in_bytes(std::span<const TensorLayout>,
                                      std::span<const TensorLayout>) {
        return 0;
    }
    // Whether the kernel takes complex or quantized tensors: the launchers' kern::DT has only the
    // plain dtypes (to_kern of another is no valid DT), and a quantized value's meaning is in its
    // scale, so the frame sends any call with such a tensor to the staged naive kernel unless the
    // kernel says it handles them: complex as float32 views (CreateComplex, ComplexPart),
    // quantized as the bytes of their storage type (Relayout, a TypeCvt that keeps the dtype).
    virtual bool takes_complex() const { return false; }
    virtual bool takes_quantized() const { return false; }
    // Enqueues the kernel on the stream (the handle's device is current); returns its name.
    virtual const char* run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                            Workspace workspace) = 0;

    HandleImpl& cuda_handle() const { return *static_cast<HandleImpl*>(this->handle()); }
    cudaStream_t stream() const { return cuda_handle().stream(); }

    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace workspace) final {
        std::vector<TensorLayout> layouts;
        layouts.reserve(inputs.size() + outputs.size());
        for (auto& t : inputs)
            layouts.push_back(t.layout);
        for (auto& t : outputs)
            layouts.push_back(t.layout);
        std::span<const TensorLayout> all(layouts);
        if (runs_here(all.first(inputs.size()), all.subspan(inputs.size()))) {
            DeviceGuard guard(cuda_handle().device());
            m_last = run(inputs, outputs, workspace);
            NM_CUDA_CHECK(cudaGetLastError());
        } else {
            staged().exec_unchecked(inputs, outputs, workspace);
            m_last = "naive(staged)";
        }
    }

private:
    bool runs_here(std::span<const TensorLayout> inputs, std::span<const TensorLayout> outputs) {
        for (auto ls : {inputs, outputs})
            for (const TensorLayout& l : ls)
                if ((l.dtype.is_complex() && !takes_complex()) ||
                    (l.dtype.is_quantized() && !takes_quantized()))
                    return false;
        return accepts(inputs, outputs);
    }

    Op& staged() {
        if (!m_staged)
            m_staged = cuda_handle().template create_staged_operator<Op>();
        if (!(m_staged->param() == this->m_param))
            m_staged->param() = this->m_param;
        return *m_staged;
    }

    std::unique_ptr<Op> m_staged;
    const char* m_last = "";
};

}  // namespace neomeg::dnn::cuda
