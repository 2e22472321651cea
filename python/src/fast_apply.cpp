// The eager hot path from Python: apply(), elemwise() and Tensor's arithmetic operators, written
// against the CPython API (METH_FASTCALL functions and type slots). pybind11's generic dispatch
// costs about a microsecond a call (argument casters, overload resolution, a registry lookup per
// tensor), which is most of what a small op costs; here a call unwraps its tensors by type check
// and pointer and goes straight to imperative::apply (imperative/src/apply.cpp).
//
//   apply(op, *tensors) -> tuple      any OpDef, no dtype promotion
//   apply_joined(op, tensors[, same_shape])  op's first output on a list of Tensors of one
//                                     dtype (and shape), or None for the caller's general path
//                                     (F.concat, F.stack)
//   elemwise(op, *args) -> Tensor     an Elemwise op; tensors of one dtype (and float/int Python
//                                     scalars that keep it) run directly, anything else goes
//                                     through megengine's promotion (core/tensor/array_method.py)
//   Tensor.__add__ ... as type slots  elemwise() of the operator's mode
// An input of the symbolic type megengine.utils.network_node registers (its VarNode, a var of an
// edited model) sends the call to that module's Python function instead, which adds an op node
// to the model (MegEngine's functional calls on a Network's vars); tested only after a call
// fails its tensor checks, so tensors never pay for it.
#include <array>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>

#include <pybind11/stl.h>

#include "fast_tensor.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "scalar_operands.h"
#include "tensor.h"
#include "trace.h"

namespace neomeg::python::fast {

PyObject* translate_current_exception() {
    try {
        py::detail::try_translate_exceptions();
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
    }
    return nullptr;
}

PyTypeObject* g_tensor_type = nullptr;

namespace {

using imperative::Tensor;
using Mode = dnn::param::Elemwise::Mode;

// megengine's _promote(args) -> list of Tensors of one dtype and device; set at import time.
PyObject* g_promote = nullptr;

// While megengine.amp.autocast is on: the function that casts the operands of the Elemwise modes
// MegEngine computes in the high-precision dtype (core/tensor/amp.py), and those modes. The
// check costs one pointer test per elemwise call when autocast is off.
PyObject* g_amp_cast = nullptr;
std::array<bool, 128> g_amp_modes{};

// megengine.utils.network_node's VarNode class and its fn(op, *args) (_set_symbolic_apply).
PyObject* g_symbolic_type = nullptr;
PyObject* g_symbolic_fn = nullptr;

// fn(op, *args) when an arg is a symbolic var (its tuple of outputs, or with `single` the first
// of them, as elemwise returns); nullptr without an error set otherwise. Elemwise calls
// (`single`) pass elemwise=True: their operands are promoted to one dtype first, as
// elemwise_promoted does for tensors, while apply's are taken as they are.
PyObject* symbolic_apply(const imperative::OpDef& op, PyObject* const* args, size_t n,
                         bool single = false) {
    if (!g_symbolic_fn)
        return nullptr;
    bool any = false;
    for (size_t i = 0; i < n && !any; ++i) {
        int r = PyObject_IsInstance(args[i], g_symbolic_type);
        if (r < 0)
            return nullptr;
        any = r == 1;
    }
    if (!any)
        return nullptr;
    py::object op_obj = py::cast(std::shared_ptr<imperative::OpDef>(op.clone()));
    py::tuple call(n + 1);
    call[0] = op_obj;
    for (size_t i = 0; i < n; ++i)
        call[i + 1] = py::reinterpret_borrow<py::object>(args[i]);
    py::dict kwargs;
    if (single)
        kwargs["elemwise"] = true;
    PyObject* outs = PyObject_Call(g_symbolic_fn, call.ptr(), single ? kwargs.ptr() : nullptr);
    if (!outs || !single)
        return outs;
    PyObject* first = PySequence_GetItem(outs, 0);
    Py_DECREF(outs);
    return first;
}

bool amp_applies(const imperative::OpDef& op) {
    if (!g_amp_cast)
        return false;
    auto mode = static_cast<const imperative::ops::Elemwise&>(op).param().mode;
    return g_amp_modes.at(static_cast<size_t>(mode));
}

// Up to this many inputs live on the stack; Tensors are not trivially constructible, so the
// slots are constructed only for the inputs present.
constexpr size_t kInlineInputs = 8;

class Inputs {
public:
    explicit Inputs(size_t n) : m_size(n) {
        m_data = n <= kInlineInputs ? reinterpret_cast<Tensor*>(m_inline)
                                    : static_cast<Tensor*>(::operator new(n * sizeof(Tensor)));
    }
    ~Inputs() {
        for (size_t i = 0; i < m_built; ++i)
            m_data[i].~Tensor();
        if (m_size > kInlineInputs)
            ::operator delete(m_data);
    }
    Inputs(const Inputs&) = delete;
    Inputs& operator=(const Inputs&) = delete;

    void push(const Tensor& t) { new (m_data + m_built++) Tensor(t); }
    std::span<const Tensor> span() const { return {m_data, m_built}; }

private:
    size_t m_size, m_built = 0;
    alignas(Tensor) std::byte m_inline[kInlineInputs * sizeof(Tensor)];
    Tensor* m_data;
};

PyObject* set_type_error_for_input(const imperative::OpDef& op, size_t i, PyObject* obj) {
    PyErr_Format(PyExc_TypeError, "apply(%s): input %zu is a %s, not a Tensor", op.name(), i,
                 Py_TYPE(obj)->tp_name);
    return nullptr;
}

PyObject* py_apply(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept {
    try {
        if (nargs < 1) {
            PyErr_SetString(PyExc_TypeError, "apply(op, *tensors): missing the op");
            return nullptr;
        }
        const imperative::OpDef* op = op_of(args[0]);
        if (!op) {
            PyErr_Format(PyExc_TypeError, "apply(op, *tensors): op is a %s, not an OpDef",
                         Py_TYPE(args[0])->tp_name);
            return nullptr;
        }
        Inputs inputs(nargs - 1);
        for (Py_ssize_t i = 1; i < nargs; ++i) {
            TensorWrapper* t = tensor_of(args[i]);
            if (!t) {
                if (PyObject* r = symbolic_apply(*op, args + 1, nargs - 1))
                    return r;
                if (PyErr_Occurred())
                    return nullptr;
                return set_type_error_for_input(*op, i - 1, args[i]);
            }
            trace::note_if_tracing(args[i]);
            inputs.push(t->value);
        }
        auto outs = imperative::apply(*op, inputs.span());
        return wrap_all(outs);
    } catch (...) {
        return translate_current_exception();
    }
}

// F.concat's and F.stack's common case in one call: the Python checks that two or more Tensors
// share an unquantized dtype (and for stack a shape) and the first has dims (what _promote
// returns unchanged) cost 0.5 us.
PyObject* py_apply_joined(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept {
    try {
        const imperative::OpDef* op = nargs == 2 || nargs == 3 ? op_of(args[0]) : nullptr;
        if (!op) {
            PyErr_SetString(PyExc_TypeError,
                            "apply_joined(op, tensors, same_shape=False): needs an op and a list");
            return nullptr;
        }
        int same_shape = nargs == 3 ? PyObject_IsTrue(args[2]) : 0;
        if (same_shape < 0)
            return nullptr;
        PyObject* seq = args[1];
        if (!PyList_CheckExact(seq) && !PyTuple_CheckExact(seq))
            Py_RETURN_NONE;
        const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        const auto* rec = imperative::TraceRecorder::current();
        if (n < 2 || (rec && !rec->excluded()))
            Py_RETURN_NONE;
        PyObject** items = PySequence_Fast_ITEMS(seq);
        Inputs inputs(static_cast<size_t>(n));
        for (Py_ssize_t i = 0; i < n; ++i) {
            TensorWrapper* t = tensor_of(items[i]);
            if (!t)
                Py_RETURN_NONE;
            const Tensor& v = t->value;
            if (i == 0 ? v.dtype().is_quantized() || v.shape().ndim == 0
                       : v.dtype() != inputs.span()[0].dtype() ||
                                 (same_shape && !v.shape().eq_shape(inputs.span()[0].shape())))
                Py_RETURN_NONE;
            trace::note_if_tracing(items[i]);
            inputs.push(v);
        }
        auto outs = imperative::apply(*op, inputs.span());
        return wrap(std::move(outs[0]));
    } catch (...) {
        return translate_current_exception();
    }
}

// A Python float or int as a 0-d tensor of `dt`, when megengine's promotion would give the
// scalar that dtype (a float or int next to float32, an int next to int32; scalar_dtype_for
// in core/tensor/dtype.py) and the value is exact in it; an invalid Tensor otherwise.
Tensor scalar_tensor(PyObject* obj, dnn::DType dt, CompNode cn) {
    if (dt == dnn::dtype::Float32 && (PyFloat_CheckExact(obj) || PyLong_CheckExact(obj))) {
        double v = PyFloat_AsDouble(obj);
        if (v == -1.0 && PyErr_Occurred()) {  // an int too large for a double
            PyErr_Clear();
            return {};
        }
        float f = static_cast<float>(v);
        uint32_t bits;
        std::memcpy(&bits, &f, sizeof bits);
        return scalar_operand(bits, dt, cn);
    }
    if (dt == dnn::dtype::Int32 && PyLong_CheckExact(obj)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (overflow || v < INT32_MIN || v > INT32_MAX)
            return {};
        return scalar_operand(static_cast<uint32_t>(static_cast<int32_t>(v)), dt, cn);
    }
    return {};
}

// MegEngine runs the float-only modes (EXP, LOG, SIN, POW, ...) of integer tensors in float32,
// as TRUE_DIV: `x ** 2` and `F.exp(x)` of an int32 x are float32 tensors.
bool computes_ints_as_float32(const imperative::OpDef& op, dnn::DType dt) {
    if (!dt.is_int())
        return false;
    auto mode = static_cast<const imperative::ops::Elemwise&>(op).param().mode;
    return std::string_view(dnn::param::Elemwise::dtypes(mode)) == "float";
}

PyObject* apply_in_float32(const imperative::OpDef& op, std::span<const Tensor> inputs) {
    dnn::param::TypeCvt p;
    p.dtype = dnn::dtype::Float32.enumv();
    const imperative::ops::TypeCvt cvt(p);
    Inputs cast(inputs.size());
    for (const Tensor& t : inputs)
        cast.push(imperative::apply(cvt, {&t, 1})[0]);
    auto outs = imperative::apply(op, cast.span());
    return wrap(std::move(outs[0]));
}

// Runs Elemwise `op` on args when they are tensors of one dtype, possibly with scalars that
// keep it; returns nullptr without an error set when promotion is needed.
PyObject* elemwise_direct(const imperative::OpDef& op, PyObject* const* args, size_t n) {
    const Tensor* first = nullptr;
    for (size_t i = 0; i < n && !first; ++i)
        if (TensorWrapper* t = tensor_of(args[i]))
            first = &t->value;
    if (!first)
        return nullptr;
    Inputs inputs(n);
    for (size_t i = 0; i < n; ++i) {
        if (TensorWrapper* t = tensor_of(args[i])) {
            if (t->value.dtype() != first->dtype())
                return nullptr;
            trace::note_if_tracing(args[i]);
            inputs.push(t->value);
            continue;
        }
        Tensor s = scalar_tensor(args[i], first->dtype(), first->comp_node());
        if (!s.valid())
            return nullptr;
        inputs.push(s);
    }
    if (computes_ints_as_float32(op, first->dtype()))
        return apply_in_float32(op, inputs.span());
    auto outs = imperative::apply(op, inputs.span());
    return wrap(std::move(outs[0]));
}

PyObject* elemwise_promoted(PyObject* fn, const imperative::OpDef& op, PyObject* const* args,
                            size_t n);

PyObject* elemwise_impl(const imperative::OpDef& op, PyObject* const* args, size_t n) {
    if (amp_applies(op)) {
        if (PyObject* r = symbolic_apply(op, args, n, true))
            return r;
        if (PyErr_Occurred())
            return nullptr;
        return elemwise_promoted(g_amp_cast, op, args, n);
    }
    if (PyObject* out = elemwise_direct(op, args, n))
        return out;
    if (PyErr_Occurred())
        return nullptr;
    if (PyObject* r = symbolic_apply(op, args, n, true))
        return r;
    if (PyErr_Occurred())
        return nullptr;
    // Promotion: megengine's rules, in Python, then the same op on the converted tensors.
    if (!g_promote) {
        PyErr_SetString(PyExc_RuntimeError, "elemwise: megengine's promotion is not installed");
        return nullptr;
    }
    return elemwise_promoted(g_promote, op, args, n);
}

// The op on the tensors `fn(args)` returns (a promotion or autocast's cast to one dtype).
PyObject* elemwise_promoted(PyObject* fn, const imperative::OpDef& op, PyObject* const* args,
                            size_t n) {
    PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(n));
    if (!tuple)
        return nullptr;
    for (size_t i = 0; i < n; ++i) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tuple, i, args[i]);
    }
    PyObject* promoted = PyObject_CallOneArg(fn, tuple);
    Py_DECREF(tuple);
    if (!promoted)
        return nullptr;
    PyObject* seq = PySequence_Fast(promoted, "promotion must return a sequence");
    Py_DECREF(promoted);
    if (!seq)
        return nullptr;
    PyObject* out = elemwise_direct(op, PySequence_Fast_ITEMS(seq), PySequence_Fast_GET_SIZE(seq));
    Py_DECREF(seq);
    if (!out && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "%s: operands of different dtypes after promotion",
                     op.to_string().c_str());
    return out;
}

PyObject* py_elemwise(PyObject*, PyObject* const* args, Py_ssize_t nargs) noexcept {
    try {
        if (nargs < 2) {
            PyErr_SetString(PyExc_TypeError, "elemwise(op, *args): needs an op and an operand");
            return nullptr;
        }
        const imperative::OpDef* op = op_of(args[0]);
        if (!op || op->id() != imperative::ops::Elemwise::kId) {
            PyErr_Format(PyExc_TypeError, "elemwise(op, *args): op is a %s, not an Elemwise",
                         Py_TYPE(args[0])->tp_name);
            return nullptr;
        }
        return elemwise_impl(*op, args + 1, nargs - 1);
    } catch (...) {
        return translate_current_exception();
    }
}

// ---- Tensor's operators as type slots ---------------------------------------------------

const imperative::OpDef& elemwise_op(Mode mode) {
    // One OpDef per mode for the process; each caches its dnn operator.
    static std::array<std::unique_ptr<imperative::ops::Elemwise>, 128> ops;
    auto& op = ops.at(static_cast<size_t>(mode));
    if (!op) {
        dnn::param::Elemwise p;
        p.mode = mode;
        op = std::make_unique<imperative::ops::Elemwise>(p);
    }
    return *op;
}

template <Mode kMode>
PyObject* binary_slot(PyObject* a, PyObject* b) noexcept {
    try {
        PyObject* args[2] = {a, b};
        return elemwise_impl(elemwise_op(kMode), args, 2);
    } catch (...) {
        return translate_current_exception();
    }
}

template <Mode kMode>
PyObject* unary_slot(PyObject* a) noexcept {
    try {
        return elemwise_impl(elemwise_op(kMode), &a, 1);
    } catch (...) {
        return translate_current_exception();
    }
}

PyObject* power_slot(PyObject* a, PyObject* b, PyObject* mod) noexcept {
    if (mod != Py_None) {
        PyErr_SetString(PyExc_TypeError, "pow() with a modulus is not supported for tensors");
        return nullptr;
    }
    return binary_slot<Mode::POW>(a, b);
}

// a op= b updates the tensor object a (inplace_update), as MegEngine's in-place operators do.
PyObject* inplace_result(PyObject* a, PyObject* result) noexcept {
    if (!result || result == Py_NotImplemented)
        return result;
    TensorWrapper* r = tensor_of(result);
    if (!r)
        return result;
    try {
        inplace_update(a, *r);
    } catch (...) {
        Py_DECREF(result);
        return translate_current_exception();
    }
    Py_DECREF(result);
    Py_INCREF(a);
    return a;
}

template <Mode kMode>
PyObject* inplace_slot(PyObject* a, PyObject* b) noexcept {
    return inplace_result(a, binary_slot<kMode>(a, b));
}

PyObject* inplace_power_slot(PyObject* a, PyObject* b, PyObject* mod) noexcept {
    return inplace_result(a, power_slot(a, b, mod));
}

PyObject* richcompare_slot(PyObject* a, PyObject* b, int cmp) noexcept {
    // `t == None` compares identities (False), as for any Python object, instead of turning
    // None into a tensor.
    if (a == Py_None || b == Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    switch (cmp) {
        case Py_EQ:
            return binary_slot<Mode::EQ>(a, b);
        case Py_NE:
            return binary_slot<Mode::NE>(a, b);
        case Py_LT:
            return binary_slot<Mode::LT>(a, b);
        case Py_LE:
            return binary_slot<Mode::LEQ>(a, b);
        case Py_GT:
            return binary_slot<Mode::LT>(b, a);
        case Py_GE:
            return binary_slot<Mode::LEQ>(b, a);
        default:
            Py_RETURN_NOTIMPLEMENTED;
    }
}

// Points `type`'s operator slots at the functions above. The Python methods of the same names
// (array_method.py) stay in the class dict for explicit calls and give the same results; a
// subclass defined later inherits the Python methods, so install() runs for Parameter too.
void install_operator_slots(PyTypeObject* type) {
    PyNumberMethods* nb = type->tp_as_number;
    if (!nb)
        throw py::type_error("install_operator_slots: the type has no number methods");
    nb->nb_add = binary_slot<Mode::ADD>;
    nb->nb_subtract = binary_slot<Mode::SUB>;
    nb->nb_multiply = binary_slot<Mode::MUL>;
    nb->nb_true_divide = binary_slot<Mode::TRUE_DIV>;
    nb->nb_floor_divide = binary_slot<Mode::FLOOR_DIV>;
    nb->nb_remainder = binary_slot<Mode::MOD>;
    nb->nb_power = power_slot;
    nb->nb_inplace_add = inplace_slot<Mode::ADD>;
    nb->nb_inplace_subtract = inplace_slot<Mode::SUB>;
    nb->nb_inplace_multiply = inplace_slot<Mode::MUL>;
    nb->nb_inplace_true_divide = inplace_slot<Mode::TRUE_DIV>;
    nb->nb_inplace_floor_divide = inplace_slot<Mode::FLOOR_DIV>;
    nb->nb_inplace_remainder = inplace_slot<Mode::MOD>;
    nb->nb_inplace_power = inplace_power_slot;
    nb->nb_negative = unary_slot<Mode::NEGATE>;
    nb->nb_absolute = unary_slot<Mode::ABS>;
    type->tp_richcompare = richcompare_slot;
    PyType_Modified(type);
}

PyMethodDef g_methods[] = {
        {"apply", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_apply)),
         METH_FASTCALL,
         "apply(op, *tensors): runs an operator (imperative/src/apply.cpp), returning a tuple of "
         "output tensors."},
        {"apply_joined",
         reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_apply_joined)),
         METH_FASTCALL,
         "apply_joined(op, tensors, same_shape=False): op's first output on a list or tuple of "
         "two or more Tensors of one unquantized dtype (and with same_shape one shape), the first "
         "with dims, while no trace records; None for any other argument (F.concat's and "
         "F.stack's fast paths)."},
        {"elemwise", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_elemwise)),
         METH_FASTCALL,
         "elemwise(op, *args): runs an Elemwise op on tensors and scalars, promoting them to one "
         "dtype as megengine does; returns one Tensor."},
        {nullptr, nullptr, 0, nullptr}};

}  // namespace

void init_fast_apply(py::module_& m) {
    for (PyMethodDef* def = g_methods; def->ml_name; ++def) {
        PyObject* fn = PyCFunction_NewEx(def, nullptr, m.attr("__name__").ptr());
        if (!fn)
            throw py::error_already_set();
        m.add_object(def->ml_name, py::reinterpret_steal<py::object>(fn));
    }
    m.def(
            "_set_promote",
            [](py::object fn) {
                Py_XDECREF(g_promote);
                g_promote = fn.release().ptr();
            },
            "Sets the function elemwise() calls to promote mixed operands (array_method.py).");
    m.def(
            "_set_symbolic_apply",
            [](py::object cls, py::object fn) {
                Py_XDECREF(g_symbolic_type);
                Py_XDECREF(g_symbolic_fn);
                g_symbolic_type = cls.release().ptr();
                g_symbolic_fn = fn.release().ptr();
            },
            py::arg("cls"), py::arg("fn"),
            "Sends apply() and elemwise() calls with an input of class `cls` to fn(op, *args) "
            "(megengine.utils.network_node: ops on an edited model's vars).");
    m.def(
            "_set_amp_elemwise",
            [](py::object fn, const std::vector<dnn::param::Elemwise::Mode>& modes) {
                std::array<bool, 128> set{};
                for (auto mode : modes)
                    set.at(static_cast<size_t>(mode)) = true;
                g_amp_modes = set;
                Py_XDECREF(g_amp_cast);
                g_amp_cast = fn.is_none() ? nullptr : fn.release().ptr();
            },
            py::arg("fn"), py::arg("modes"),
            "Sets (None: clears) the function elemwise() calls to cast the operands of `modes` "
            "while megengine.amp.autocast is on (core/tensor/amp.py).");
    m.def(
            "_install_operator_slots",
            [](py::type cls) {
                auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
                if (!PyType_IsSubtype(type, g_tensor_type))
                    throw py::type_error("_install_operator_slots: not a Tensor class");
                install_operator_slots(type);
            },
            "Gives a Tensor class the C operator slots (+, -, *, /, //, %, **, comparisons).");
}

}  // namespace neomeg::python::fast
