// Tensor's most-read attributes (shape, ndim, size, dtype, _dtype_name) as C getters: functional
// code reads them on every call, and a pybind11 property costs a dispatch each time.
#include <array>

#include "dtype_convert.h"
#include "fast_tensor.h"

namespace neomeg::python::fast {

namespace {

// The getters are installed on Tensor, so self is a Tensor; one without its C++ value
// (is_initialized) has nothing to report: ValueError.
const TensorWrapper* self_of(PyObject* self) {
    if (!is_initialized(self)) [[unlikely]] {
        PyErr_SetString(PyExc_ValueError, kUninitializedMessage);
        return nullptr;
    }
    return tensor_of(self);
}

PyObject* get_shape(PyObject* self, void*) noexcept {
    const TensorWrapper* w = self_of(self);
    if (!w)
        return nullptr;
    const dnn::TensorShape& s = w->value.shape();
    PyObject* t = PyTuple_New(static_cast<Py_ssize_t>(s.ndim));
    if (!t)
        return nullptr;
    for (size_t i = 0; i < s.ndim; ++i)
        PyTuple_SET_ITEM(t, i, PyLong_FromSize_t(s[i]));
    return t;
}

PyObject* get_ndim(PyObject* self, void*) noexcept {
    const TensorWrapper* w = self_of(self);
    return w ? PyLong_FromSize_t(w->value.shape().ndim) : nullptr;
}

PyObject* get_size(PyObject* self, void*) noexcept {
    const TensorWrapper* w = self_of(self);
    return w ? PyLong_FromSize_t(w->value.shape().total_nr_elems()) : nullptr;
}

// numpy dtype objects by DTypeEnum, made once.
PyObject* numpy_dtype(dnn::DType dt) {
    if (dt.is_quantized())  // parameterised: made each time
        return dtype_to_numpy(dt).release().ptr();
    static std::array<PyObject*, 16> cache{};
    PyObject*& slot = cache.at(static_cast<size_t>(dt.enumv()));
    if (!slot)
        slot = dtype_to_numpy(dt).release().ptr();
    Py_INCREF(slot);
    return slot;
}

PyObject* get_dtype(PyObject* self, void*) noexcept {
    const TensorWrapper* w = self_of(self);
    if (!w)
        return nullptr;
    try {
        return numpy_dtype(w->value.dtype());
    } catch (py::error_already_set& e) {
        e.restore();
        return nullptr;
    }
}

PyObject* get_dtype_name(PyObject* self, void*) noexcept {
    static std::array<PyObject*, 16> cache{};
    const TensorWrapper* w = self_of(self);
    if (!w)
        return nullptr;
    dnn::DType dt = w->value.dtype();
    PyObject*& slot = cache.at(static_cast<size_t>(dt.enumv()));
    if (!slot)
        slot = PyUnicode_InternFromString(dt.name());
    Py_XINCREF(slot);
    return slot;
}

PyGetSetDef g_getters[] = {
        {"shape", get_shape, nullptr, "The tensor's shape, a tuple of ints.", nullptr},
        {"ndim", get_ndim, nullptr, "The number of dimensions.", nullptr},
        {"size", get_size, nullptr, "The number of elements.", nullptr},
        {"dtype", get_dtype, nullptr, "The element type, a numpy dtype.", nullptr},
        {"_dtype_name", get_dtype_name, nullptr, "The element type's name (\"float32\").", nullptr},
        {nullptr, nullptr, nullptr, nullptr, nullptr}};

}  // namespace

void install_getters(PyTypeObject* type) {
    for (PyGetSetDef* def = g_getters; def->name; ++def) {
        auto descr = py::reinterpret_steal<py::object>(PyDescr_NewGetSet(type, def));
        if (!descr ||
            PyObject_SetAttrString(reinterpret_cast<PyObject*>(type), def->name, descr.ptr()) < 0)
            throw py::error_already_set();
    }
}

}  // namespace neomeg::python::fast
