// Tensor's most-read attributes (shape, ndim, size, dtype, _dtype_name, device, _channels_last)
// as C getters, and _assign as a C method: functional code uses them on every call, and a
// pybind11 property or method costs a dispatch each time.
#include <array>
#include <bit>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dtype_convert.h"
#include "fast_tensor.h"
#include "neomeg/dnn/channels_last.h"
#include "trace.h"

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

// A quantized dtype's numpy object, made once per (kind, scale, zero point) and handed out again:
// building one (a metadata dict, np.dtype) costs 4 us, and model code reads q.dtype for its scale
// on every call. numpy dtypes are immutable, but the "mgb_dtype" dict inside their metadata is
// not: an entry is reused only while that dict still holds what was put in it.
class QuantizedDtypeCache {
public:
    PyObject* get(dnn::DType dt) {
        Key key{dt.enumv(), std::bit_cast<uint32_t>(dt.scale()), dt.zero_point()};
        auto it = m_entries.find(key);
        if (it != m_entries.end() && it->second.intact()) {
            Py_INCREF(it->second.dtype);
            return it->second.dtype;
        }
        py::dtype made = dtype_to_numpy(dt);
        if (it != m_entries.end()) {
            it->second.release();
            m_entries.erase(it);
        }
        if (m_entries.size() >= kMaxEntries)  // a program sweeping scales: start over
            clear();
        Entry e;
        e.dtype = made.inc_ref().ptr();
        py::dict info = made.attr("metadata")["mgb_dtype"];
        e.info = info.inc_ref().ptr();
        e.size = PyDict_Size(e.info);
        e.name = PyDict_GetItem(e.info, keys()[0]);
        e.scale = PyDict_GetItem(e.info, keys()[1]);
        e.zero_point = PyDict_GetItem(e.info, keys()[2]);
        Py_XINCREF(e.name);
        Py_XINCREF(e.scale);
        Py_XINCREF(e.zero_point);
        m_entries.emplace(key, e);
        return made.release().ptr();
    }

    static constexpr size_t kMaxEntries = 1024;

private:
    static const std::array<PyObject*, 3>& keys() {
        static const std::array<PyObject*, 3> k{PyUnicode_InternFromString("name"),
                                                PyUnicode_InternFromString("scale"),
                                                PyUnicode_InternFromString("zero_point")};
        return k;
    }
    struct Key {
        dnn::DTypeEnum kind;
        uint32_t scale_bits;
        int32_t zero_point;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        size_t operator()(const Key& k) const {
            return (static_cast<size_t>(k.scale_bits) << 16) ^ (static_cast<size_t>(k.kind) << 8) ^
                   static_cast<size_t>(k.zero_point);
        }
    };
    // The dtype, its "mgb_dtype" dict and the values that dict held when made, all owned: a
    // value is compared by identity (three dict lookups), and owning it keeps its address from
    // going to another object.
    struct Entry {
        PyObject* dtype = nullptr;
        PyObject* info = nullptr;
        Py_ssize_t size = 0;
        // the values under info's keys "name", "scale" and "zero_point" (nullptr: absent)
        PyObject* name = nullptr;
        PyObject* scale = nullptr;
        PyObject* zero_point = nullptr;
        bool intact() const {
            return PyDict_Size(info) == size && PyDict_GetItem(info, keys()[0]) == name &&
                   PyDict_GetItem(info, keys()[1]) == scale &&
                   PyDict_GetItem(info, keys()[2]) == zero_point;
        }
        void release() {
            Py_DECREF(dtype);
            Py_DECREF(info);
            Py_XDECREF(name);
            Py_XDECREF(scale);
            Py_XDECREF(zero_point);
        }
    };
    void clear() {
        for (auto& kv : m_entries)
            kv.second.release();
        m_entries.clear();
    }
    std::unordered_map<Key, Entry, KeyHash> m_entries;
};

// numpy dtype objects by DTypeEnum, made once; quantized ones per parameters.
PyObject* numpy_dtype(dnn::DType dt) {
    if (dt.is_quantized()) {
        // Kept for the process: its objects must outlive the interpreter's teardown order.
        static auto* quantized = new QuantizedDtypeCache;
        return quantized->get(dt);
    }
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

// Python objects per comp node, made once: a program uses a handful of comp nodes.
class PerCompNode {
public:
    template <class Make>
    PyObject* get(CompNode cn, Make&& make) {
        for (auto& [node, obj] : m_objects)
            if (node == cn) {
                Py_INCREF(obj);
                return obj;
            }
        PyObject* obj = make(cn);
        if (!obj)
            return nullptr;
        Py_INCREF(obj);
        m_objects.emplace_back(cn, obj);
        return obj;
    }
    void clear() {
        for (auto& kv : m_objects)
            Py_DECREF(kv.second);
        m_objects.clear();
    }

private:
    std::vector<std::pair<CompNode, PyObject*>> m_objects;
};

PerCompNode& device_names() {
    static auto* names = new PerCompNode;
    return *names;
}
PerCompNode& devices() {
    static auto* objs = new PerCompNode;
    return *objs;
}
PyObject* g_device_type = nullptr;  // what Tensor.device makes of the name (CompNode)

PyObject* get_device_name(PyObject* self, void*) noexcept {
    const TensorWrapper* w = self_of(self);
    if (!w)
        return nullptr;
    return device_names().get(w->value.comp_node(), [](CompNode cn) {
        return PyUnicode_InternFromString(cn.to_string().c_str());
    });
}

PyObject* get_device(PyObject* self, void*) noexcept {
    PyObject* name = get_device_name(self, nullptr);
    if (!name || !g_device_type)
        return name;
    auto make = [name](CompNode) { return PyObject_CallOneArg(g_device_type, name); };
    PyObject* obj = devices().get(tensor_of(self)->value.comp_node(), make);
    Py_DECREF(name);
    return obj;
}

// Tensor.format's fact: the layout is channels-last (dnn/channels_last.h).
PyObject* get_channels_last(PyObject* self, void*) noexcept {
    const TensorWrapper* w = self_of(self);
    if (!w)
        return nullptr;
    return PyBool_FromLong(dnn::is_channels_last(w->value.layout()));
}

// x[idx] = v: the Python object now stands for the updated value, autograd identity included,
// so the assignment is differentiable like any op.
PyObject* assign(PyObject* self, PyObject* src) noexcept {
    TensorWrapper* w = const_cast<TensorWrapper*>(self_of(self));
    if (!w)
        return nullptr;
    try {
        const TensorWrapper* from = tensor_of(src);
        if (!from) {
            PyErr_Format(PyExc_TypeError, "_assign: expected a Tensor, got %s",
                         Py_TYPE(src)->tp_name);
            return nullptr;
        }
        trace::note_replacing_if_tracing(self);  // before its value changes
        w->value = from->value;
    } catch (...) {
        return translate_current_exception();
    }
    Py_RETURN_NONE;
}

PyMethodDef g_methods[] = {
        {"_assign", assign, METH_O,
         "Makes this tensor stand for src's value (x[idx] = v's result), autograd identity "
         "included."},
        {nullptr, nullptr, 0, nullptr}};

PyGetSetDef g_getters[] = {
        {"shape", get_shape, nullptr, "The tensor's shape, a tuple of ints.", nullptr},
        {"ndim", get_ndim, nullptr, "The number of dimensions.", nullptr},
        {"size", get_size, nullptr, "The number of elements.", nullptr},
        {"dtype", get_dtype, nullptr, "The element type, a numpy dtype.", nullptr},
        {"device", get_device, nullptr,
         "The comp node the tensor lives on: a megengine.core.comp_node.CompNode, which is its "
         "canonical name (\"cpu0:0\") with MegEngine's logical_name, physical_name and "
         "physical_locator, equal to any name of the same device.",
         nullptr},
        {"_channels_last", get_channels_last, nullptr,
         "Whether the layout is channels-last (Tensor.format's fact).", nullptr},
        {"_device_name", get_device_name, nullptr,
         "The canonical name of the tensor's comp node (\"cpu0\"), a str.", nullptr},
        {"_dtype_name", get_dtype_name, nullptr, "The element type's name (\"float32\").", nullptr},
        {nullptr, nullptr, nullptr, nullptr, nullptr}};

}  // namespace

void set_device_type(py::handle type) {
    PyObject* next = type.is_none() ? nullptr : type.ptr();
    Py_XINCREF(next);
    Py_XDECREF(g_device_type);
    g_device_type = next;
    devices().clear();
}

void install_getters(PyTypeObject* type) {
    auto install = [type](const char* name, PyObject* made) {
        auto descr = py::reinterpret_steal<py::object>(made);
        if (!descr ||
            PyObject_SetAttrString(reinterpret_cast<PyObject*>(type), name, descr.ptr()) < 0)
            throw py::error_already_set();
    };
    for (PyGetSetDef* def = g_getters; def->name; ++def)
        install(def->name, PyDescr_NewGetSet(type, def));
    for (PyMethodDef* def = g_methods; def->ml_name; ++def)
        install(def->ml_name, PyDescr_NewMethod(type, def));
}

}  // namespace neomeg::python::fast
