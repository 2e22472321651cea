// The eager hot path's view of Python tensors: type checks, unwrapping and wrapping through the
// CPython API instead of pybind11's generic casters (each of which costs a type-registry lookup
// per argument). Used by fast_apply.cpp (apply, the Tensor operators) and the Tensor getters.
#pragma once

#include <Python.h>

#include <vector>

#include "neomeg/imperative/op_def.h"
#include "tensor.h"

namespace neomeg::python::fast {

// The extension's Tensor type, set once by init_tensor().
extern PyTypeObject* g_tensor_type;

inline bool is_tensor(PyObject* obj) {
    return Py_TYPE(obj) == g_tensor_type || PyType_IsSubtype(Py_TYPE(obj), g_tensor_type);
}

// The TensorWrapper inside a Python Tensor (or subclass such as Parameter); nullptr for any
// other object. Tensor has a single C++ base, so pybind11 keeps its value pointer in the
// instance's simple layout; any other layout goes through pybind11's caster. A Tensor whose
// value was never constructed (Tensor.__new__ without __init__) throws ValueError.
inline TensorWrapper* tensor_of(PyObject* obj) {
    if (!is_tensor(obj))
        return nullptr;
    auto* inst = reinterpret_cast<py::detail::instance*>(obj);
    if (inst->simple_layout) [[likely]] {
        if (!inst->simple_holder_constructed) [[unlikely]]
            throw_uninitialized();
        return static_cast<TensorWrapper*>(inst->simple_value_holder[0]);
    }
    return &py::handle(obj).cast<TensorWrapper&>();
}

// A new Python Tensor owning `t` (a new reference): what py::cast(TensorWrapper, move) makes,
// without its per-call type lookup (a hash of the type's name) and its search of the registered
// instances for the address of a wrapper that is new anyway.
inline PyObject* wrap(imperative::Tensor&& t) {
    static const py::detail::type_info* const tinfo =
            py::detail::get_type_info(typeid(TensorWrapper), /*throw_if_missing=*/true);
    auto inst = py::reinterpret_steal<py::object>(py::detail::make_new_instance(tinfo->type));
    auto* wrapper = reinterpret_cast<py::detail::instance*>(inst.ptr());
    wrapper->owned = false;
    void*& value = py::detail::values_and_holders(wrapper).begin()->value_ptr();
    value = new TensorWrapper{std::move(t)};
    wrapper->owned = true;
    tinfo->init_instance(wrapper, nullptr);
    return inst.release().ptr();
}

// A new tuple of new Python Tensors owning `outs` (an op's results); nullptr with the Python
// error set if the tuple cannot be made.
inline PyObject* wrap_all(std::vector<imperative::Tensor>& outs) {
    PyObject* result = PyTuple_New(static_cast<Py_ssize_t>(outs.size()));
    if (!result)
        return nullptr;
    for (size_t i = 0; i < outs.size(); ++i)
        PyTuple_SET_ITEM(result, static_cast<Py_ssize_t>(i), wrap(std::move(outs[i])));
    return result;
}

// The OpDef inside a Python op object; nullptr for any other object. pybind11's caster for
// OpDef with the type's record looked up once: make_caster's constructor looks it up by the
// type's name, a hash of the string, on every call.
inline const imperative::OpDef* op_of(PyObject* obj) {
    static const py::detail::type_info* const tinfo =
            py::detail::get_type_info(typeid(imperative::OpDef), /*throw_if_missing=*/true);
    py::detail::type_caster_generic caster(tinfo);
    if (!caster.load(obj, false) || !caster.value)
        return nullptr;
    return static_cast<const imperative::OpDef*>(caster.value);
}

// Sets the Python error for the C++ exception being handled (pybind11's translators: dnn errors
// become ValueError/TypeError/IndexError as registered in module.cpp); returns nullptr.
PyObject* translate_current_exception();

// shape, ndim, size, dtype, _dtype_name, device, _device_name and _channels_last as C getters,
// _assign as a C method (tensor_getters.cpp).
void install_getters(PyTypeObject* type);
// The type (called with the canonical name) whose objects Tensor.device returns; unset (or
// None), it returns the name.
void set_device_type(py::handle type);
// apply, elemwise and the operator-slot installer on the extension module (fast_apply.cpp).
void init_fast_apply(py::module_& m);
// apply_generator (fast_generator.cpp).
void init_fast_generator(py::module_& m);

}  // namespace neomeg::python::fast
