// CheckNonFinite on the x86 handle against naive and known answers: float32, float16 and bfloat16
// inputs holding a NaN or an infinity at the start, the middle, the vector tail or the last
// element of sizes 1, primes and above the threading grain; several inputs of mixed dtypes; the
// largest finite values; padded and reversed views; transposed views (naive).
#include <limits>

#include "neomeg/dnn/operators/random.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Runs the x86 operator and returns dst's value, checking it against naive's.
int32_t check(Handle& handle, const std::vector<HostTensor>& inputs,
              std::string* kernel = nullptr) {
    auto op = handle.create_operator<CheckNonFinite>();
    auto got = run_op(*op, inputs);
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<CheckNonFinite>();
    auto want = run_op(*ref, inputs);
    EXPECT_EQ(got[0].values(), want[0].values());
    if (kernel)
        *kernel = last_kernel(*op);
    return static_cast<int32_t>(got[0].values()[0]);
}

}  // namespace

TEST_F(X86, CheckNonFiniteFindsEachPosition) {
    const double bad[] = {std::numeric_limits<double>::quiet_NaN(),
                          std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity()};
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (size_t n : {size_t(1), size_t(7), size_t(67), size_t(300007)}) {
            std::vector<double> v(n, 1.5);
            HostTensor clean({n}, dt);
            clean.set_values(v);
            std::string kernel;
            EXPECT_EQ(check(*handle, {clean}, &kernel), 0) << dt.name() << " " << n;
            EXPECT_EQ(kernel, "hwy");
            for (size_t pos : {size_t(0), n / 2, n - 1, n >= 3 ? n - 3 : 0})
                for (double x : bad) {
                    std::vector<double> w = v;
                    w[pos] = x;
                    HostTensor t({n}, dt);
                    t.set_values(w);
                    EXPECT_EQ(check(*handle, {clean, t}), 1) << dt.name() << " " << n << " " << pos;
                }
        }
}

TEST_F(X86, CheckNonFiniteLargeFiniteValuesAreFinite) {
    // The largest finite values are not infinite: only an all-ones exponent is.
    HostTensor f({3}, dtype::Float32), h({2}, dtype::Float16), b({2}, dtype::BFloat16);
    f.set_values({3.4e38, -3.4e38, 1e-45});
    h.set_values({65504, -65504});
    b.set_values({3.38e38, -3.38e38});
    EXPECT_EQ(check(*handle, {f, h, b}), 0);
}

TEST_F(X86, CheckNonFiniteViews) {
    Checker<CheckNonFinite> c(handle.get());
    c.set_noncontiguous(true).execs({{3, 4}, {5}});
    c.set_noncontiguous(false).exec_layouts(
            {TensorLayout({3, 4}, {-4, 1}, dtype::Float16),
             TensorLayout({4, 3}, dtype::Float32).dimshuffle({1, 0})});
    std::vector<double> v(12, 0.0);
    v[7] = std::numeric_limits<double>::infinity();
    c.set_values(0, v).exec_layouts({TensorLayout({3, 4}, {-4, 1}, dtype::Float32)});
}
