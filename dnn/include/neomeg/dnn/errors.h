// Exceptions thrown by the kernel library. Nothing in dnn aborts on bad input: it throws one of
// these, and the layers above map them (ShapeError -> ValueError, DTypeError -> TypeError, ...).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace neomeg::dnn {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};
// Input or output layouts that do not fit together (shapes, ranks, contiguity).
class ShapeError : public Error {
public:
    using Error::Error;
};
// A dtype the operator does not accept, or dtypes that do not match.
class DTypeError : public Error {
public:
    using Error::Error;
};
// A kernel's refusal of a dtype it has no code for (dispatch_dtype's of a quantized or complex
// dtype): the kernel does not know its operator, so OperatorBase::exec_unchecked rethrows it as a
// DTypeError naming the operator and its params.
class UnsupportedDTypeError : public DTypeError {
public:
    using DTypeError::DTypeError;
};
// A param value outside its domain (negative stride, unknown axis, ...).
class ParamError : public Error {
public:
    using Error::Error;
};
// An index tensor that points outside the indexed axis.
class IndexError : public Error {
public:
    using Error::Error;
};
// The handle has no kernel for this operator, dtype or configuration.
class NotSupportedError : public Error {
public:
    using Error::Error;
};

// Concatenates anything with an operator<< into one string.
template <class... Args>
std::string str_cat(Args&&... args) {
    std::ostringstream os;
    (os << ... << std::forward<Args>(args));
    return os.str();
}

}  // namespace neomeg::dnn

// NM_THROW_IF(cond, ShapeError, "a ", x, " b") throws ShapeError with the concatenated message.
#define NM_THROW_IF(cond, Err, ...)                                        \
    do {                                                                   \
        if (cond)                                                          \
            throw ::neomeg::dnn::Err(::neomeg::dnn::str_cat(__VA_ARGS__)); \
    } while (0)
