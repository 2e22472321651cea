// Every registry operator under the names the eager runtime uses: imperative::ops::Elemwise is
// the registry's neomeg::ops::Elemwise (src/opgen/emit_op_defs.py generates them).
#pragma once

#include "neomeg/imperative/op_def.h"
#include "neomeg/op/op_defs.h"

namespace neomeg::imperative {

namespace ops = ::neomeg::ops;
using ::neomeg::make_op_def;

}  // namespace neomeg::imperative
