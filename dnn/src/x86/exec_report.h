// No silent slow path on x86. NEOMEG_DEBUG=1 prints a line to stderr for every op the x86 handle
// runs: its params, its tensors' layouts and the kernel (the oneDNN implementation, our loop
// kernel, or naive). Whatever the switch, a float32 op that runs a naive reference kernel on the
// x86 handle warns once per operator type, so a model that misses the fast kernels says so.
#pragma once

#include "neomeg/dnn/operator.h"
#include "src/common/exec_report.h"

namespace neomeg::dnn::x86 {

class ExecReporter final : public ExecObserver {
public:
    void ran(const OperatorBase& op, std::span<const TensorND> inputs,
             std::span<const TensorND> outputs) override;
};

// Called where `op` ran a naive kernel: warns once per operator type if the op works on float32
// (its first input, or a generator's first output) and has something to compute (no empty tensor).
void note_naive_run(const OperatorBase& op, std::span<const TensorND> inputs,
                    std::span<const TensorND> outputs);

// Lets every operator type warn again (tests of the warning, which may run in any order).
void forget_naive_warnings();

}  // namespace neomeg::dnn::x86
