// The element a Fill writes, as the dst dtype's C++ type: naive and x86 both convert the param
// through this, so they agree bit for bit in every dtype.
#pragma once

#include "neomeg/dnn/operators/tensor_basic.h"

namespace neomeg::dnn {

template <class T>
T fill_value(const param::Fill& p) {
    return static_cast<T>(p.value);
}

}  // namespace neomeg::dnn
