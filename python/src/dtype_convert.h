// numpy dtype <-> kernel-library DType. bfloat16 is ml_dtypes' NumPy bfloat16 (MegEngine's own
// pybfloat16 has the same bits and rounding).
#pragma once

#include <pybind11/numpy.h>

#include "neomeg/dnn/dtype.h"

namespace neomeg::python {

namespace py = pybind11;

// The DType a numpy array of this dtype becomes, with MegEngine's narrowing (float64 -> float32,
// int64/uint32/uint64 -> int32). Throws TypeError (py::type_error) for dtypes with no equivalent.
dnn::DType dtype_from_numpy(const py::dtype& dt);
// The numpy dtype that holds a DType's values.
py::dtype dtype_to_numpy(dnn::DType dt);
// ml_dtypes.bfloat16 as a numpy dtype.
py::dtype bfloat16_numpy();
// Parses a numpy dtype, a type object (np.float32) or a name ("float32", "bfloat16").
dnn::DType dtype_from_py(const py::handle& obj);

}  // namespace neomeg::python
