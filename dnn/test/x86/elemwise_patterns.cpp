// Elemwise's vector loops are compiled once per broadcast pattern of a run's operands (which are
// dense and which one value: Operands in elemwise_hwy-inl.h). These tests run every pattern at
// run lengths around each target's vector width (4, 8, 16 floats; 16, 32, 64 bytes) and
// run_float_special's four-vector step, at each Highway target: through the operator against
// naive for every mode the kernels claim (float32, int32, comparisons into bool, bool), and
// through elemwise_run against naive's scalar formula, there also with every operand one value
// (no operator call makes such a run longer than one element).
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/param_base.h"
#include "src/naive/elemwise_scalar.h"
#include "src/x86/elemwise_hwy.h"
#include "src/x86/elemwise_math_hwy.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Elemwise::Mode;

constexpr size_t kLengths[] = {0, 1, 3, 4, 5, 15, 16, 17, 31, 33, 63, 64, 65, 67, 129, 131};

size_t arity(Mode m) {
    return static_cast<size_t>(param::Elemwise::arity(m));
}

// Modes the kernels claim for data -> dst; COND (a bool condition beside the data) apart.
std::vector<Mode> claimed(DType data, DType dst) {
    std::vector<Mode> r;
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i) {
        auto m = static_cast<Mode>(i);
        if (m != Mode::COND && x86::elemwise_supported(m, data, dst))
            r.push_back(m);
    }
    return r;
}

// Inputs inside every float mode's domain (logarithms, inverse sines, ERFCINV's (0, 2)), but
// ACOSH's, which starts at 1.
void set_inputs(Checker<Elemwise>& c, Mode m, DType data) {
    for (size_t i = 0; i < arity(m); ++i) {
        c.set_dtype(i, data);
        if (data == dtype::Float32)
            c.set_range(i, m == Mode::ACOSH ? 1.1 : 0.1, m == Mode::ACOSH ? 3.0 : 0.9);
        else if (data == dtype::Int32)
            c.set_range(i, m == Mode::SHL || m == Mode::SHR ? 0 : -1000, 1000);
    }
}

// Every pattern but all-broadcast (whose dst would be one element) at every length: operand k
// is {1} where bit k of the pattern is set, {n} elsewhere.
void check_patterns(Handle* handle, DType data, DType dst) {
    const auto modes = claimed(data, dst);
    ASSERT_FALSE(modes.empty());
    for (Mode m : modes) {
        Checker<Elemwise> c(handle);
        param::Elemwise p;
        p.mode = m;
        c.set_param(p).set_epsilon(data == dtype::Float32 ? x86::elemwise_f32_max_ulp(m) * 0x1p-23
                                                          : 0);
        set_inputs(c, m, data);
        const unsigned all = (1u << arity(m)) - 1;
        for (unsigned pattern = 0; pattern < all; ++pattern)
            for (size_t n : kLengths) {
                std::vector<TensorShape> in(arity(m));
                for (size_t k = 0; k < in.size(); ++k)
                    in[k] = (pattern >> k) & 1 ? TensorShape{1} : TensorShape{n};
                c.execs(in);
            }
    }
}

template <class Body>
void at_each_target(Body&& body) {
    body();
#ifdef NEOMEG_WITH_DNNL
    for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) { body(); });
#endif
}

}  // namespace

TEST_F(X86, ElemwiseEveryBroadcastPatternFloat32) {
    at_each_target([&] { check_patterns(handle.get(), dtype::Float32, dtype::Float32); });
}

TEST_F(X86, ElemwiseEveryBroadcastPatternInt32AndBool) {
    at_each_target([&] {
        check_patterns(handle.get(), dtype::Int32, dtype::Int32);
        check_patterns(handle.get(), dtype::Float32, dtype::Bool);
        check_patterns(handle.get(), dtype::Int32, dtype::Bool);
        check_patterns(handle.get(), dtype::Bool, dtype::Bool);
    });
}

namespace {

// elemwise_run of `m` on operands of T (every pattern of them, all-broadcast included) into dst
// of U, against naive's scalar formula element by element, exactly. The modes are single IEEE
// operations, comparisons or integer formulas: naive's double result rounds to the same float.
template <class T, class U>
void check_run(Mode m, DType data, DType dst_dtype) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> uniform(-2.0, 2.0);
    const size_t ar = arity(m), most = 131;
    std::vector<std::vector<T>> values(ar, std::vector<T>(most));
    for (auto& v : values)
        for (T& x : v)
            x = data == dtype::Bool ? T(uniform(rng) > 0)
                                    : T(uniform(rng) * (sizeof(T) > 1 ? 500 : 1));
    for (unsigned pattern = 0; pattern < (1u << ar); ++pattern)
        for (size_t n : kLengths) {
            std::vector<x86::ElemwiseSrc> src(ar);
            for (size_t k = 0; k < ar; ++k)
                src[k] = {values[k].data(), ((pattern >> k) & 1) != 0};
            std::vector<U> got(n + 1, U(77));  // one past the run: must stay
            x86::elemwise_run(m, data, dst_dtype, src.data(), got.data(), n);
            for (size_t i = 0; i < n; ++i) {
                double xd[4] = {};
                int64_t xi[4] = {};
                for (size_t k = 0; k < ar; ++k) {
                    T v = src[k].broadcast ? values[k][0] : values[k][i];
                    xd[k] = static_cast<double>(v);
                    xi[k] = static_cast<int64_t>(v);
                }
                U want;
                if (data == dtype::Float32)
                    want = static_cast<U>(naive::elemwise::eval_float(m, xd));
                else
                    want = static_cast<U>(naive::elemwise::eval_int(m, xi, data));
                ASSERT_EQ(std::memcmp(&got[i], &want, sizeof(U)), 0)
                        << param::to_string(m) << " pattern " << pattern << " n " << n << " i " << i
                        << ": " << +got[i] << " for " << +want;
            }
            ASSERT_EQ(got[n], U(77)) << param::to_string(m) << " pattern " << pattern << " n " << n;
        }
}

}  // namespace

TEST_F(X86, ElemwiseRunEveryBroadcastPattern) {
    at_each_target([&] {
        for (Mode m : {Mode::ADD, Mode::SUB, Mode::TRUE_DIV, Mode::MAX, Mode::SWITCH_GT0,
                       Mode::CLIP, Mode::NEGATE})
            check_run<float, float>(m, dtype::Float32, dtype::Float32);
        for (Mode m : {Mode::SUB, Mode::MAX})
            check_run<int32_t, int32_t>(m, dtype::Int32, dtype::Int32);
        check_run<float, uint8_t>(Mode::LT, dtype::Float32, dtype::Bool);
        check_run<uint8_t, uint8_t>(Mode::XOR, dtype::Bool, dtype::Bool);
    });
}
