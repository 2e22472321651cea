#include "src/cuda/exec_report.h"

#include <string_view>

#include "src/common/exec_report.h"
#include "src/x86/kernel_report.h"

namespace neomeg::dnn::cuda {

void ExecReporter::ran(const OperatorBase& op, std::span<const TensorND> inputs,
                       std::span<const TensorND> outputs) {
    auto* report = dynamic_cast<const x86::KernelReport*>(&op);
    print_exec_line("cuda", op, inputs, outputs, report ? report->last_kernel() : "unreported");
}

}  // namespace neomeg::dnn::cuda
