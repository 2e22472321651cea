// The MatrixMul param with the given transposes: the naive and x86 matrix-product suites build it
// on almost every line.
#pragma once

#include "neomeg/dnn/dtype.h"
#include "neomeg/dnn/errors.h"
#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/layout.h"
#include "neomeg/dnn/operator.h"
#include "neomeg/dnn/params/linalg.h"
#include "neomeg/dnn/storage.h"
#include "neomeg/dnn/tensor.h"

namespace neomeg::dnn::test {

inline param::MatrixMul mm_param(bool ta, bool tb) {
    param::MatrixMul p;
    p.transposeA = ta;
    p.transposeB = tb;
    return p;
}

}  // namespace neomeg::dnn::test
