// The x86 backend: oneDNN kernels for the operators where they pay, and for every other operator
// (or every case an x86 kernel declines) the naive kernel, created on this handle so that the
// operators a naive kernel makes for itself come from x86 too.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "neomeg/dnn/handle.h"
#include "src/common/registry.h"
#include "src/x86/exec_report.h"

namespace neomeg::dnn::x86 {

// Counts the forks this process descends from since the first x86 handle; operators drop plans
// made under another count (see after_fork_in_child in handle.cpp).
unsigned fork_generation();

class HandleImpl final : public Handle {
public:
    HandleImpl();
    std::unique_ptr<OperatorBase> create_operator(OpType type) override;

    // The naive kernel of `type` on this handle, for x86 kernels to delegate to.
    std::unique_ptr<OperatorBase> create_naive_operator(OpType type);
    template <class Op>
    std::unique_ptr<Op> create_naive_operator() {
        return std::unique_ptr<Op>(static_cast<Op*>(create_naive_operator(Op::kType).release()));
    }

    // channel_blocked.cpp
    size_t preferred_channel_block() const override;

    const dnnl::engine& engine() const { return m_engine; }
    dnnl::stream& stream() { return m_stream; }

protected:
    bool can_create(OpType type) const override;

private:
    dnnl::engine m_engine;
    dnnl::stream m_stream;
    ExecReporter m_reporter;
};

}  // namespace neomeg::dnn::x86

// In an x86 kernel file: NM_REGISTER_X86(MatrixMul, MatrixMulImpl);
#define NM_REGISTER_X86(Op, Impl) NM_REGISTER_OPERATOR(X86, Op, Impl)
