// Binds generated param enums so that Python may pass either the enum member or its name
// (case-insensitive), as MegEngine's builtin ops accept `mode="add"`.
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "dtype_convert.h"

namespace neomeg::python {

namespace py = pybind11;

template <class E, size_t N>
void bind_enum(py::module_& m, const char* name, const char* const (&names)[N]) {
    py::enum_<E> e(m, name);
    for (size_t i = 0; i < N; ++i)
        e.value(names[i], static_cast<E>(i));
    e.def(py::init([names](const std::string& s) {
        std::string up(s);
        std::transform(up.begin(), up.end(), up.begin(),
                       [](unsigned char c) { return std::toupper(c); });
        for (size_t i = 0; i < N; ++i)
            if (up == names[i])
                return static_cast<E>(i);
        std::string all;
        for (size_t i = 0; i < N; ++i)
            all += (i ? ", " : "") + std::string(names[i]);
        throw py::value_error("unknown value '" + s + "'; expected one of " + all);
    }));
    py::implicitly_convertible<py::str, E>();
}

// DType-valued params accept numpy dtypes, numpy scalar types and names.
inline void bind_dtype_enum(py::module_& m) {
    py::enum_<dnn::DTypeEnum> e(m, "_DTypeEnum");
#define NM_CB(en, t, n) e.value(n, dnn::DTypeEnum::en);
    NM_FOREACH_DTYPE(NM_CB)
#undef NM_CB
#define NM_CB(en, t, s, n) e.value(n, dnn::DTypeEnum::en);
    NM_FOREACH_QUANTIZED_DTYPE(NM_CB)
#undef NM_CB
#define NM_CB(en, t, n) e.value(n, dnn::DTypeEnum::en);
    NM_FOREACH_COMPLEX_DTYPE(NM_CB)
#undef NM_CB
    e.def(py::init([](const py::object& o) {
        // A quantized dtype's bare name ("QuantizedS8"): its scale travels as the op's own
        // param, so the name alone names the enum member (a Network's params hold it so).
        if (py::isinstance<py::str>(o)) {
            std::string s = o.cast<std::string>();
#define NM_CB(en, t, sz, n) \
    if (s == n)             \
        return dnn::DTypeEnum::en;
            NM_FOREACH_QUANTIZED_DTYPE(NM_CB)
#undef NM_CB
        }
        return dtype_from_py(o).enumv();
    }));
    py::implicitly_convertible<py::str, dnn::DTypeEnum>();
    py::implicitly_convertible<py::dtype, dnn::DTypeEnum>();
    py::implicitly_convertible<py::type, dnn::DTypeEnum>();
}

}  // namespace neomeg::python
