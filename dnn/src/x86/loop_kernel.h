// LoopKernel<Op>: the frame of an x86 operator written as our own vectorised loops, the
// counterpart of DnnlKernel (kernel.h) for oneDNN: it reports the kernel it ran (KernelReport),
// keeps the naive operator it falls back to (with this operator's params), and asks for that
// operator's workspace (the loops themselves need none). A kernel derives from it and implements
// do_exec, calling run_naive() for what its loops do not cover.
#pragma once

#include <memory>
#include <span>

#include "src/x86/handle.h"
#include "src/x86/kernel_report.h"

namespace neomeg::dnn::x86 {

template <class Op>
class LoopKernel : public Op, public KernelReport {
public:
    using Op::Op;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> inputs,
                                  std::span<const TensorLayout> outputs) override {
        return naive().get_workspace_in_bytes(inputs, outputs);
    }

    const char* last_kernel() const final { return m_last; }

protected:
    void run_naive(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                   Workspace ws) {
        naive().exec_unchecked(inputs, outputs, ws);
        m_last = "naive";
        note_naive_run(*this, inputs, outputs);
    }

    const char* m_last = "";

private:
    Op& naive() {
        if (!m_naive)
            m_naive =
                    static_cast<HandleImpl*>(this->handle())->template create_naive_operator<Op>();
        m_naive->param() = this->m_param;
        return *m_naive;
    }

    std::unique_ptr<Op> m_naive;
};

}  // namespace neomeg::dnn::x86
