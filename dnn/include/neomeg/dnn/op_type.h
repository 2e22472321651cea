// OpType without its members: what OperatorBase, Handle and the registries' interfaces need. The
// enum of every operator (<neomeg/dnn/op_types.h>, generated) is for the few places that list them
// all; an operator class carries its own value (Op::kType), so a kernel file includes only its
// group's <neomeg/dnn/operators/<group>.h> and an edit to another group does not recompile it.
#pragma once

#include <cstdint>

namespace neomeg::dnn {

enum class OpType : uint16_t;

// The operator's name ("ConvolutionForward"); defined with the enum (op_types.cpp, generated).
const char* op_type_name(OpType t);

}  // namespace neomeg::dnn
