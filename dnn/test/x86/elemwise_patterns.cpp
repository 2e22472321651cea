// Elemwise's vector loops are compiled once per broadcast pattern of a run's operands (which are
// dense and which one value: Operands in elemwise_hwy-inl.h). These tests run every pattern at
// run lengths around each target's vector width (4, 8, 16 floats; 16, 32, 64 bytes) and
// run_float_special's four-vector step, at each Highway target: through the operator against
// naive for every mode the kernels claim (float32, int32, comparisons into bool, bool), and
// through elemwise_run against naive's scalar formula, there also with every operand one value
// (no operator call makes such a run longer than one element); and elemwise_run_rows, runs that
// follow one another in one call, against elemwise_run run by run.
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

namespace {

// elemwise_run_rows over `count` runs of n against elemwise_run run by run, bit for bit, for every
// pattern of m's operands: a broadcast operand steps one value a run (a per-channel slope), a
// dense one n (joined into one long run where n is at least a vector) or n + 3 (padded rows:
// run by run); dst steps as the dense operands. The elements between padded rows stay untouched.
void check_rows(Mode m, size_t count, size_t n, ptrdiff_t pad) {
    std::mt19937 rng(static_cast<unsigned>(count * 1000 + n));
    std::uniform_real_distribution<float> uniform(0.1f, 0.9f);
    const size_t ar = arity(m), pitch = n + static_cast<size_t>(pad), size = count * pitch + 1;
    std::vector<std::vector<float>> values(ar, std::vector<float>(size));
    for (auto& v : values)
        for (float& x : v)
            x = uniform(rng) * (uniform(rng) > 0.5f ? 1 : -1);
    for (unsigned pattern = 0; pattern + 1 < (1u << ar); ++pattern) {
        std::vector<x86::ElemwiseSrc> src(ar);
        x86::ElemwiseRows rows{count, {}, static_cast<ptrdiff_t>(pitch)};
        for (size_t k = 0; k < ar; ++k) {
            bool b = ((pattern >> k) & 1) != 0;
            src[k] = {values[k].data(), b};
            rows.step[k] = b ? 1 : static_cast<ptrdiff_t>(pitch);
        }
        std::vector<float> got(size, 77.f), want(size, 77.f);
        if (!x86::elemwise_run_rows(m, dtype::Float32, dtype::Float32, src.data(), got.data(), n,
                                    rows))
            continue;  // a mode of the double-formula files: their callers run rows one by one
        for (size_t r = 0; r < count; ++r) {
            std::vector<x86::ElemwiseSrc> at(src);
            for (size_t k = 0; k < ar; ++k)
                at[k].p = values[k].data() + r * static_cast<size_t>(rows.step[k]);
            x86::elemwise_run(m, dtype::Float32, dtype::Float32, at.data(), want.data() + r * pitch,
                              n);
        }
        ASSERT_EQ(std::memcmp(got.data(), want.data(), size * sizeof(float)), 0)
                << param::to_string(m) << " pattern " << pattern << " count " << count << " n " << n
                << " pad " << pad;
    }
}

}  // namespace

TEST_F(X86, ElemwiseRowsInOneCallMatchRunByRun) {
    at_each_target([&] {
        size_t ran = 0;
        for (Mode m : claimed(dtype::Float32, dtype::Float32)) {
            if (arity(m) < 2)
                continue;
            for (size_t n : {1, 3, 4, 5, 8, 9, 15, 16, 17, 31, 33, 49, 64, 65})
                for (ptrdiff_t pad : {0, 3}) {
                    check_rows(m, 1, n, pad);
                    check_rows(m, 7, n, pad);
                }
            ++ran;
        }
        EXPECT_GE(ran, 10u);
    });
}

// Per-channel operands that are not expanded into a block (fewer than four images, or a block
// past 4096 elements): the rows of a batch go to the kernels in one call, joined where they are at
// least a vector long, cut by the threads' ranges anywhere in a row (the large shapes).
TEST_F(X86, ElemwisePerChannelRowsInOneCall) {
    const std::vector<std::vector<TensorShape>> pairs = {
            {{2, 40, 7, 7}, {1, 40, 1, 1}},
            {{3, 33, 17}, {1, 33, 1}},
            {{2, 50, 15}, {1, 50, 1}},
            {{2, 9, 16, 16}, {1, 9, 1, 1}},
            {{2, 50, 3}, {1, 50, 1}},
            {{300, 17}, {300, 1}},
            {{5, 700, 7, 7}, {1, 700, 1, 1}},
            {{4, 120, 14, 14}, {1, 120, 1, 1}},
            {{2, 3, 40, 7, 7}, {1, 1, 40, 1, 1}},
    };
    at_each_target([&] {
        for (Mode m : claimed(dtype::Float32, dtype::Float32)) {
            if (arity(m) < 2)
                continue;
            Checker<Elemwise> c(handle.get());
            param::Elemwise p;
            p.mode = m;
            c.set_param(p).set_epsilon(x86::elemwise_f32_max_ulp(m) * 0x1p-23);
            set_inputs(c, m, dtype::Float32);
            for (const auto& shapes : pairs)
                for (size_t big = 0; big < arity(m); ++big) {
                    std::vector<TensorShape> in(arity(m), shapes[1]);
                    in[big] = shapes[0];
                    c.execs(in);
                }
        }
        Checker<Elemwise> i(handle.get());
        param::Elemwise p;
        p.mode = Mode::ADD;
        i.set_param(p).set_epsilon(0).set_dtype(0, dtype::Int32).set_dtype(1, dtype::Int32);
        i.execs({{2, 40, 7, 7}, {1, 40, 1, 1}}).execs({{5, 700, 7, 7}, {1, 700, 1, 1}});
        Checker<Elemwise> h(handle.get());
        p.mode = Mode::MUL;
        h.set_param(p).set_dtype(0, dtype::Float16).set_dtype(1, dtype::Float16);
        h.execs({{2, 40, 7, 7}, {1, 40, 1, 1}});
    });
}
