// Backward rules of Elemwise. Each mode's gradient is built from Elemwise modes; the fused
// *_GRAD modes keep first-order backward to one kernel, and their own rules (composed from basic
// modes) keep higher orders working.
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/imperative/op_def.h"
#include "ops_util.h"

namespace neomeg::imperative {

// The remaining modes (elemwise_more.cpp).
std::vector<Tensor> elemwise_more_grad(const OpDef&, std::span<const Tensor>,
                                       std::span<const Tensor>, std::span<const Tensor>,
                                       std::span<const bool>);

namespace {

using namespace grad_util;

std::vector<Tensor> elemwise_grad(const OpDef& def, std::span<const Tensor> x,
                                  std::span<const Tensor> y, std::span<const Tensor> dy_all,
                                  std::span<const bool> needs) {
    const auto mode = static_cast<const ops::Elemwise&>(def).param().mode;
    const Tensor& dy = dy_all[0];
    std::vector<Tensor> g(x.size());
    auto set = [&](size_t i, auto&& make) {
        if (needs[i])
            g[i] = reduce_to(make(), x[i].shape());
    };
    switch (mode) {
        case Mode::ADD:
            set(0, [&] { return dy; });
            set(1, [&] { return dy; });
            break;
        case Mode::SUB:
            set(0, [&] { return dy; });
            set(1, [&] { return elemwise(Mode::NEGATE, {dy}); });
            break;
        case Mode::MUL:  // complex: PyTorch's convention, dy times the conjugate derivative
            set(0, [&] { return elemwise(Mode::MUL, {dy, conj(x[1])}); });
            set(1, [&] { return elemwise(Mode::MUL, {dy, conj(x[0])}); });
            break;
        case Mode::TRUE_DIV:  // d(a/b) = da/b - a*db/b^2
            set(0, [&] { return elemwise(Mode::TRUE_DIV, {dy, x[1]}); });
            set(1, [&] {
                Tensor q = elemwise(Mode::TRUE_DIV, {y[0], x[1]});
                return elemwise(Mode::NEGATE, {elemwise(Mode::MUL, {dy, q})});
            });
            break;
        case Mode::NEGATE:
            set(0, [&] { return elemwise(Mode::NEGATE, {dy}); });
            break;
        case Mode::EXP:
            set(0, [&] { return elemwise(Mode::MUL, {dy, y[0]}); });
            break;
        case Mode::LOG:
            set(0, [&] { return elemwise(Mode::TRUE_DIV, {dy, x[0]}); });
            break;
        case Mode::SQUARE:
            set(0, [&] {
                Tensor two = scalar_like(x[0], 2);
                return elemwise(Mode::MUL, {dy, elemwise(Mode::MUL, {x[0], two})});
            });
            break;
        case Mode::POW:  // d(a^b) = b*a^(b-1) da + a^b*log(a) db
            set(0, [&] {
                Tensor bm1 = elemwise(Mode::SUB, {x[1], scalar_like(x[1], 1)});
                Tensor d = elemwise(Mode::MUL, {x[1], elemwise(Mode::POW, {x[0], bm1})});
                return elemwise(Mode::MUL, {dy, d});
            });
            set(1, [&] {
                Tensor d = elemwise(Mode::MUL, {y[0], elemwise(Mode::LOG, {x[0]})});
                return elemwise(Mode::MUL, {dy, d});
            });
            break;
        case Mode::TANH:
            set(0, [&] { return elemwise(Mode::TANH_GRAD, {y[0], dy}); });
            break;
        case Mode::SIGMOID:
            set(0, [&] { return elemwise(Mode::SIGMOID_GRAD, {y[0], dy}); });
            break;
        case Mode::RELU:
            set(0, [&] { return elemwise(Mode::SWITCH_GT0, {x[0], dy}); });
            break;
        case Mode::TANH_GRAD: {  // f(y, d) = d * (1 - y^2)
            Tensor one = scalar_like(x[0], 1);
            set(0, [&] {  // -2 y d
                Tensor t = elemwise(Mode::MUL, {x[0], x[1]});
                return elemwise(Mode::MUL, {dy, elemwise(Mode::MUL, {t, scalar_like(x[0], -2)})});
            });
            set(1, [&] {
                Tensor t = elemwise(Mode::SUB, {one, elemwise(Mode::MUL, {x[0], x[0]})});
                return elemwise(Mode::MUL, {dy, t});
            });
            break;
        }
        case Mode::SIGMOID_GRAD: {  // f(y, d) = d * y * (1 - y)
            Tensor one = scalar_like(x[0], 1);
            set(0, [&] {  // d * (1 - 2y)
                Tensor t = elemwise(Mode::SUB,
                                    {one, elemwise(Mode::MUL, {x[0], scalar_like(x[0], 2)})});
                return elemwise(Mode::MUL, {dy, elemwise(Mode::MUL, {x[1], t})});
            });
            set(1, [&] {
                Tensor t = elemwise(Mode::MUL, {x[0], elemwise(Mode::SUB, {one, x[0]})});
                return elemwise(Mode::MUL, {dy, t});
            });
            break;
        }
        case Mode::SWITCH_GT0:  // f(x, d) = x > 0 ? d : 0; flat in x
            set(1, [&] { return elemwise(Mode::SWITCH_GT0, {x[0], dy}); });
            break;
        default:
            return elemwise_more_grad(def, x, y, dy_all, needs);
    }
    return g;
}

}  // namespace

NM_REGISTER_GRAD(Elemwise, elemwise_grad);

}  // namespace neomeg::imperative
