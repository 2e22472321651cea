// Helpers shared by the normalisation, softmax, dropout and RNG tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/checker.h"

namespace neomeg::dnn::test {

template <class Op>
struct OpTag {
    using type = Op;
};

inline Handle* naive_handle() {
    static std::unique_ptr<Handle> h = Handle::make_naive();
    return h.get();
}

template <class Op>
std::unique_ptr<Op> make_op(const typename Op::Param& p = {}) {
    auto op = naive_handle()->create_operator<Op>();
    op->param() = p;
    return op;
}

// Runs deduce_layout on these inputs; output shapes seed generator ops.
template <class Op>
std::vector<TensorLayout> deduce(const typename Op::Param& p, std::vector<TensorLayout> inputs,
                                 std::vector<TensorShape> out_shapes = {}) {
    auto op = make_op<Op>(p);
    std::vector<TensorLayout> outs(op->num_outputs());
    for (size_t i = 0; i < out_shapes.size(); ++i)
        static_cast<TensorShape&>(outs[i]) = out_shapes[i];
    op->deduce_layout(inputs, outs);
    return outs;
}

// Expects f to throw Err (exactly that type or a subclass) with every needle in its message.
template <class Err, class F>
void expect_error(F&& f, const std::vector<std::string>& needles) {
    EXPECT_THROW(f(), Err);
    try {
        f();
    } catch (const Err& e) {
        std::string msg = e.what();
        for (auto& n : needles)
            EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
    } catch (...) {
    }
}

// Runs the op once into contiguous outputs and once into padded (strided) output views, and
// expects the same values: kernels must address outputs through their strides.
template <class Op>
void expect_padded_outputs_match(const typename Op::Param& p, const std::vector<HostTensor>& in,
                                 const std::vector<TensorShape>& out_shapes = {}) {
    auto op = make_op<Op>(p);
    auto want = run_op(*op, in, out_shapes);
    std::vector<HostTensor> got;
    std::vector<TensorND> in_nds, out_nds;
    for (auto& t : in)
        in_nds.push_back(t.nd());
    for (auto& w : want) {
        got.emplace_back(padded_layout(w.layout()));
        got.back().set_values(std::vector<double>(w.values().size(), -7.0));
    }
    for (auto& g : got)
        out_nds.push_back(g.nd());
    std::vector<TensorLayout> in_layouts;
    for (auto& t : in)
        in_layouts.push_back(t.layout());
    std::vector<std::byte> ws(op->get_workspace_in_bytes(in_layouts, {}));
    op->exec(in_nds, out_nds, {ws.data(), ws.size()});
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_TRUE(tensors_near(got[i], want[i], 0)) << op->param_str() << " output " << i;
}

// The same values in another dtype (rounded to it).
inline HostTensor as_dtype(const HostTensor& t, DType dt) {
    return HostTensor::from(t.shape(), t.values(), dt);
}

inline HostTensor random_tensor(const TensorShape& shape, uint32_t seed, double lo = -1,
                                double hi = 1, DType dt = dtype::Float32) {
    std::mt19937 rng(seed);
    HostTensor t(shape, dt);
    fill_uniform(t, lo, hi, rng);
    return t;
}

// Flat row-major indices of each line of `shape` along `axis`: lines[j][k] is element k of
// line j.
inline std::vector<std::vector<size_t>> lines_along(const TensorShape& shape, size_t axis) {
    size_t outer = 1, inner = 1, len = shape[axis];
    for (size_t i = 0; i < axis; ++i)
        outer *= shape[i];
    for (size_t i = axis + 1; i < shape.ndim; ++i)
        inner *= shape[i];
    std::vector<std::vector<size_t>> lines;
    for (size_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < inner; ++i) {
            std::vector<size_t> line;
            for (size_t k = 0; k < len; ++k)
                line.push_back((o * len + k) * inner + i);
            lines.push_back(line);
        }
    return lines;
}

}  // namespace neomeg::dnn::test
