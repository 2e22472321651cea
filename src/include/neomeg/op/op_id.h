// OpId without its members: what OpDef and the layers above need to pass ids around. The enum of
// every registry operator (<neomeg/op/op_ids.h>, generated) is for the few places that list or
// name them all; a registry class carries its own id (ops::Elemwise::kId, from
// <neomeg/op/defs/<group>.h>), so an edit to one definition group does not recompile code that
// uses only other groups.
#pragma once

#include <cstdint>

namespace neomeg {

enum class OpId : uint16_t;

// The id of an op outside the generated registry (one that runs only eagerly, such as a Python
// autodiff.Function); it overrides name(). Above every registry id (op_ids.cpp checks).
inline constexpr OpId kCustomOpId = static_cast<OpId>(0xffff);

// The name of a registry operator ("Elemwise"); defined with the enum (op_ids.cpp, generated).
const char* op_id_name(OpId id);

}  // namespace neomeg
