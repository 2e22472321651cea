// Helpers shared by the tests of the reduction, sorting and matrix-product operators.
#pragma once

#include <string>
#include <vector>

#include "common/checker.h"

namespace neomeg::dnn::test {

inline Handle* naive_handle() {
    static auto h = Handle::make_naive();
    return h.get();
}

// Runs Op with param p on the inputs, with contiguous outputs.
template <class Op>
std::vector<HostTensor> run(const typename Op::Param& p, const std::vector<HostTensor>& inputs) {
    auto op = naive_handle()->create_operator<Op>();
    op->param() = p;
    return run_op(*op, inputs);
}

// The only output of running Op. HostTensor's implicit copy keeps pointing into the source's
// buffer, so outputs are moved out of the vector run() returns, never copied.
template <class Op>
HostTensor run1(const typename Op::Param& p, const std::vector<HostTensor>& inputs) {
    auto outs = run<Op>(p, inputs);
    return std::move(outs[0]);
}

// Runs Op with its outputs written into padded (strided) views instead of contiguous buffers.
template <class Op>
std::vector<HostTensor> run_into_padded(const typename Op::Param& p,
                                        const std::vector<HostTensor>& inputs) {
    auto op = naive_handle()->create_operator<Op>();
    op->param() = p;
    std::vector<TensorLayout> in_layouts;
    std::vector<TensorND> in_nds;
    for (auto& t : inputs) {
        in_layouts.push_back(t.layout());
        in_nds.push_back(t.nd());
    }
    std::vector<TensorLayout> out_layouts(op->num_outputs());
    op->deduce_layout(in_layouts, out_layouts);
    std::vector<HostTensor> outs;
    std::vector<TensorND> out_nds;
    for (auto& l : out_layouts) {
        outs.emplace_back(padded_layout(l));
        out_nds.push_back(outs.back().nd());
    }
    op->exec(in_nds, out_nds);
    return outs;
}

// Runs f and checks it throws Err with a message holding every one of `needles`.
template <class Err, class F>
void expect_error(F&& f, const std::vector<std::string>& needles) {
    EXPECT_THROW(f(), Err);
    try {
        f();
    } catch (const Err& e) {
        std::string msg = e.what();
        for (auto& n : needles)
            EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
    }
}

// A tensor seen as (outer, n, inner) around `axis`: element (o, i, r) of the row-major values is
// at (o * n + i) * inner + r. The tests' plain reference loops use this.
struct AxisSplit {
    size_t outer = 1, n = 1, inner = 1;
    AxisSplit(const TensorShape& s, size_t axis) {
        for (size_t d = 0; d < s.ndim; ++d)
            (d < axis ? outer : d == axis ? n : inner) *= s[d];
    }
    size_t at(size_t o, size_t i, size_t r) const { return (o * n + i) * inner + r; }
};

inline std::vector<double> random_values(size_t n, double lo, double hi, std::mt19937& rng,
                                         bool integers = false) {
    std::uniform_real_distribution<double> d(lo, hi);
    std::vector<double> v(n);
    for (auto& x : v)
        x = integers ? std::floor(d(rng)) : d(rng);
    return v;
}

}  // namespace neomeg::dnn::test
