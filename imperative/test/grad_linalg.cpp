// Backward rules of grad_rules/linalg.cpp (MatrixInverse, SVD) against central
// differences.
#include <gtest/gtest.h>

#include <vector>

#include "grad_check.h"
#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/linalg.h"

using namespace neomeg;
using namespace neomeg::imperative;
namespace dnn = neomeg::dnn;

using namespace neomeg::imperative::grad_check;

namespace {

// Random matrices (..., n, n) in [-1, 1) plus 2n on the diagonal: diagonally dominant with
// pivots >= n, so central differences of the inverse are accurate.
std::vector<float> well_conditioned(const dnn::TensorShape& shape, uint32_t seed) {
    auto v = rand_values(shape, seed);
    const size_t n = shape[shape.ndim - 1];
    for (size_t b = 0; b < v.size() / (n * n); ++b)
        for (size_t i = 0; i < n; ++i)
            v[(b * n + i) * n + i] += 2.f * static_cast<float>(n);
    return v;
}

Tensor inverse(const Tensor& x) {
    return imperative::apply(ops::MatrixInverse(), {&x, 1})[0];
}

std::vector<Tensor> svd(const Tensor& x, bool uv) {
    dnn::param::SVD p;
    p.compute_uv = uv;
    return imperative::apply(ops::SVD(p), {&x, 1});
}

}  // namespace

TEST(GradLinalg, MatrixInverseAgainstFiniteDifferences) {
    uint32_t seed = 1;
    for (dnn::TensorShape shape :
         std::vector<dnn::TensorShape>{{1, 1}, {3, 3}, {2, 4, 4}, {2, 1, 2, 2}}) {
        SCOPED_TRACE(shape.to_string());
        single::check_grads_at([](const std::vector<Tensor>& x) { return inverse(x[0]); }, {shape},
                               {well_conditioned(shape, seed)}, {true}, seed);
        ++seed;
    }
}

TEST(GradLinalg, MatrixInverseSecondOrder) {
    // The rule is built from differentiable ops, so the gradient of the gradient flows too.
    Fn f = [](const std::vector<Tensor>& x) { return std::vector<Tensor>{inverse(x[0])}; };
    dnn::TensorShape shape{3, 3};
    check_second(f, {{well_conditioned(shape, 7), shape}}, 2e-2f, 1e-2f, "inverse");
}

TEST(GradLinalg, SingularValuesAgainstFiniteDifferences) {
    uint32_t seed = 11;
    for (dnn::TensorShape shape : std::vector<dnn::TensorShape>{{3, 2}, {2, 4}, {2, 3, 3}}) {
        SCOPED_TRACE(shape.to_string());
        single::check_grads([](const std::vector<Tensor>& x) { return svd(x[0], false)[0]; },
                            {shape}, {true}, seed++);
    }
}

TEST(GradLinalg, SVDFactorsAgainstFiniteDifferences) {
    // U and Vh are unique up to the sign of each singular pair, so the checked functions of them
    // are sign-free: their squares, and the singular values next to them.
    uint32_t seed = 21;
    for (dnn::TensorShape shape : std::vector<dnn::TensorShape>{{4, 3}, {3, 5}, {2, 3, 3}}) {
        SCOPED_TRACE(shape.to_string());
        for (int out = 0; out < 3; ++out) {
            single::check_grads(
                    [out](const std::vector<Tensor>& x) {
                        auto usv = svd(x[0], true);
                        return out == 1 ? usv[1] : ew(Mode::MUL, {usv[out], usv[out]});
                    },
                    {shape}, {true}, seed++);
        }
    }
}

TEST(GradLinalg, SVDCompletedFactorsAreNotDifferentiable) {
    // full_matrices of a non-square matrix: the extra columns of U are any orthonormal completion.
    auto x = make(rand_values({3, 2}, 5), {3, 2});
    auto key = GradKey::make();
    key->attach(x);
    key->activate();
    dnn::param::SVD p;
    p.full_matrices = true;
    auto usv = imperative::apply(ops::SVD(p), {&x, 1});
    key->deactivate();
    std::vector<Tensor> ys{usv[1]}, wrt{x};
    EXPECT_THROW(key->backward(ys, {}, wrt), dnn::NotSupportedError);
}
