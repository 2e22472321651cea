// Roll on naive: hand-computed numpy.roll values (one axis, several, a repeated axis, negative and
// oversized shifts, size 0 and 1 axes), a second formulation (rolling by one, k times), every
// dtype as raw bytes, strided inputs and outputs, and the param errors.
#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/tensor_shape.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

HostTensor roll(const HostTensor& src, std::vector<int32_t> shift, std::vector<int32_t> axis) {
    auto h = Handle::make_naive();
    auto op = make_op<Roll>(h.get(), param::Roll{std::move(shift), std::move(axis)});
    return std::move(run_op(*op, {src})[0]);
}

std::vector<double> iota(size_t n) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<double>(i);
    return v;
}

}  // namespace

TEST(Roll, HandComputedLikeNumpy) {
    auto v = HostTensor::from({5}, iota(5));
    EXPECT_EQ(roll(v, {2}, {0}).values(), (std::vector<double>{3, 4, 0, 1, 2}));
    EXPECT_EQ(roll(v, {-1}, {0}).values(), (std::vector<double>{1, 2, 3, 4, 0}));
    EXPECT_EQ(roll(v, {12}, {-1}).values(), (std::vector<double>{3, 4, 0, 1, 2}));
    EXPECT_EQ(roll(v, {5}, {0}).values(), iota(5));
    EXPECT_EQ(roll(v, {}, {}).values(), iota(5));
    auto m = HostTensor::from({2, 3}, iota(6));
    EXPECT_EQ(roll(m, {1}, {1}).values(), (std::vector<double>{2, 0, 1, 5, 3, 4}));
    EXPECT_EQ(roll(m, {1}, {0}).values(), (std::vector<double>{3, 4, 5, 0, 1, 2}));
    EXPECT_EQ(roll(m, {1, -1}, {0, 1}).values(), (std::vector<double>{4, 5, 3, 1, 2, 0}));
    // A repeated axis adds its shifts: 2 + 2 along 3 is 1.
    EXPECT_EQ(roll(m, {2, 2}, {1, -1}).values(), (std::vector<double>{2, 0, 1, 5, 3, 4}));
    // INT32_MIN is 1 modulo 3.
    EXPECT_EQ(roll(m, {INT32_MIN}, {1}).values(), (std::vector<double>{2, 0, 1, 5, 3, 4}));
    EXPECT_EQ(roll(HostTensor::from({0, 3}, {}), {1, 1}, {0, 1}).shape().to_string(), "{0,3}");
    EXPECT_EQ(roll(HostTensor::from({1, 1}, {7}), {3, -3}, {0, 1}).values(),
              (std::vector<double>{7}));
}

TEST(Roll, EqualsRepeatedRollsByOneForEveryDtype) {
    std::mt19937 rng(11);
    for (DType dt : all_dtypes()) {
        HostTensor x({3, 5, 7}, dt);
        fill_uniform(x, 0, 100, rng);
        for (int32_t ax : {0, 1, 2}) {
            HostTensor step = x;
            for (int32_t k = 1; k <= 9; ++k) {
                step = roll(step, {1}, {ax});
                EXPECT_EQ(roll(x, {k}, {ax}).values(), step.values())
                        << dt.name() << " axis " << ax << " k " << k;
                EXPECT_EQ(roll(step, {-k}, {ax}).values(), x.values()) << dt.name();
            }
        }
        EXPECT_EQ(roll(x, {2, 3, -4}, {0, 1, 2}).values(),
                  roll(roll(roll(x, {-4}, {2}), {3}, {1}), {2}, {0}).values())
                << dt.name();
    }
}

TEST(Roll, StridedInputsAndOutputs) {
    auto h = Handle::make_naive();
    Checker<Roll> c(h.get());
    c.set_param(param::Roll{{2, -3}, {0, 2}}).set_noncontiguous(true);
    c.execs({{5, 4, 7}}).execs({{1, 1, 1}}).execs({{0, 2, 3}});
    c.exec_layouts({TensorLayout({4, 5, 7}, dtype::Float32).dimshuffle({1, 0, 2})});
    c.exec_layouts({TensorLayout({5, 4, 7}, {0, 7, 1}, dtype::Float32)});
    auto op = make_op<Roll>(h.get(), param::Roll{{1}, {1}});
    std::vector<HostTensor> out;
    out.emplace_back(TensorLayout({2, 3}, {1, -2}, dtype::Int16));
    exec_into(*op, {HostTensor::from({2, 3}, iota(6), dtype::Int16)}, out);
    EXPECT_EQ(out[0].values(), (std::vector<double>{2, 0, 1, 5, 3, 4}));
}

TEST(Roll, BadParamsAreClearErrors) {
    auto h = Handle::make_naive();
    HostTensor x({2, 3}, dtype::Float32);
    auto two_shifts = make_op<Roll>(h.get(), param::Roll{{1, 2}, {0}});
    expect_error<ParamError>([&] { run_op(*two_shifts, {x}); }, {"2 shifts for 1 axes"});
    auto bad_axis = make_op<Roll>(h.get(), param::Roll{{1}, {2}});
    expect_error<ParamError>([&] { run_op(*bad_axis, {x}); }, {"axis 2 is out of range"});
    auto negative = make_op<Roll>(h.get(), param::Roll{{1}, {-3}});
    expect_error<ParamError>([&] { run_op(*negative, {x}); }, {"axis -3 is out of range"});
}
