#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <string>

#include "neomeg/imperative/tensor.h"
#include "neomeg/imperative/trace.h"

namespace neomeg::python {

namespace py = pybind11;

// What a Python megengine.Tensor holds. Autograd state joins the eager tensor here.
struct TensorWrapper {
    imperative::Tensor value;
    // Made while a trace recorded: a trace binds its graph inputs only to tensors from before
    // the recording (or ones it updated), and makes constants of the others (trace.cpp).
    bool created_in_trace = imperative::TraceRecorder::any_active();

    // MegEngine's constructor: data (array-like or Tensor), dtype, device.
    static TensorWrapper from_py(const py::object& data, const py::object& dtype,
                                 const py::object& device);
    // The values; while a trace records, a read that the caller does not make the graph follow
    // ends the recording (see numpy() in tensor.cpp). host_array() is the read for library code
    // whose graph does not depend on the values (it only checks them, or makes the graph follow
    // them itself, as cond_take's count becomes a dynamic shape).
    py::array numpy() const;
    py::array host_array() const;
    py::tuple shape() const;
    // Ends a recording that cannot follow what is being done with this value (`why`), unless
    // it is the same on every call: a tensor made from host data during the call that no
    // recorded op has produced or read.
    void fail_recording(const std::string& why) const;
};

void init_tensor(py::module_& m);

// `self op= src`: self takes src's value (and, when src is being differentiated, its autograd
// identity); the in-place operators' slots and Tensor._inplace_update.
void inplace_update(py::handle self, const TensorWrapper& src);

// Whether a Python Tensor's C++ value exists. Tensor.__new__ without __init__ (as unpickling
// does with a class it is handed) leaves none; pybind11 would then give a method a pointer to
// freshly allocated, unconstructed memory.
inline bool is_initialized(PyObject* tensor) {
    auto* inst = reinterpret_cast<py::detail::instance*>(tensor);
    if (inst->simple_layout)
        return inst->simple_holder_constructed;
    return inst->get_value_and_holder().holder_constructed();
}

// The error for a Tensor without its C++ value (is_initialized false).
inline constexpr const char* kUninitializedMessage =
        "this Tensor has no value: it was created by Tensor.__new__ without __init__ (for "
        "example unpickled from a state that was never applied); build tensors with Tensor(...) "
        "and load checkpoints with megengine.load";

// Throws py::value_error with kUninitializedMessage.
[[noreturn]] void throw_uninitialized();

}  // namespace neomeg::python

// Every pybind11 conversion of a Python object to TensorWrapper (method self, arguments,
// handle.cast) checks that the value was constructed, so an uninitialised Tensor raises
// instead of reaching C++ with garbage.
namespace pybind11::detail {
template <>
class type_caster<neomeg::python::TensorWrapper>
    : public type_caster_base<neomeg::python::TensorWrapper> {
public:
    bool load(handle src, bool convert) {
        // Checked before the base caster, which would allocate the missing value.
        if (src && typeinfo && PyObject_TypeCheck(src.ptr(), typeinfo->type) &&
            !neomeg::python::is_initialized(src.ptr()))
            neomeg::python::throw_uninitialized();
        return type_caster_base::load(src, convert);
    }
};
}  // namespace pybind11::detail
