// The float32 Elemwise modes of elemwise_math_hwy.cpp whose results may differ from naive's by
// rounding (TAN, SIN, COS, POW, ERFCINV in double lanes; EXP, ERF, ERFC, ERFINV, GELU, GELU_GRAD,
// SIGMOID, SILU, TANH, LOG, LOG1P, EXPM1, ATANH, SOFTPLUS and LOGSIGMOID in float) against naive's
// formula, exhaustively: every float32 input for the unary modes (GELU_GRAD: every x with dy = 1),
// and for POW every 64th positive float as the base (and its negation) with exponents spread so
// that b ln |a| covers float's whole range of results (normal, subnormal, past it), integers and
// non-integers; "powb=B" runs POW on every float32 base with the one broadcast exponent B (the
// constant-exponent forms, pow_by_constant). Prints the largest distance to naive in float ULPs and
// where it is, and the largest distance to naive's double value before its rounding (the exact
// value, to far better than a float ULP) in float ULPs of that value's binade, the figure the
// float formulas' comments state (ERFINV's 0.9999, TANH's 0.83); exits 1 where the first passes
// elemwise_f32_max_ulp, 2 for a mode it does not know. Optional arguments: the modes (erf erfc tan
// sin cos pow erfinv erfcinv exp gelu gelu_grad sigmoid silu tanh log log1p expm1 atanh softplus
// logsigmoid powb=B), "target=avx2|avx3|emu128|scalar" to pin Highway's dispatch (default: the
// CPU's best; a comma list, "target=avx3,avx2", checks each against one evaluation of naive's
// formula) and "step=N" to sample every Nth float32 bit pattern of the unary modes instead of all
// (a quick look; the contract is the full sweep).
//   build/dnn/neomeg_elemwise_ulp                     # all of them, a few minutes each on one core
//   build/dnn/neomeg_elemwise_ulp tan target=avx2
//   build/dnn/neomeg_elemwise_ulp log1p softplus target=avx3,avx2
//   build/dnn/neomeg_elemwise_ulp powb=3 powb=-1
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <hwy/targets.h>

#include "neomeg/dnn/dtype.h"
#include "src/naive/elemwise_scalar.h"
#include "src/x86/elemwise_math_hwy.h"

namespace {

using neomeg::dnn::x86::ElemwiseSrc;
using Mode = neomeg::dnn::elemwise::Mode;

int64_t ordered(float f) {
    auto b = static_cast<int64_t>(std::bit_cast<int32_t>(f));
    return b < 0 ? int64_t(INT32_MIN) - b : b;
}

int64_t ulps(float a, float b) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
    return std::abs(ordered(a) - ordered(b));
}

struct Worst {
    int64_t ulp = 0;
    float a = 0, b = 0;
    uint64_t count = 0, off_by_one = 0;
    double exact = 0;  // the largest distance to the exact value, in its binade's float ULPs
    float exact_at = 0;
};

// |got - exact| in float ULPs of exact's binade (subnormal ULPs below float's normal range); 0
// where both are the same infinity or NaN, or exact lies past float's range (got's rounding there
// is the first figure's business).
double ulps_from_exact(float got, double exact) {
    if (std::isnan(exact) || std::isnan(got))
        return std::isnan(exact) && std::isnan(got) ? 0 : INFINITY;
    if (std::isinf(exact) || std::fabs(exact) > 0x1.fffffep127)
        return 0;
    const int e = exact == 0 ? -126 : std::max(std::ilogb(exact), -126);
    return std::fabs(static_cast<double>(got) - exact) / std::ldexp(1.0, e - 23);
}

// Highway targets to pin, one Worst each (0: the CPU's best, unpinned).
std::vector<int64_t> g_targets = {0};

// Runs the x86 kernel on a chunk at each target and folds its distances to naive, computed once,
// into w[t]; `one_b`: b holds one exponent, broadcast to every element.
void check(Mode mode, const std::vector<float>& a, const std::vector<float>* b,
           std::vector<Worst>& w, bool one_b = false) {
    std::vector<double> exact(a.size());
    std::vector<float> want(a.size()), got(a.size());
    auto b_at = [&](size_t i) { return b ? (*b)[one_b ? 0 : i] : 0.0f; };
    for (size_t i = 0; i < a.size(); ++i) {
        double x[4] = {a[i], b_at(i)};
        exact[i] = neomeg::dnn::naive::elemwise::eval_float(mode, x);
        want[i] = static_cast<float>(exact[i]);
    }
    ElemwiseSrc srcs[2] = {{a.data(), false}, {b ? b->data() : nullptr, one_b}};
    for (size_t t = 0; t < g_targets.size(); ++t) {
        if (g_targets[t] != 0)
            hwy::SetSupportedTargetsForTest(g_targets[t]);
        neomeg::dnn::x86::elemwise_math_run(mode, neomeg::dnn::dtype::Float32,
                                            neomeg::dnn::dtype::Float32, srcs, got.data(),
                                            a.size());
        for (size_t i = 0; i < a.size(); ++i) {
            int64_t u = ulps(got[i], want[i]);
            ++w[t].count;
            w[t].off_by_one += u == 1;
            if (u > w[t].ulp) {
                w[t].ulp = u;
                w[t].a = a[i];
                w[t].b = b_at(i);
            }
            const double x = ulps_from_exact(got[i], exact[i]);
            if (x > w[t].exact) {
                w[t].exact = x;
                w[t].exact_at = a[i];
            }
        }
    }
}

// Every step-th float32 bit pattern (step 1: all of them); `dy`: a second operand broadcast to
// every element (GELU_GRAD's).
std::vector<Worst> unary(Mode mode, uint64_t step, const float* dy = nullptr) {
    std::vector<Worst> w(g_targets.size());
    constexpr uint64_t kChunk = 1 << 20;
    std::vector<float> a(kChunk), b = {dy ? *dy : 0.0f};
    for (uint64_t at = 0; at < (uint64_t(1) << 32); at += kChunk * step) {
        for (uint64_t i = 0; i < kChunk; ++i)
            a[i] = std::bit_cast<float>(static_cast<uint32_t>(at + i * step));
        check(mode, a, dy ? &b : nullptr, w, dy != nullptr);
    }
    return w;
}

// POW of every float32 base (NaNs, infinities, zeros and subnormals included) to one exponent.
std::vector<Worst> pow_of_every_float(float b) {
    std::vector<Worst> w(g_targets.size());
    constexpr uint64_t kChunk = 1 << 20;
    std::vector<float> a(kChunk), one_b = {b};
    for (uint64_t at = 0; at < (uint64_t(1) << 32); at += kChunk) {
        for (uint64_t i = 0; i < kChunk; ++i)
            a[i] = std::bit_cast<float>(static_cast<uint32_t>(at + i));
        check(Mode::POW, a, &one_b, w, true);
    }
    return w;
}

std::vector<Worst> pow_sweep() {
    std::vector<Worst> w(g_targets.size());
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> t(-135, 105);  // b ln a: past both ends of float
    std::vector<float> a, b;
    for (uint32_t bits = 1; bits < 0x7f800000u; bits += 64) {
        const float base = std::bit_cast<float>(bits);
        const double la = std::log(static_cast<double>(base));
        for (int j = 0; j < 16; ++j) {
            auto e = static_cast<float>(la != 0 ? t(rng) / la : t(rng));
            float s = base;
            if (j % 4 == 1) {  // a negative base: integral exponents (odd ones negate), NaN others
                s = -base;
                e = j % 8 == 1 ? std::round(e) : e;
            } else if (j % 4 == 2) {
                e = std::round(e * 0.01f);  // small integers
            }
            a.push_back(s);
            b.push_back(e);
        }
        if (a.size() >= (1 << 20)) {
            check(Mode::POW, a, &b, w);
            a.clear();
            b.clear();
        }
    }
    check(Mode::POW, a, &b, w);
    return w;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> modes;
    uint64_t step = 1;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.starts_with("step=")) {
            step = std::stoull(arg.substr(5));
        } else if (arg.starts_with("target=")) {
            g_targets.clear();
            std::string list = arg.substr(7);
            for (size_t at = 0; at <= list.size();) {
                const size_t end = std::min(list.find(',', at), list.size());
                const std::string t = list.substr(at, end - at);
                at = end + 1;
                const int64_t target = t == "avx3"     ? HWY_AVX3
                                       : t == "avx2"   ? HWY_AVX2
                                       : t == "emu128" ? HWY_EMU128
                                       : t == "scalar" ? HWY_SCALAR
                                                       : 0;
                if (target == 0) {
                    std::fprintf(stderr, "unknown target %s\n", t.c_str());
                    return 2;
                }
                if ((hwy::SupportedTargets() & target) == 0) {
                    std::fprintf(stderr, "this CPU lacks %s\n", t.c_str());
                    return 2;
                }
                g_targets.push_back(target);
            }
        } else {
            modes.push_back(arg);
        }
    }
    if (modes.empty())
        modes = {"erf",     "erfc",  "tan",   "sin",       "cos",      "pow",       "erfinv",
                 "erfcinv", "exp",   "gelu",  "gelu_grad", "sigmoid",  "silu",      "tanh",
                 "log",     "log1p", "expm1", "atanh",     "softplus", "logsigmoid"};
    const std::map<std::string, Mode> names = {{"erf", Mode::ERF},
                                               {"erfc", Mode::ERFC},
                                               {"tan", Mode::TAN},
                                               {"sin", Mode::SIN},
                                               {"cos", Mode::COS},
                                               {"pow", Mode::POW},
                                               {"erfinv", Mode::ERFINV},
                                               {"erfcinv", Mode::ERFCINV},
                                               {"exp", Mode::EXP},
                                               {"gelu", Mode::GELU},
                                               {"gelu_grad", Mode::GELU_GRAD},
                                               {"sigmoid", Mode::SIGMOID},
                                               {"silu", Mode::SILU},
                                               {"tanh", Mode::TANH},
                                               {"log", Mode::LOG},
                                               {"log1p", Mode::LOG1P},
                                               {"expm1", Mode::EXPM1},
                                               {"atanh", Mode::ATANH},
                                               {"softplus", Mode::SOFTPLUS},
                                               {"logsigmoid", Mode::LOGSIGMOID}};
    // Every name checked first, so that a typo fails before minutes of sweeping (an unknown name
    // used to run POW's sweep).
    for (const auto& m : modes)
        if (!m.starts_with("powb=") && !names.contains(m)) {
            std::fprintf(stderr, "unknown mode %s\n", m.c_str());
            return 2;
        }
    int status = 0;
    for (const auto& m : modes) {
        const Mode mode = m.starts_with("powb=") ? Mode::POW : names.at(m);
        const bool one_b = m.starts_with("powb=");
        const float dy = 1.0f;
        const std::vector<Worst> ws = one_b ? pow_of_every_float(std::stof(m.substr(5)))
                                      : mode == Mode::POW       ? pow_sweep()
                                      : mode == Mode::GELU_GRAD ? unary(mode, step, &dy)
                                                                : unary(mode, step);
        const int limit = neomeg::dnn::x86::elemwise_f32_max_ulp(mode);
        for (size_t t = 0; t < ws.size(); ++t) {
            const Worst& w = ws[t];
            std::printf("%s%s%s: %llu inputs, %llu one ULP from naive, max %lld ULP (limit %d)",
                        m.c_str(), g_targets[t] ? " at " : "",
                        g_targets[t] ? hwy::TargetName(g_targets[t]) : "",
                        static_cast<unsigned long long>(w.count),
                        static_cast<unsigned long long>(w.off_by_one),
                        static_cast<long long>(w.ulp), limit);
            if (w.ulp > 0)
                std::printf(" first at %a", static_cast<double>(w.a));
            if (w.ulp > 0 && mode == Mode::POW)
                std::printf(", %a", static_cast<double>(w.b));
            std::printf("; max %.4f ULP from the exact value", w.exact);
            if (w.exact > 0)
                std::printf(" at %a", static_cast<double>(w.exact_at));
            std::printf("\n");
            std::fflush(stdout);
            status |= w.ulp > limit;
        }
    }
    return status;
}
