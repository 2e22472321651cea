// apply_generator(op, shapes, device): runs a generator op (Fill, Eye, Arange, the RNGs) with
// the given output shapes on a comp node named by `device`; a tuple of Tensors. F.zeros((4, 4))
// is one such call, so its argument handling is the call's cost: pybind11's casters (a vector of
// vectors, a std::string, the op's registry lookup) and CompNode::load parsing the name and
// taking the registry's lock cost 0.4 us of a 1.4 us Fill. Positional lists or tuples of Python
// ints and a str take the CPython path here; anything else goes to the pybind11 function, whose
// conversions and errors are the call's.
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "fast_tensor.h"
#include "neomeg/imperative/op_def.h"

namespace neomeg::python::fast {
namespace {

py::tuple apply_generator_general(const imperative::OpDef& op,
                                  const std::vector<std::vector<size_t>>& shapes,
                                  const std::string& device) {
    std::vector<dnn::TensorShape> s;
    for (auto& dims : shapes)
        s.emplace_back(dims);
    auto outs = imperative::run_generator(op, s, CompNode::load(device));
    py::tuple result(outs.size());
    for (size_t i = 0; i < outs.size(); ++i)
        result[i] = py::reinterpret_steal<py::object>(wrap(std::move(outs[i])));
    return result;
}

PyObject* g_general = nullptr;  // apply_generator_general as a Python callable

// `obj` as the dims of a TensorShape: a list or tuple of at most MAX_NDIM non-negative Python
// ints; false for anything else (left to the general path).
bool read_dims(PyObject* obj, dnn::TensorShape& out) {
    if (!PyList_CheckExact(obj) && !PyTuple_CheckExact(obj))
        return false;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    if (n > static_cast<Py_ssize_t>(dnn::TensorShape::MAX_NDIM))
        return false;
    PyObject** items = PySequence_Fast_ITEMS(obj);
    out.ndim = static_cast<size_t>(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
        if (!PyLong_CheckExact(items[i]))
            return false;
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(items[i], &overflow);
        if (overflow || v < 0)
            return false;
        out.shape[i] = static_cast<size_t>(v);
    }
    return true;
}

// The comp node a device name loads, remembered for the last name this thread used (a program
// fills on one or two devices). The name is compared as text: the Python strings are new objects.
CompNode comp_node_named(const char* name, Py_ssize_t size) {
    thread_local std::string last_name;
    thread_local CompNode last_node;
    if (!last_node.valid() || static_cast<size_t>(size) != last_name.size() ||
        std::memcmp(name, last_name.data(), last_name.size()) != 0) {
        CompNode cn = CompNode::load(std::string_view(name, static_cast<size_t>(size)));
        last_name.assign(name, static_cast<size_t>(size));
        last_node = cn;
    }
    return last_node;
}

PyObject* general(PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    return PyObject_Vectorcall(g_general, args, nargsf, kwnames);
}

constexpr size_t kInlineShapes = 4;

PyObject* py_apply_generator(PyObject*, PyObject* const* args, size_t nargsf,
                             PyObject* kwnames) noexcept {
    try {
        if (kwnames || PyVectorcall_NARGS(nargsf) != 3 || !PyList_CheckExact(args[1]) ||
            !PyUnicode_CheckExact(args[2]))
            return general(args, nargsf, kwnames);
        const imperative::OpDef* op = op_of(args[0]);
        if (!op)
            return general(args, nargsf, kwnames);
        const Py_ssize_t n = PyList_GET_SIZE(args[1]);
        if (n > static_cast<Py_ssize_t>(kInlineShapes))
            return general(args, nargsf, kwnames);
        std::array<dnn::TensorShape, kInlineShapes> shapes;
        for (Py_ssize_t i = 0; i < n; ++i)
            if (!read_dims(PyList_GET_ITEM(args[1], i), shapes[i]))
                return general(args, nargsf, kwnames);
        Py_ssize_t size = 0;
        const char* name = PyUnicode_AsUTF8AndSize(args[2], &size);
        if (!name)
            return nullptr;
        auto outs = imperative::run_generator(*op, {shapes.data(), static_cast<size_t>(n)},
                                              comp_node_named(name, size));
        return wrap_all(outs);
    } catch (...) {
        return translate_current_exception();
    }
}

PyMethodDef g_method = {
        "apply_generator",
        reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_apply_generator)),
        METH_FASTCALL | METH_KEYWORDS,
        "apply_generator(op, shapes, device): runs a generator op (Fill, Eye, RNG) with the given "
        "output shapes (a list of shapes) on the named device; a tuple of Tensors."};

}  // namespace

void init_fast_generator(py::module_& m) {
    // Named as the module's function: its conversion errors read "apply_generator(): ...".
    py::cpp_function fn(&apply_generator_general, py::name("apply_generator"), py::arg("op"),
                        py::arg("shapes"), py::arg("device"));
    g_general = fn.release().ptr();  // kept for the process, as the module's functions are
    PyObject* fast = PyCFunction_NewEx(&g_method, nullptr, m.attr("__name__").ptr());
    if (!fast)
        throw py::error_already_set();
    m.add_object("apply_generator", py::reinterpret_steal<py::object>(fast));
}

}  // namespace neomeg::python::fast
