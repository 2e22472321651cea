// The CUDA handle's fallback for an operator (or a case) without a CUDA kernel: wait for the
// stream, copy every input and output span to host memory, run the naive kernel there, copy the
// outputs back. Correct for every layout naive takes, and slow; the first staged run of each
// operator type says so on stderr, so no slow path is silent.
#pragma once

#include <span>

#include "src/cuda/handle.h"
#include "src/x86/kernel_report.h"

namespace neomeg::dnn::cuda {

// Runs `naive_op` (an operator of a naive handle, params already set) on device tensors through
// host copies, on `handle`'s device and stream; returns after the outputs are back on the device.
void run_staged(HandleImpl& handle, OperatorBase& naive_op, std::span<const TensorND> inputs,
                std::span<const TensorND> outputs);

template <class Op>
class Staged final : public Op, public x86::KernelReport {
public:
    using Op::Op;

    // The naive kernel's scratch memory is host memory that run_staged allocates itself.
    size_t get_workspace_in_bytes(std::span<const TensorLayout>,
                                  std::span<const TensorLayout>) override {
        return 0;
    }
    const char* last_kernel() const override { return m_ran ? "naive(staged)" : ""; }

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        auto& handle = *static_cast<HandleImpl*>(this->handle());
        if (!m_naive)
            m_naive = handle.naive().template create_operator<Op>();
        // Compared first: assigning a convolution's params copies (allocates) its vectors.
        if (!(m_naive->param() == this->m_param))
            m_naive->param() = this->m_param;
        run_staged(handle, *m_naive, inputs, outputs);
        m_ran = true;
    }

private:
    std::unique_ptr<Op> m_naive;
    bool m_ran = false;
};

}  // namespace neomeg::dnn::cuda
