// Backward rules of the Elemwise modes that elemwise.cpp's switch leaves to this file: the
// remaining smooth unary modes, the piecewise ones (MAX, MIN, CLIP, MOD, PRELU), the fused
// multi-input modes, COND, and the fused *_GRAD modes that the first-order rules use. A *_GRAD mode
// f(x, d) = d * g'(x) is linear in d, so its gradient w.r.t. d is the same mode applied to the
// incoming gradient, and w.r.t. x it is d * g''(x) * dy; that keeps second derivatives working.
//
// Non-differentiable modes: ROUND, FLOOR, CEIL, SIGN and FLOOR_DIV are piecewise constant and
// give no gradient at all (None in Python, as MegEngine), rather than a tensor of zeros; their
// integer- and bool-valued siblings (comparisons, logical ops, ISNAN/ISINF, shifts) are never
// recorded (GradKey::record skips ops without a float output).
#include <numbers>

#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/tensor_basic.h"
#include "ops_util.h"

namespace neomeg::imperative {

using namespace grad_util;

namespace {

Tensor mul(const Tensor& a, const Tensor& b) {
    return elemwise(Mode::MUL, {a, b});
}

// dy where mask holds, else 0 (mask is bool; the result has the broadcast shape).
Tensor where(const Tensor& mask, const Tensor& dy) {
    return elemwise(Mode::COND, {mask, dy, scalar_like(dy, 0)});
}

// 1 / sqrt(t)
Tensor rsqrt(const Tensor& t) {
    return elemwise(Mode::RSQRT, {t});
}

}  // namespace

// Called by elemwise.cpp's default case with the same arguments as elemwise_grad.
std::vector<Tensor> elemwise_more_grad(const OpDef& def, std::span<const Tensor> x,
                                       std::span<const Tensor> y, std::span<const Tensor> dy_all,
                                       std::span<const bool> needs) {
    const auto mode = static_cast<const ops::Elemwise&>(def).param().mode;
    const Tensor& dy = dy_all[0];
    std::vector<Tensor> g(x.size());
    auto set = [&](size_t i, auto&& make) {
        if (needs[i])
            g[i] = reduce_to(make(), x[i].shape());
    };
    auto one = [&] { return scalar_like(x[0], 1); };
    auto fused = [&](Mode m) { set(0, [&] { return elemwise(m, {x[0], dy}); }); };
    switch (mode) {
        case Mode::ABS:
            fused(Mode::ABS_GRAD);
            break;
        case Mode::EXPM1:  // exp(x) = y + 1
            set(0, [&] { return mul(dy, elemwise(Mode::ADD, {y[0], one()})); });
            break;
        case Mode::LOG1P:
            set(0, [&] {
                return elemwise(Mode::TRUE_DIV, {dy, elemwise(Mode::ADD, {x[0], one()})});
            });
            break;
        case Mode::SQRT:  // 1 / (2 sqrt(x))
            set(0, [&] { return elemwise(Mode::TRUE_DIV, {dy, mul(y[0], scalar_like(x[0], 2))}); });
            break;
        case Mode::RSQRT:  // -x^(-3/2) / 2 = -y^3 / 2
            set(0, [&] {
                Tensor y3 = mul(mul(y[0], y[0]), y[0]);
                return mul(dy, mul(y3, scalar_like(x[0], -0.5f)));
            });
            break;
        case Mode::SIN:
            set(0, [&] { return mul(dy, elemwise(Mode::COS, {x[0]})); });
            break;
        case Mode::COS:
            set(0, [&] { return mul(dy, elemwise(Mode::NEGATE, {elemwise(Mode::SIN, {x[0]})})); });
            break;
        case Mode::TAN:  // 1 + tan^2
            set(0, [&] { return mul(dy, elemwise(Mode::ADD, {one(), mul(y[0], y[0])})); });
            break;
        case Mode::ASIN:
        case Mode::ACOS:
            set(0, [&] {
                Tensor d = rsqrt(elemwise(Mode::SUB, {one(), mul(x[0], x[0])}));
                if (mode == Mode::ACOS)
                    d = elemwise(Mode::NEGATE, {d});
                return mul(dy, d);
            });
            break;
        case Mode::ATAN:
            set(0, [&] {
                return elemwise(Mode::TRUE_DIV,
                                {dy, elemwise(Mode::ADD, {one(), mul(x[0], x[0])})});
            });
            break;
        case Mode::SINH:
            set(0, [&] { return mul(dy, elemwise(Mode::COSH, {x[0]})); });
            break;
        case Mode::COSH:
            set(0, [&] { return mul(dy, elemwise(Mode::SINH, {x[0]})); });
            break;
        case Mode::ASINH:
            set(0, [&] { return mul(dy, rsqrt(elemwise(Mode::ADD, {mul(x[0], x[0]), one()}))); });
            break;
        case Mode::ACOSH:
            set(0, [&] { return mul(dy, rsqrt(elemwise(Mode::SUB, {mul(x[0], x[0]), one()}))); });
            break;
        case Mode::ATANH:
            set(0, [&] {
                return elemwise(Mode::TRUE_DIV,
                                {dy, elemwise(Mode::SUB, {one(), mul(x[0], x[0])})});
            });
            break;
        case Mode::ERF:
        case Mode::ERFC:  // +-2/sqrt(pi) exp(-x^2)
            set(0, [&] {
                float c = static_cast<float>(2 * std::numbers::inv_sqrtpi) *
                          (mode == Mode::ERF ? 1 : -1);
                Tensor e = elemwise(Mode::EXP, {elemwise(Mode::NEGATE, {mul(x[0], x[0])})});
                return mul(dy, mul(e, scalar_like(x[0], c)));
            });
            break;
        case Mode::ERFINV:
        case Mode::ERFCINV:  // inverse functions: +-sqrt(pi)/2 exp(y^2)
            set(0, [&] {
                float c = static_cast<float>(0.5 / std::numbers::inv_sqrtpi) *
                          (mode == Mode::ERFINV ? 1 : -1);
                Tensor e = elemwise(Mode::EXP, {mul(y[0], y[0])});
                return mul(dy, mul(e, scalar_like(x[0], c)));
            });
            break;
        case Mode::GELU:
            fused(Mode::GELU_GRAD);
            break;
        case Mode::SILU:
            fused(Mode::SILU_GRAD);
            break;
        case Mode::H_SWISH:
            fused(Mode::H_SWISH_GRAD);
            break;
        case Mode::HSIGMOID:
            fused(Mode::HSIGMOID_GRAD);
            break;
        case Mode::RELU6:
            fused(Mode::RELU6_GRAD);
            break;
        case Mode::SOFTPLUS:
            fused(Mode::SOFTPLUS_GRAD);
            break;
        case Mode::LOGSIGMOID:
            fused(Mode::LOGSIGMOID_GRAD);
            break;
        case Mode::ROUND:
        case Mode::FLOOR:
        case Mode::CEIL:
        case Mode::SIGN:
        case Mode::FLOOR_DIV:
            break;       // no gradient: a parameter reached only through them keeps grad None
        case Mode::MOD:  // fmod(a, b) = a - trunc(a/b) * b on floats (integers have no gradient)
            set(0, [&] { return dy; });
            set(1, [&] {
                // trunc(a/b) as (a - fmod(a, b)) / b: the difference is an exact multiple of b.
                Tensor q = elemwise(
                        Mode::TRUE_DIV,
                        {elemwise(Mode::SUB, {x[0], elemwise(Mode::MOD, {x[0], x[1]})}), x[1]});
                return elemwise(Mode::NEGATE, {mul(dy, q)});
            });
            break;
        case Mode::MAX:
        case Mode::MIN: {
            // MegEngine 1.13's rule (COND_LEQ_MOV for input 0, COND_LT_MOV for input 1): a tie's
            // gradient goes to input 0 alone, so max(x, x) has derivative 1, not 2; where either
            // input is NaN, neither gets any. The inputs are compared, not the output.
            // For MAX, input 0 wins where x1 <= x0; for MIN where x0 <= x1.
            const bool max = mode == Mode::MAX;
            const Tensor &lo = max ? x[1] : x[0], &hi = max ? x[0] : x[1];
            set(0, [&] { return where(elemwise(Mode::LEQ, {lo, hi}), dy); });
            set(1, [&] { return where(elemwise(Mode::LT, {hi, lo}), dy); });
            break;
        }
        case Mode::ATAN2: {  // d atan2(a, b) = (b da - a db) / (a^2 + b^2)
            auto r2 = [&] { return elemwise(Mode::ADD, {mul(x[0], x[0]), mul(x[1], x[1])}); };
            set(0, [&] { return elemwise(Mode::TRUE_DIV, {mul(dy, x[1]), r2()}); });
            set(1, [&] {
                return elemwise(Mode::NEGATE, {elemwise(Mode::TRUE_DIV, {mul(dy, x[0]), r2()})});
            });
            break;
        }
        case Mode::LOG_SUM_EXP:  // d/da = exp(a - y)
            set(0, [&] {
                return mul(dy, elemwise(Mode::EXP, {elemwise(Mode::SUB, {x[0], y[0]})}));
            });
            set(1, [&] {
                return mul(dy, elemwise(Mode::EXP, {elemwise(Mode::SUB, {x[1], y[0]})}));
            });
            break;
        case Mode::CLIP: {
            // y = min(max(x, lo), hi) with hi winning where lo > hi, as the kernel computes it.
            const Tensor &v = x[0], &lo = x[1], &hi = x[2];
            set(0, [&] {
                Tensor in = elemwise(Mode::AND,
                                     {elemwise(Mode::LEQ, {lo, v}), elemwise(Mode::LEQ, {v, hi})});
                return where(in, dy);
            });
            set(1, [&] {
                Tensor below = elemwise(
                        Mode::AND, {elemwise(Mode::LT, {v, lo}), elemwise(Mode::LEQ, {lo, hi})});
                return where(below, dy);
            });
            set(2, [&] {
                return where(elemwise(Mode::LT, {hi, elemwise(Mode::MAX, {v, lo})}), dy);
            });
            break;
        }
        case Mode::PRELU: {  // x < 0 ? x * slope : x: the select's gradient, 1 for x at 0
            Tensor below = elemwise(Mode::LT, {x[0], scalar_like(x[0], 0)});
            set(0, [&] { return elemwise(Mode::COND, {below, mul(dy, x[1]), dy}); });
            set(1, [&] { return where(below, mul(dy, x[0])); });
            break;
        }
        case Mode::FUSE_MUL_ADD3:
            set(0, [&] { return mul(dy, x[1]); });
            set(1, [&] { return mul(dy, x[0]); });
            set(2, [&] { return dy; });
            break;
        case Mode::FUSE_MUL_ADD4:
            set(0, [&] { return mul(dy, x[1]); });
            set(1, [&] { return mul(dy, x[0]); });
            set(2, [&] { return mul(dy, x[3]); });
            set(3, [&] { return mul(dy, x[2]); });
            break;
        case Mode::COND:  // the bool condition gets none
            set(1, [&] { return where(x[0], dy); });
            set(2, [&] { return elemwise(Mode::COND, {x[0], scalar_like(dy, 0), dy}); });
            break;
        // *_GRAD modes f(x, d): input 1 gets the mode applied to dy; input 0 gets d g''(x) dy.
        case Mode::ABS_GRAD:  // g'' = 0 (away from 0)
        case Mode::HSIGMOID_GRAD:
        case Mode::RELU6_GRAD:
            set(1, [&] { return elemwise(mode, {x[0], dy}); });
            break;
        case Mode::H_SWISH_GRAD:  // g'' = 1/3 on (-3, 3) = 2 * HSIGMOID_GRAD
            set(0, [&] {
                Tensor t = elemwise(Mode::HSIGMOID_GRAD, {x[0], mul(x[1], dy)});
                return mul(t, scalar_like(x[0], 2));
            });
            set(1, [&] { return elemwise(mode, {x[0], dy}); });
            break;
        case Mode::GELU_GRAD:  // g'' = phi(x) (2 - x^2)
            set(0, [&] {
                Tensor xx = mul(x[0], x[0]);
                Tensor phi = elemwise(Mode::EXP, {mul(xx, scalar_like(x[0], -0.5f))});
                float c = static_cast<float>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
                Tensor d2 = mul(mul(phi, scalar_like(x[0], c)),
                                elemwise(Mode::SUB, {scalar_like(x[0], 2), xx}));
                return mul(mul(x[1], dy), d2);
            });
            set(1, [&] { return elemwise(mode, {x[0], dy}); });
            break;
        case Mode::SILU_GRAD:  // g'' = s (1 - s) (2 + x (1 - 2 s))
            set(0, [&] {
                Tensor s = elemwise(Mode::SIGMOID, {x[0]});
                Tensor t = elemwise(Mode::SUB, {one(), mul(s, scalar_like(x[0], 2))});
                Tensor u = elemwise(Mode::ADD, {scalar_like(x[0], 2), mul(x[0], t)});
                return elemwise(Mode::SIGMOID_GRAD, {s, mul(mul(x[1], dy), u)});
            });
            set(1, [&] { return elemwise(mode, {x[0], dy}); });
            break;
        case Mode::SOFTPLUS_GRAD:  // g'' = s (1 - s)
            set(0, [&] {
                return elemwise(Mode::SIGMOID_GRAD,
                                {elemwise(Mode::SIGMOID, {x[0]}), mul(x[1], dy)});
            });
            set(1, [&] { return elemwise(mode, {x[0], dy}); });
            break;
        case Mode::LOGSIGMOID_GRAD:  // g' = s(-x), g'' = -s(-x) (1 - s(-x))
            set(0, [&] {
                Tensor s = elemwise(Mode::SIGMOID, {elemwise(Mode::NEGATE, {x[0]})});
                return elemwise(Mode::NEGATE, {elemwise(Mode::SIGMOID_GRAD, {s, mul(x[1], dy)})});
            });
            set(1, [&] { return elemwise(mode, {x[0], dy}); });
            break;
        case Mode::NOT:
        case Mode::ISNAN:
        case Mode::ISINF:
        case Mode::EQ:
        case Mode::NE:
        case Mode::LT:
        case Mode::LEQ:
        case Mode::AND:
        case Mode::OR:
        case Mode::XOR:
        case Mode::SHL:
        case Mode::SHR:
            break;  // bool or integer results: no gradient flows through them
        default:
            throw dnn::NotSupportedError(dnn::str_cat(def.to_string(), ": no backward rule"));
    }
    return g;
}

}  // namespace neomeg::imperative
