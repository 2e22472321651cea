// The MatrixMul param with the given transposes: the naive and x86 matrix-product suites build it
// on almost every line.
#pragma once

#include "neomeg/dnn.h"

namespace neomeg::dnn::test {

inline param::MatrixMul mm_param(bool ta, bool tb) {
    param::MatrixMul p;
    p.transposeA = ta;
    p.transposeB = tb;
    return p;
}

}  // namespace neomeg::dnn::test
