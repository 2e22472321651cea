// The kernel library's public interface: dtypes, layouts, tensors, handles and every operator.
// Start at Handle::make_naive() and OperatorBase; operators are generated from dnn/ops/defs.
#pragma once

#include "neomeg/dnn/dtype.h"
#include "neomeg/dnn/errors.h"
#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/layout.h"
#include "neomeg/dnn/operator.h"
#include "neomeg/dnn/operators.h"
#include "neomeg/dnn/params.h"
#include "neomeg/dnn/storage.h"
#include "neomeg/dnn/tensor.h"
