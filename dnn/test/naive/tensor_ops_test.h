// Helpers shared by the tests of the tensor-manipulation operators (TypeCvt, Relayout, Concat,
// Padding, Resize, ...).
#pragma once

#include <string>
#include <vector>

#include "common/checker.h"

namespace neomeg::dnn::test {

inline const std::vector<DType>& all_dtypes() {
    static const std::vector<DType> v = {dtype::Float32, dtype::Float16, dtype::BFloat16,
                                         dtype::Int8,    dtype::Uint8,   dtype::Int16,
                                         dtype::Int32,   dtype::Bool};
    return v;
}

// An operator of type Op on `handle` with param p.
template <class Op>
std::unique_ptr<Op> make_op(Handle* handle, const typename Op::Param& p = {}) {
    auto op = handle->create_operator<Op>();
    op->param() = p;
    return op;
}

// Expects f() to throw Err whose message contains every one of `parts`.
template <class Err, class F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
    EXPECT_THROW(f(), Err);
    try {
        f();
    } catch (const Err& e) {
        std::string what = e.what();
        for (auto& p : parts)
            EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
    }
}

// Runs op on inputs writing into the given (possibly strided) output tensors.
inline void exec_into(OperatorBase& op, const std::vector<HostTensor>& inputs,
                      std::vector<HostTensor>& outputs) {
    std::vector<TensorND> in, out;
    std::vector<TensorLayout> in_l, out_l;
    for (auto& t : inputs) {
        in.push_back(t.nd());
        in_l.push_back(t.layout());
    }
    for (auto& t : outputs) {
        out.push_back(t.nd());
        out_l.push_back(t.layout());
    }
    std::vector<std::byte> ws(op.get_workspace_in_bytes(in_l, out_l));
    op.exec(in, out, {ws.data(), ws.size()});
}

}  // namespace neomeg::dnn::test
