#include "src/x86/exec_report.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <string>
#include <string_view>

#include "neomeg/dnn/op_types.h"
#include "src/common/exec_report.h"
#include "src/x86/kernel_report.h"

namespace neomeg::dnn::x86 {
namespace {

std::array<std::atomic<bool>, kOpTypeLimit> g_warned{};

}  // namespace

void ExecReporter::ran(const OperatorBase& op, std::span<const TensorND> inputs,
                       std::span<const TensorND> outputs) {
    // Without the switch only ops without an x86 kernel are watched: they ran naive.
    if (!debug_enabled()) {
        note_naive_run(op, inputs, outputs);
        return;
    }
    auto* report = dynamic_cast<const KernelReport*>(&op);
    std::string_view kernel = report ? report->last_kernel() : "naive";
    print_exec_line("x86", op, inputs, outputs, kernel);
    if (kernel == "naive")
        note_naive_run(op, inputs, outputs);
}

void note_naive_run(const OperatorBase& op, std::span<const TensorND> inputs,
                    std::span<const TensorND> outputs) {
    std::atomic<bool>& warned = g_warned[static_cast<size_t>(op.type())];
    if (warned.load(std::memory_order_relaxed))
        return;
    // A float32 op reads and writes float32: its first input (a generator has none) and its first
    // output. float32 statistics beside a float16 src do not make one, nor does a float32 tensor
    // whose shape alone is read (GetVarShape's int32 dst). With an empty tensor there is next to
    // nothing to compute.
    auto is_f32 = [](std::span<const TensorND> ts) {
        return ts.empty() || ts[0].layout.dtype == dtype::Float32;
    };
    if (outputs.empty() || !is_f32(inputs) || !is_f32(outputs))
        return;
    for (auto ts : {inputs, outputs})
        for (const TensorND& t : ts)
            if (t.layout.is_empty())
                return;
    if (warned.exchange(true))
        return;
    std::string line =
            str_cat("neomeg x86 warning: ", op.param_str(), " on float32 [", tensors_str(inputs),
                    "] runs the naive reference kernel (slow); warned once per operator\n");
    std::fputs(line.c_str(), stderr);
}

void forget_naive_warnings() {
    for (std::atomic<bool>& w : g_warned)
        w.store(false, std::memory_order_relaxed);
}

}  // namespace neomeg::dnn::x86
