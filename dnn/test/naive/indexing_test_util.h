// Helpers shared by the tests of the indexing operators (dnn/ops/defs/indexing.py).
#pragma once

#include <string>
#include <vector>

#include "common/checker.h"

namespace neomeg::dnn::test::indexing {

inline HostTensor i32(const TensorShape& shape, const std::vector<double>& v) {
    return HostTensor::from(shape, v, dtype::Int32);
}

// 0, 1, 2, ... in row-major order.
inline HostTensor iota(const TensorShape& shape, DType dt = dtype::Float32) {
    std::vector<double> v(shape.total_nr_elems());
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<double>(i);
    return HostTensor::from(shape, v, dt);
}

// Creates an Op on the naive handle with the given param and runs it on fresh outputs.
template <class Op>
std::vector<HostTensor> run(const typename Op::Param& p, const std::vector<HostTensor>& inputs) {
    auto handle = Handle::make_naive();
    auto op = handle->create_operator<Op>();
    op->param() = p;
    return run_op(*op, inputs);
}

// The single output of an Op. Moved out, never copied: a copied HostTensor still points into the
// original's storage.
template <class Op>
HostTensor run1(const typename Op::Param& p, const std::vector<HostTensor>& inputs) {
    auto outs = run<Op>(p, inputs);
    return std::move(outs.at(0));
}

// Runs f and checks that it throws Err whose message contains every one of `parts`.
template <class Err, class F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
    try {
        f();
        ADD_FAILURE() << "expected an exception";
    } catch (const Err& e) {
        std::string what = e.what();
        for (auto& p : parts)
            EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' missing in: " << what;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong exception type: " << e.what();
    }
}

// Every dtype, for ops that move data of any type.
inline std::vector<DType> all_dtypes() {
    return {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8,
            dtype::Uint8,   dtype::Int16,   dtype::Int32,    dtype::Bool};
}

}  // namespace neomeg::dnn::test::indexing
