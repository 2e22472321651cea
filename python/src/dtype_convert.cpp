#include "dtype_convert.h"

#include "neomeg/dnn/errors.h"

namespace neomeg::python {

namespace {

// MegEngine's quantized numpy dtype: int8/uint8/int32 with metadata
// {"mgb_dtype": {"name": "QuantizedS8", "scale": s[, "zero_point": z]}}.
bool quantized_from_metadata(const py::dtype& dt, dnn::DType& out) {
    py::object meta = dt.attr("metadata");
    if (meta.is_none() || !meta.contains("mgb_dtype"))
        return false;
    py::dict info = meta["mgb_dtype"];
    auto name = info["name"].cast<std::string>();
    dnn::DTypeEnum e;
    if (name == "QuantizedS8")
        e = dnn::DTypeEnum::QuantizedS8;
    else if (name == "Quantized8Asymm")
        e = dnn::DTypeEnum::Quantized8Asymm;
    else if (name == "QuantizedS32")
        e = dnn::DTypeEnum::QuantizedS32;
    else
        throw py::type_error("quantized dtype " + name +
                             " is not supported (supported: QuantizedS8, Quantized8Asymm, "
                             "QuantizedS32)");
    NM_THROW_IF(dnn::DType(e).storage().size() != static_cast<size_t>(dt.itemsize()), DTypeError,
                name, ": numpy storage ", std::string(py::str(dt)), " has the wrong size");
    auto scale = info["scale"].cast<float>();
    int32_t zp = info.contains("zero_point") ? info["zero_point"].cast<int32_t>() : 0;
    out = dnn::DType::make(e, scale, zp);
    return true;
}

}  // namespace

py::dtype bfloat16_numpy() {
    // Made once and kept for the process: a static py::object would be released after the
    // interpreter is gone.
    static PyObject* dt =
            py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16")).release().ptr();
    return py::reinterpret_borrow<py::dtype>(dt);
}

dnn::DType dtype_from_numpy(const py::dtype& dt) {
    char kind = dt.kind();
    size_t size = dt.itemsize();
    using namespace dnn::dtype;
    if (kind == 'i' || kind == 'u') {
        dnn::DType q;
        if (quantized_from_metadata(dt, q))
            return q;
    }
    switch (kind) {
        case 'f':
            if (size == 2)
                return Float16;
            if (size == 4 || size == 8)
                return Float32;
            break;
        case 'i':
            if (size == 1)
                return Int8;
            if (size == 2)
                return Int16;
            if (size == 4 || size == 8)
                return Int32;
            break;
        case 'u':
            if (size == 1)
                return Uint8;
            if (size == 2 || size == 4 || size == 8)
                return Int32;
            break;
        case 'b':
            return Bool;
        case 'c':  // complex128 is refused, not narrowed: MegEngine takes complex64 only
            if (size == 8)
                return Complex64;
            break;
        case 'V':  // ml_dtypes' bfloat16 (other void dtypes are records or raw bytes)
            if (size == 2 && dt.equal(bfloat16_numpy()))
                return BFloat16;
            break;
        default:
            break;
    }
    throw py::type_error("unsupported numpy dtype " + std::string(py::str(dt)) +
                         " (supported: float32, float16, ml_dtypes' bfloat16, int8, uint8, int16, "
                         "int32, bool, complex64; float64 and int64 are narrowed)");
}

py::dtype dtype_to_numpy(dnn::DType dt) {
    if (dt.is_quantized()) {
        py::dict info;
        info["name"] = dt.name();
        info["scale"] = static_cast<double>(dt.scale());
        if (dt.enumv() == dnn::DTypeEnum::Quantized8Asymm)
            info["zero_point"] = dt.zero_point();
        py::dict meta;
        meta["mgb_dtype"] = info;
        auto np = py::module_::import("numpy");
        return np.attr("dtype")(dtype_to_numpy(dt.storage()), py::arg("metadata") = meta);
    }
    switch (dt.enumv()) {
        case dnn::DTypeEnum::Float32:
            return py::dtype("float32");
        case dnn::DTypeEnum::BFloat16:
            return bfloat16_numpy();
        case dnn::DTypeEnum::Float16:
            return py::dtype("float16");
        case dnn::DTypeEnum::Int8:
            return py::dtype("int8");
        case dnn::DTypeEnum::Uint8:
            return py::dtype("uint8");
        case dnn::DTypeEnum::Int16:
            return py::dtype("int16");
        case dnn::DTypeEnum::Int32:
            return py::dtype("int32");
        case dnn::DTypeEnum::Bool:
            return py::dtype("bool");
        case dnn::DTypeEnum::Complex64:
            return py::dtype("complex64");
        default:
            break;
    }
    throw py::type_error("invalid dtype");
}

dnn::DType dtype_from_py(const py::handle& obj) {
    if (py::isinstance<py::str>(obj)) {
        auto name = obj.cast<std::string>();
        if (name == "bfloat16")
            return dnn::dtype::BFloat16;
        return dtype_from_numpy(py::dtype(name));
    }
    return dtype_from_numpy(py::dtype::from_args(py::reinterpret_borrow<py::object>(obj)));
}

}  // namespace neomeg::python
