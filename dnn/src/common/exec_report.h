// NEOMEG_DEBUG's line per op, for every backend that reports the kernels it runs (x86:
// docs/x86-backend.md, "Reporting: no silent slow path"; CUDA: docs/architecture.md, the CUDA
// handle's "Reporting").
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "neomeg/dnn/operator.h"

namespace neomeg::dnn {

// Whether NEOMEG_DEBUG is set to something other than "" or "0" (read once).
bool debug_enabled();

// The tensors' layouts, comma-separated.
std::string tensors_str(std::span<const TensorND> ts);

// "neomeg <backend>: <params> inputs [...] outputs [...] kernel <kernel>" on stderr, written in one
// call so that lines from several threads do not interleave.
void print_exec_line(std::string_view backend, const OperatorBase& op,
                     std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                     std::string_view kernel);

}  // namespace neomeg::dnn
