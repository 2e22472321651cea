// Elemwise on one element: the formula of every mode, in the two arithmetics naive computes in.
// Kept apart from the loop (elemwise.cpp) so that the loop is one function, not one per mode.
#pragma once

#include <cstdint>

#include "src/common/elemwise.h"

namespace neomeg::dnn::naive::elemwise {

using dnn::elemwise::Mode;

// Float modes, and every mode whose data dtype is float (or TRUE_DIV on integers). Modes with a
// bool result return 0 or 1.
double eval_float(Mode mode, const double* x);

// Integer and bool data; `dt` is the data dtype (shift widths). Results wrap when stored.
int64_t eval_int(Mode mode, const int64_t* x, DType dt);

}  // namespace neomeg::dnn::naive::elemwise
