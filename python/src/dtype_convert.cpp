#include "dtype_convert.h"

namespace neomeg::python {

dnn::DType dtype_from_numpy(const py::dtype& dt) {
    char kind = dt.kind();
    size_t size = dt.itemsize();
    using namespace dnn::dtype;
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
        default:
            break;
    }
    throw py::type_error("unsupported dtype " + std::string(py::str(dt)) +
                         " (supported: float32, float16, bfloat16, int8, uint8, int16, int32, "
                         "bool; float64 and int64 are narrowed)");
}

py::dtype dtype_to_numpy(dnn::DType dt) {
    switch (dt.enumv()) {
        case dnn::DTypeEnum::Float32:
        case dnn::DTypeEnum::BFloat16:
            return py::dtype("float32");
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
