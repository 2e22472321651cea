// Backward rules through complex64 (grad_rules/elemwise_complex.cpp and Elemwise's complex MUL):
// real functions of real inputs that pass through CreateComplex, the ring modes (broadcast
// included) and ComplexPart, against central differences, first and second order.
#include <gtest/gtest.h>

#include "grad_check.h"

using namespace neomeg;
using namespace neomeg::imperative;
using namespace neomeg::imperative::grad_check;

namespace {

using Part = dnn::param::ComplexPart::Part;

Tensor cplx(const Tensor& re, const Tensor& im) {
    std::vector<Tensor> in{re, im};
    return imperative::apply(ops::CreateComplex(dnn::param::Empty{}), in)[0];
}

Tensor part(const Tensor& z, Part p) {
    dnn::param::ComplexPart param;
    param.part = p;
    return imperative::apply(ops::ComplexPart(param), {&z, 1})[0];
}

// Re(-(z c) + z z - c) * Im(z) + Im(z c): every complex op, c broadcast along z's rows.
std::vector<Tensor> through_complex(const std::vector<Tensor>& x) {
    Tensor z = cplx(x[0], x[1]), c = cplx(x[2], x[3]);
    Tensor zc = ew(Mode::MUL, {z, c});
    Tensor q = ew(Mode::SUB, {ew(Mode::ADD, {ew(Mode::NEGATE, {zc}), ew(Mode::MUL, {z, z})}), c});
    return {ew(Mode::ADD,
               {ew(Mode::MUL, {part(q, Part::REAL), part(z, Part::IMAG)}), part(zc, Part::IMAG)})};
}

}  // namespace

TEST(GradComplex, ThroughEveryComplexOp) {
    std::vector<In> ins{{rand_values({2, 3}, 1), {2, 3}},
                        {rand_values({2, 3}, 2), {2, 3}},
                        {rand_values({3}, 3), {3}},
                        {rand_values({3}, 4), {3}}};
    check_grad(through_complex, ins);
    check_second(through_complex, ins);
}

TEST(GradComplex, MegEngineExample) {
    // z = x + iy, w = Re(z z) + Im(z): dw/dx = 2x, dw/dy = 1 - 2y.
    std::vector<float> xv{1.5f, -2.f}, yv{0.5f, 3.f};
    Tensor x = make(xv, {2}), y = make(yv, {2});
    auto key = GradKey::make();
    key->attach(x);
    key->attach(y);
    key->activate();
    Tensor z = cplx(x, y);
    Tensor w = ew(Mode::ADD, {part(ew(Mode::MUL, {z, z}), Part::REAL), part(z, Part::IMAG)});
    key->deactivate();
    std::vector<Tensor> ys{w}, dys{make({1.f, 1.f}, {2})}, xs{x, y};
    auto g = key->backward(ys, dys, xs);
    EXPECT_EQ(values(g[0]), (std::vector<float>{3.f, -4.f}));
    EXPECT_EQ(values(g[1]), (std::vector<float>{0.f, -5.f}));
}
