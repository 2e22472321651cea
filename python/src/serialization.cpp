// The model file's runtime for Python: _imperative_rt.InferenceModel wraps the C++ inference API
// (src/include/neomeg/inference/model.h), so that Python runs a dumped model through the same
// loader as C++ (megengine.utils.comp_graph_tools.GraphInference builds on it). ModelError (a
// ValueError) and its ModelVersionError are the loader's errors; an unreadable file is an OSError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <system_error>

#include "dtype_convert.h"
#include "neomeg/inference/model.h"

namespace py = pybind11;

namespace neomeg::python {
namespace {

using inference::HostTensor;
using inference::Model;

py::tuple shape_tuple(const std::vector<int64_t>& shape) {
    py::tuple t(shape.size());
    for (size_t i = 0; i < shape.size(); ++i)
        t[i] = shape[i];
    return t;
}

py::list infos(const std::vector<inference::TensorInfo>& v) {
    py::list out;
    for (const auto& i : v)
        out.append(py::make_tuple(i.name, i.dtype, shape_tuple(i.shape)));
    return out;
}

// numpy's dtype for a model dtype (a quantized one, "QuantizedS8(0.1)", as its storage with
// MegEngine's mgb_dtype metadata); bfloat16 has none.
py::dtype numpy_dtype(const std::string& dtype) {
    if (dtype == "bfloat16")
        throw py::type_error("bfloat16 has no numpy dtype");
    return dtype_to_numpy(dnn::DType::from_name(dtype));
}

Model load(const py::object& src, const std::string& device) {
    inference::Options opt{device};
    if (py::isinstance<py::bytes>(src) || py::isinstance<py::bytearray>(src) ||
        py::isinstance<py::memoryview>(src)) {
        py::buffer_info buf = py::buffer(src).request();
        std::span<const uint8_t> bytes(static_cast<const uint8_t*>(buf.ptr),
                                       static_cast<size_t>(buf.size * buf.itemsize));
        return Model::load(bytes, opt);
    }
    auto path = py::module_::import("os").attr("fspath")(src).cast<std::string>();
    py::gil_scoped_release release;
    return Model::load(path, opt);
}

void set_input(Model& m, const std::string& name, const py::object& value) {
    auto want = numpy_dtype(m.input(name).dtype);
    // A C-contiguous array of the input's dtype (a cast when the caller's differs).
    auto arr = py::array::ensure(value, py::array::c_style | py::array::forcecast);
    if (!arr)
        throw py::type_error("set_input: " + name + " needs array-like data");
    // astype, not ascontiguousarray: that one makes a 0-d value (a Python float) 1-d.
    if (!arr.dtype().is(want))
        arr = arr.attr("astype")(want, py::arg("order") = "C");
    std::vector<int64_t> shape(arr.shape(), arr.shape() + arr.ndim());
    m.set_input(name, arr.data(), shape);
}

py::array output(const Model& m, const std::string& name) {
    HostTensor t = m.output(name);
    if (t.dtype() == "bfloat16") {
        auto v = t.to_doubles();
        py::array_t<float> out(t.shape());
        for (size_t i = 0; i < v.size(); ++i)
            out.mutable_data()[i] = static_cast<float>(v[i]);
        return out;
    }
    py::array out(numpy_dtype(t.dtype()), t.shape());
    if (!t.bytes().empty())
        std::memcpy(out.mutable_data(), t.bytes().data(), t.bytes().size());
    return out;
}

}  // namespace

void init_serialization(py::module_& m) {
    // ModelVersionError is registered last, so its translator runs first.
    auto model_error =
            py::register_exception<serialization::ModelError>(m, "ModelError", PyExc_ValueError);
    py::register_exception<serialization::ModelVersionError>(m, "ModelVersionError", model_error);
    // A file that cannot be read: OSError(errno, message), which Python narrows to
    // FileNotFoundError, PermissionError, ...
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p)
                std::rethrow_exception(p);
        } catch (const std::system_error& e) {
            py::object args = py::make_tuple(e.code().value(), e.what());
            PyErr_SetObject(PyExc_OSError, args.ptr());
        }
    });

    py::class_<Model>(m, "InferenceModel",
                      "A model file loaded and compiled for inference (the C++ inference API).")
            .def(py::init(&load), py::arg("model"), py::arg("device") = "cpu0",
                 "Loads a model from a path or from bytes.")
            .def_property_readonly("input_names", &Model::input_names)
            .def_property_readonly("output_names", &Model::output_names)
            .def_property_readonly(
                    "inputs", [](const Model& mo) { return infos(mo.inputs()); },
                    "(name, dtype, declared shape with -1 for dynamic dims) per input")
            .def_property_readonly(
                    "outputs", [](const Model& mo) { return infos(mo.outputs()); },
                    "(name, dtype, shape for the current input shapes) per output")
            .def(
                    "input_shape",
                    [](const Model& mo, const std::string& name) {
                        return shape_tuple(mo.input(name).shape);
                    },
                    py::arg("name"), "The input's current shape.")
            .def("set_input", &set_input, py::arg("name"), py::arg("value"),
                 "Copies an array (cast to the input's dtype) as the input.")
            .def("run", &Model::run, py::call_guard<py::gil_scoped_release>())
            .def("output", &output, py::arg("name"), "Output `name` of the last run, copied.")
            .def("clone", &Model::clone, "A model of its own on the same file bytes.")
            .def_static("numpy_dtype", &numpy_dtype, py::arg("dtype"),
                        "numpy's dtype for one of the model's dtype names (quantized ones carry "
                        "MegEngine's mgb_dtype metadata); TypeError for bfloat16.")
            .def_property_readonly("user_info", &Model::user_info)
            .def_property_readonly("producer", &Model::producer)
            .def_property_readonly("format_version", &Model::format_version);
}

}  // namespace neomeg::python
