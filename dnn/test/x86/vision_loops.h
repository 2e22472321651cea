// What the x86 suites of the vision and quantization loops (roi.cpp, remap.cpp, fake_quant.cpp)
// share: tensors with chosen values in any layout, and a run of one operator on the x86 handle
// against naive on contiguous copies that must agree bit for bit, or within a bound derived from
// a float32 loop's arithmetic (NaNs and infinities alike either way), and must have run the x86
// loops, not naive.
#pragma once

#include <random>

#include "x86/x86_test.h"

namespace neomeg::dnn::test {

// A tensor of `shape` in a padded (strided) layout when `padded`, holding `values` (row-major)
// or, when empty, uniform values in [lo, hi).
inline HostTensor make_tensor(const TensorShape& shape, bool padded, std::mt19937& rng,
                              const std::vector<double>& values = {}, double lo = -1, double hi = 1,
                              DType dt = dtype::Float32) {
    TensorLayout l(shape, dt);
    HostTensor t(padded ? padded_layout(l) : l);
    if (values.empty())
        fill_uniform(t, lo, hi, rng);
    else
        t.set_values(values);
    return t;
}

// The bound of a float32 sum of n products w_i * v_i with sum |w_i| <= 1 and |v_i| <= vmax
// against naive's double sum rounded once: each w_i rounded to float32 (u), each product (u),
// and at most n - 1 additions on any product's path ((n - 1) u), u = 2^-24, first order; naive's
// own rounding u / 2; and `extra` more roundings of the whole (a division by the count: 1).
inline double float_sum_bound(size_t n, double vmax, size_t extra = 0) {
    return static_cast<double>(n + 2 + extra) * 0x1p-24 * vmax;
}

// Runs Op with params p on the x86 handle and on naive, expects outputs within eps (tensors_near:
// |a - b| <= eps * max(1, |b|)) and the x86 loop kernel, and returns naive's outputs.
template <class Op>
std::vector<HostTensor> expect_naive_near(Handle& h, const typename Op::Param& p, double eps,
                                          const std::vector<HostTensor>& in,
                                          const std::vector<TensorShape>& out = {},
                                          const char* kernel = "loop") {
    auto op = h.create_operator<Op>();
    op->param() = p;
    auto got = run_op(*op, in, out);
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<Op>();
    ref->param() = p;
    std::vector<HostTensor> dense;
    for (auto& t : in)
        dense.push_back(t.contiguous());
    auto want = run_op(*ref, dense, out);
    EXPECT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size() && i < want.size(); ++i)
        EXPECT_TRUE(tensors_near(got[i], want[i], eps)) << op->param_str() << " output " << i;
    EXPECT_EQ(last_kernel(*op), kernel) << op->param_str();
    return want;
}

// The same, bit for bit.
template <class Op>
std::vector<HostTensor> expect_naive_bits(Handle& h, const typename Op::Param& p,
                                          const std::vector<HostTensor>& in,
                                          const std::vector<TensorShape>& out = {},
                                          const char* kernel = "loop") {
    return expect_naive_near<Op>(h, p, 0, in, out, kernel);
}

}  // namespace neomeg::dnn::test
