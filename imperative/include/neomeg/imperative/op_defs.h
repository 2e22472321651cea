// Every registry operator under the names the eager runtime uses: imperative::ops::Elemwise is
// the registry's neomeg::ops::Elemwise (src/opgen/emit_op_defs.py generates them), and
// make_op_def. Code that names a few operators includes neomeg/imperative/op_def.h and their
// groups' neomeg/op/defs/<group>.h instead, so that an edit to another group leaves it alone.
#pragma once

#include "neomeg/imperative/op_def.h"
#include "neomeg/op/op_defs.h"

namespace neomeg::imperative {

using ::neomeg::make_op_def;

}  // namespace neomeg::imperative
