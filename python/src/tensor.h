#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "neomeg/imperative/tensor.h"

namespace neomeg::python {

namespace py = pybind11;

// What a Python megengine.Tensor holds. Autograd state joins the eager tensor here.
struct TensorWrapper {
    imperative::Tensor value;

    // MegEngine's constructor: data (array-like or Tensor), dtype, device.
    static TensorWrapper from_py(const py::object& data, const py::object& dtype,
                                 const py::object& device);
    py::array numpy() const;
    py::tuple shape() const;
};

void init_tensor(py::module_& m);

}  // namespace neomeg::python
