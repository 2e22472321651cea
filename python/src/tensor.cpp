// megengine.Tensor's C++ half: construction from Python data, shape/dtype/device, numpy().
// The Python half (operators, reshape, ...) is added to this same class by megengine/tensor.py,
// so a tensor returned by apply() is a megengine.Tensor without any wrapping.
#include "tensor.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "dtype_convert.h"
#include "fast_tensor.h"
#include "neomeg/dnn/channels_last.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "trace.h"

namespace neomeg::python {

namespace {

// megengine.set_default_device; invalid until set, meaning "xpux".
CompNode g_default_device;

CompNode comp_node_from_py(const py::handle& device) {
    if (device.is_none())
        return g_default_device.valid() ? g_default_device : CompNode::default_device();
    return CompNode::load(py::str(device).cast<std::string>());
}

imperative::Tensor tensor_from_array(py::array arr, CompNode cn) {
    dnn::DType dt = dtype_from_numpy(arr.dtype());
    py::dtype storage = dtype_to_numpy(dt);
    // Narrow float64/int64 and make the buffer contiguous in one numpy call (astype keeps 0-d
    // arrays 0-d, unlike ascontiguousarray).
    py::array c = arr.attr("astype")(storage, py::arg("order") = "C", py::arg("copy") = false);
    dnn::TensorShape shape;
    std::vector<size_t> dims(c.shape(), c.shape() + c.ndim());
    shape = dnn::TensorShape(dims);
    return imperative::Tensor::from_host(c.data(), shape, dt, cn);
}

imperative::Tensor convert_dtype(const imperative::Tensor& t, dnn::DType dt) {
    if (t.dtype() == dt)
        return t;
    dnn::param::TypeCvt p;
    p.dtype = dt.enumv();
    p.scale = dt.scale();
    p.zero_point = dt.zero_point();
    imperative::ops::TypeCvt op(p);
    return imperative::apply(op, {&t, 1})[0];
}

// `self` of a method that takes it as a handle (to note it for a recording trace): a Tensor,
// or TypeError when the method was called unbound on something else.
TensorWrapper& self_tensor(py::handle self) {
    TensorWrapper* t = fast::tensor_of(self.ptr());
    if (!t)
        throw py::type_error(std::string("expected a Tensor, got ") + Py_TYPE(self.ptr())->tp_name);
    return *t;
}

}  // namespace

// x += y and the other in-place operators (MegEngine's `_inplace`): the object takes the
// result's value, so every name bound to it sees the update. Within a recording the result's
// autograd identity comes along (aliases differentiate through the update); outside one the
// object keeps its own, so that a Parameter updated by hand (`w -= lr * w.grad`) stays
// attached to its GradManager.
void inplace_update(py::handle self, const TensorWrapper& src) {
    trace::note_replacing_if_tracing(self.ptr());  // before its value changes
    TensorWrapper& t = self_tensor(self);
    auto meta = src.value.grad_meta() ? src.value.grad_meta() : t.value.grad_meta();
    t.value = src.value;
    t.value.set_grad_meta(std::move(meta));
}

void throw_uninitialized() {
    throw py::value_error(kUninitializedMessage);
}

TensorWrapper TensorWrapper::from_py(const py::object& data, const py::object& dtype,
                                     const py::object& device) {
    CompNode cn = comp_node_from_py(device);
    imperative::Tensor t;
    if (py::isinstance<TensorWrapper>(data)) {
        trace::note_if_tracing(data.ptr());
        // A new tensor, not another name for data's: see imperative::new_identity.
        t = imperative::new_identity(data.cast<const TensorWrapper&>().value);
        NM_THROW_IF(!device.is_none() && t.comp_node() != cn, ParamError,
                    "Tensor(): copying between devices is done with Tensor.to(device)");
    } else {
        auto np = py::module_::import("numpy");
        py::array arr = np.attr("asarray")(data.is_none() ? py::list() : data);
        if (!dtype.is_none()) {
            // MegEngine casts array data into a quantized dtype's storage as numpy does (the
            // values are taken as stored integers); astype quantizes. Data asked to be complex64
            // is cast by numpy too (TypeCvt has no complex conversions; complex128 would be
            // refused).
            dnn::DType want = dtype_from_py(dtype);
            if (want.is_quantized() || want.is_complex())
                arr = arr.attr("astype")(dtype_to_numpy(want));
        }
        t = tensor_from_array(arr, cn);
    }
    if (!dtype.is_none())
        t = convert_dtype(t, dtype_from_py(dtype));
    return TensorWrapper{t};
}

void TensorWrapper::fail_recording(const std::string& why) const {
    if (auto* rec = imperative::TraceRecorder::current();
        rec && rec->mode() == imperative::TraceRecorder::Mode::Record &&
        !(created_in_trace && rec->var_of(value) == nullptr))
        rec->fail(why);
}

py::array TensorWrapper::numpy() const {
    // A value read on the host while a trace records (numpy(), item(), bool(), int(), printing)
    // can steer Python (a branch, a slice bound, a constant) in ways a compiled replay, which
    // runs no Python, would repeat with the recording's value: such a recording replays nothing
    // and its later calls run eagerly.
    fail_recording(
            "a tensor's value was read on the host (numpy(), item(), bool(), int(), float() or "
            "printing), which a compiled replay could not follow");
    return host_array();
}

py::array TensorWrapper::host_array() const {
    const imperative::Tensor& t = value;
    std::vector<py::ssize_t> dims(t.shape().ndim);
    for (size_t i = 0; i < dims.size(); ++i)
        dims[i] = static_cast<py::ssize_t>(t.shape()[i]);
    py::array arr(dtype_to_numpy(t.dtype()), dims);
    if (t.shape().total_nr_elems())
        t.to_host(arr.mutable_data());
    return arr;
}

py::tuple TensorWrapper::shape() const {
    py::tuple s(value.shape().ndim);
    for (size_t i = 0; i < value.shape().ndim; ++i)
        s[i] = value.shape()[i];
    return s;
}

void init_tensor(py::module_& m) {
    m.def(
            "set_default_device",
            [](const std::string& name) { g_default_device = CompNode::load(name); },
            "Sets the device of tensors created without one (validated: a bad name raises).");
    m.def("get_default_device", [] {
        return (g_default_device.valid() ? g_default_device : CompNode::default_device())
                .to_string();
    });
    py::class_<TensorWrapper> cls(m, "Tensor", py::dynamic_attr());
    cls.def(py::init(&TensorWrapper::from_py), py::arg("data") = py::none(),
            py::arg("dtype") = py::none(), py::arg("device") = py::none())
            .def("numpy", &TensorWrapper::numpy, "A numpy copy of the tensor's values.")
            .def("_numpy_untraced", &TensorWrapper::host_array,
                 "numpy() for library code whose traced graph does not depend on the values it "
                 "reads (it only checks them, or makes the graph follow them itself).")
            .def("_detach",
                 [](py::handle self) {
                     trace::note_if_tracing(self.ptr());
                     return TensorWrapper{self_tensor(self).value.detach()};
                 })
            // The in-place update that keeps identity: optimizers, BatchNorm statistics and
            // load_state_dict give an existing Parameter new values. The object (and so its
            // autograd identity and attachments) stays; storage, shape and dtype are replaced.
            .def("_reset",
                 [](py::handle self, const TensorWrapper& src) {
                     trace::note_replacing_if_tracing(self.ptr());  // before its value changes
                     TensorWrapper& t = self_tensor(self);
                     auto meta = t.value.grad_meta();
                     t.value = src.value.detach();
                     t.value.set_grad_meta(std::move(meta));
                 })
            .def("_inplace_update", &inplace_update)
            .def("_copy_to",
                 [](const TensorWrapper& t, const std::string& device) {
                     CompNode cn = CompNode::load(device);
                     // The graph has no op that crosses comp nodes, so a recorded function that
                     // copies a traced value to another device could only replay the
                     // recording's copy: such a recording replays nothing (as numpy()).
                     if (cn != t.value.comp_node())
                         t.fail_recording("a tensor was copied to another device (" +
                                          cn.to_string() + "), which a compiled graph cannot do");
                     return TensorWrapper{t.value.copy_to(cn)};
                 })
            .def("_layout", [](const TensorWrapper& t) { return t.value.layout().to_string(); })
            // Whether that layout is the runtime's choice, not the program's (Tensor.format).
            .def_property(
                    "_auto_layout", [](const TensorWrapper& t) { return t.value.auto_layout(); },
                    [](py::handle self, bool on) { self_tensor(self).value.set_auto_layout(on); })
            // False only for a Tensor made by Tensor.__new__ without __init__; every other use
            // of such a tensor raises ValueError.
            .def_property_readonly("_initialized",
                                   [](py::handle self) { return is_initialized(self.ptr()); });
    // shape, ndim, size, dtype, device, _channels_last and _assign: C getters and methods
    // (tensor_getters.cpp); apply and the operators: fast_apply.cpp.
    fast::g_tensor_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
    fast::install_getters(fast::g_tensor_type);
    m.def("_set_device_type", &fast::set_device_type,
          "Makes Tensor.device return type(name) (one object per comp node) instead of the "
          "name.");
}

}  // namespace neomeg::python
