// The shape-computing operators against hand-computed results and NumPy's rules: GetVarShape,
// ReshapeTo, BroadcastTo and TakePrefix, including strided inputs and the checks that a preset
// shape agrees with the value it was read from; and that the ops whose definitions say they
// forward an input do.
#include <map>

#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/forwarding.h"
#include "neomeg/dnn/op_types.h"
#include "neomeg/dnn/operators/tensor_shape.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

HostTensor ints(const TensorShape& shape, const std::vector<double>& v) {
    return HostTensor::from(shape, v, dtype::Int32);
}

}  // namespace

TEST(GetVarShape, AllAxesSomeAxesAndErrors) {
    auto h = Handle::make_naive();
    HostTensor x({2, 3, 4}, dtype::Float16);
    auto all = run_op(*make_op<GetVarShape>(h.get()), {x});
    EXPECT_EQ(all[0].dtype(), dtype::Int32);
    EXPECT_EQ(all[0].values(), (std::vector<double>{2, 3, 4}));
    param::GetVarShape p;
    p.axes = {-1, 0};
    EXPECT_EQ(run_op(*make_op<GetVarShape>(h.get(), p), {x})[0].values(),
              (std::vector<double>{4, 2}));
    auto scalar = run_op(*make_op<GetVarShape>(h.get()), {HostTensor({}, dtype::Float32)});
    EXPECT_EQ(scalar[0].shape().to_string(), "{0}");
    p.axes = {3};
    expect_error<ParamError>([&] { run_op(*make_op<GetVarShape>(h.get(), p), {x}); },
                             {"GetVarShape(axes=[3])", "axis 3 is out of range for src"});
}

TEST(ReshapeTo, RowMajorOrderFromStridedInputs) {
    auto h = Handle::make_naive();
    auto src = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    auto op = make_op<ReshapeTo>(h.get());
    auto r = run_op(*op, {src, ints({3}, {3, 1, -1})}, {{3, 1, 2}});
    EXPECT_EQ(r[0].shape().to_string(), "{3,1,2}");
    EXPECT_EQ(r[0].values(), src.values());
    // A transposed view reads in its own row-major order, as np.reshape(a.T, -1).
    TensorND view(src.nd().raw_ptr(), TensorLayout({3, 2}, {1, 3}, dtype::Float32));
    int32_t six = 6;
    std::vector<float> got(6);
    std::vector<TensorND> in{view, TensorND(&six, TensorLayout({1}, dtype::Int32))};
    std::vector<TensorND> out{TensorND(got.data(), TensorLayout({6}, dtype::Float32))};
    op->exec(in, out, {});
    EXPECT_EQ(got, (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(ReshapeTo, LayoutAndValueErrors) {
    auto h = Handle::make_naive();
    auto op = make_op<ReshapeTo>(h.get());
    auto src = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {src, ints({2}, {4, 2})}, {{4, 2}});
            },
            {"ReshapeTo", "cannot reshape", "to {4,2}"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {src, ints({2}, {3, 2})});
            },
            {"holds 2 dims", "the caller gives dst's shape"});
    expect_error<DTypeError>(
            [&] {
                run_op(*op, {src, HostTensor({2}, dtype::Float32)}, {{3, 2}});
            },
            {"shape must be int32"});
    // The value says {2,3}, the preset {3,2}: the kernel refuses to copy under a wrong shape.
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {src, ints({2}, {2, 3})}, {{3, 2}});
            },
            {"shape holds 2 at 0"});
}

TEST(BroadcastTo, MatchesNumpyBroadcastTo) {
    auto h = Handle::make_naive();
    auto op = make_op<BroadcastTo>(h.get());
    auto src = HostTensor::from({3, 1}, {1, 2, 3});
    auto r = run_op(*op, {src, ints({3}, {2, 3, 2})}, {{2, 3, 2}});
    EXPECT_EQ(r[0].values(), (std::vector<double>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
    for (DType dt : all_dtypes()) {
        HostTensor s({1, 4}, dt);
        std::mt19937 rng(3);
        fill_uniform(s, 0, 2, rng);
        auto b = run_op(*op, {s, ints({2}, {3, 4})}, {{3, 4}});
        std::vector<double> want;
        for (int i = 0; i < 3; ++i)
            for (double v : s.values())
                want.push_back(v);
        EXPECT_EQ(b[0].values(), want) << dt.name();
    }
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {src, ints({2}, {3, 4})}, {{2, 2}});
            },
            {"cannot broadcast", "to {2,2}"});
}

TEST(TakePrefix, FirstRowsAndErrors) {
    auto h = Handle::make_naive();
    auto op = make_op<TakePrefix>(h.get());
    auto src = HostTensor::from({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
    auto r = run_op(*op, {src, ints({1}, {3})}, {{3, 2}});
    EXPECT_EQ(r[0].values(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
    auto none = run_op(*op, {src, ints({1}, {0})}, {{0, 2}});
    EXPECT_EQ(none[0].shape().to_string(), "{0,2}");
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {src, ints({1}, {5})}, {{5, 2}});
            },
            {"not a prefix along axis 0"});
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {src, ints({1}, {2})}, {{3, 2}});
            },
            {"count holds 2"});
}

// Every operator whose definition says it forwards an input (forwards=..., forwarding.h) must
// give that input's elements in row-major order: the eager runtime views such an input and the
// graph plans the output on its memory instead of running the kernel, so a definition that says
// so wrongly would change results. A forwarding op needs a sample here; a new one fails until
// it has one.
TEST(Forwarding, EveryForwardingOpGivesItsInputsElementsInRowMajorOrder) {
    auto h = Handle::make_naive();
    struct Sample {
        std::vector<HostTensor> inputs;
        TensorShape dst;
    };
    auto src = HostTensor::from({2, 3, 4}, [] {
        std::vector<double> v(24);
        for (size_t i = 0; i < v.size(); ++i)
            v[i] = double(i) * 0.5 - 3;
        return v;
    }());
    const std::map<OpType, Sample> samples = {
            {OpType::ReshapeTo, {{src, ints({2}, {-1, 4})}, {6, 4}}},
    };
    size_t forwarding = 0;
    for (OpType type : kAllOpTypes) {
        int f = forwarded_input(type);
        if (f == kForwardsNothing)
            continue;
        ++forwarding;
        auto it = samples.find(type);
        ASSERT_NE(it, samples.end()) << op_type_name(type) << " forwards input " << f
                                     << " but has no sample in this test";
        auto op = h->create_operator(type);
        auto out = run_op(*op, it->second.inputs, {it->second.dst});
        EXPECT_EQ(out[0].values(), it->second.inputs[size_t(f)].values()) << op_type_name(type);
    }
    EXPECT_EQ(forwarding, samples.size()) << "a sample names an op that does not forward";
}
