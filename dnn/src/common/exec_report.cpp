#include "src/common/exec_report.h"

#include <cstdio>
#include <cstdlib>

namespace neomeg::dnn {

bool debug_enabled() {
    static const bool on = [] {
        const char* v = std::getenv("NEOMEG_DEBUG");
        return v && *v && std::string_view(v) != "0";
    }();
    return on;
}

std::string tensors_str(std::span<const TensorND> ts) {
    std::string s;
    for (const TensorND& t : ts)
        s += (s.empty() ? "" : ", ") + t.layout.to_string();
    return s;
}

void print_exec_line(std::string_view backend, const OperatorBase& op,
                     std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                     std::string_view kernel) {
    std::string line =
            str_cat("neomeg ", backend, ": ", op.param_str(), " inputs [", tensors_str(inputs),
                    "] outputs [", tensors_str(outputs), "] kernel ", kernel, "\n");
    std::fputs(line.c_str(), stderr);
}

}  // namespace neomeg::dnn
