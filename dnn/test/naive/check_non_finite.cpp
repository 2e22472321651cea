// CheckNonFinite on the naive backend.
#include <cmath>
#include <limits>

#include "naive/norm_test_util.h"
#include "neomeg/dnn/operators/random.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

int32_t check(const std::vector<HostTensor>& in) {
    auto op = make_op<CheckNonFinite>();
    auto out = run_op(*op, in);
    EXPECT_EQ(out[0].dtype(), dtype::Int32);
    EXPECT_TRUE(out[0].shape().eq_shape({1}));
    return int32_t(out[0].values()[0]);
}

}  // namespace

TEST(CheckNonFinite, FlagsNanAndInfInAnyInput) {
    const double inf = std::numeric_limits<double>::infinity();
    auto finite = random_tensor({3, 5}, 1, -1e30, 1e30);
    EXPECT_EQ(check({finite}), 0);
    EXPECT_EQ(check({finite, random_tensor({7}, 2)}), 0);
    for (double bad : {std::nan(""), inf, -inf}) {
        auto v = finite.values();
        v[14] = bad;
        auto b = HostTensor::from({3, 5}, v);
        EXPECT_EQ(check({b}), 1) << bad;
        EXPECT_EQ(check({random_tensor({7}, 2), b}), 1) << bad;
        EXPECT_EQ(check({b, HostTensor({0}, dtype::Float32)}), 1) << bad;
    }
}

TEST(CheckNonFinite, EmptyAndNoInputs) {
    EXPECT_EQ(check({}), 0);
    EXPECT_EQ(check({HostTensor({0, 4}, dtype::Float32)}), 0);
    EXPECT_EQ(check({HostTensor::from({1}, {0})}), 0);
}

TEST(CheckNonFinite, LowPrecisionOverflowAndStridedInputs) {
    // 70000 is finite in float32 but overflows float16 to infinity, not bfloat16.
    auto big = HostTensor::from({2}, {1, 70000});
    EXPECT_EQ(check({big}), 0);
    EXPECT_EQ(check({as_dtype(big, dtype::Float16)}), 1);
    EXPECT_EQ(check({as_dtype(big, dtype::BFloat16)}), 0);
    // A strided view that skips the NaNs sees only finite values.
    float buf[4] = {1, std::nanf(""), 2, std::nanf("")};
    auto op = make_op<CheckNonFinite>();
    int32_t flag = -1;
    TensorND dst(&flag, TensorLayout({1}, dtype::Int32));
    TensorND every_other(buf, TensorLayout({2}, {2}, dtype::Float32));
    op->exec({&every_other, 1}, {&dst, 1});
    EXPECT_EQ(flag, 0);
    TensorND all(buf, TensorLayout({4}, dtype::Float32));
    op->exec({&all, 1}, {&dst, 1});
    EXPECT_EQ(flag, 1);
    Checker<CheckNonFinite> c(naive_handle());
    c.set_noncontiguous(true).execs({{3, 4}, {5}});
    c.set_noncontiguous(false).exec_layouts(
            {TensorLayout({3, 4}, {0, -1}, dtype::Float16),
             TensorLayout({4, 3}, dtype::Float32).dimshuffle({1, 0})});
}

TEST(CheckNonFinite, NonFloatInputIsADTypeError) {
    expect_error<DTypeError>(
            [] {
                deduce<CheckNonFinite>({}, {TensorLayout({2}, dtype::Float32),
                                            TensorLayout({2, 2}, dtype::Int32)});
            },
            {"CheckNonFinite()", "input 1", "{2(2),2(1)} int32"});
}

TEST(CheckNonFinite, WritesIntoPaddedOutput) {
    expect_padded_outputs_match<CheckNonFinite>({}, {HostTensor::from({2}, {1, INFINITY})});
}
