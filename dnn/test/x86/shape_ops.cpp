// ReshapeTo and BroadcastTo on the x86 handle against naive, exactly: sizes 0, 1, primes and above
// the threading grain, several dtypes, transposed, reversed and padded sources, padded outputs,
// broadcasts of leading, inner and size-1 axes; a shape value that disagrees with dst fails as in
// naive; and neither warns of a naive fallback on float32.
#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/x86/exec_report.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

std::vector<double> dims(const TensorShape& s) {
    return std::vector<double>(s.shape.begin(), s.shape.begin() + static_cast<ptrdiff_t>(s.ndim));
}

// A Checker of op for src layout `src` and dst shape `to`, whose shape input holds `to`.
template <class Op>
void check(Handle* h, const TensorLayout& src, const TensorShape& to, bool padded = false) {
    Checker<Op> c(h);
    c.set_epsilon(0).set_dtype(0, src.dtype).set_dtype(1, dtype::Int32);
    c.set_values(1, dims(to)).set_output_shapes({to}).set_noncontiguous(padded);
    c.exec_layouts({src, TensorLayout({to.ndim}, dtype::Int32)});
}

}  // namespace

TEST_F(X86, ReshapeToMatchesNaive) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int8, dtype::Int32}) {
        check<ReshapeTo>(handle.get(), TensorLayout({0, 3}, dt), {3, 0});
        check<ReshapeTo>(handle.get(), TensorLayout({1}, dt), {1, 1});
        check<ReshapeTo>(handle.get(), TensorLayout({7, 13}, dt), {13, 7});
        check<ReshapeTo>(handle.get(), TensorLayout({(1 << 17) + 3}, dt), {1, (1 << 17) + 3});
        check<ReshapeTo>(handle.get(), TensorLayout({64, 3, 9, 9}, dt), {64, 243});
        // Non-contiguous sources read in their own row-major order.
        check<ReshapeTo>(handle.get(), TensorLayout({13, 7}, dt).dimshuffle({1, 0}), {91});
        check<ReshapeTo>(handle.get(), TensorLayout({5, 7}, {-7, -1}, dt), {7, 5});
        check<ReshapeTo>(handle.get(), TensorLayout({300, 301}, dt).dimshuffle({1, 0}), {301, 300});
        // A contiguous source into padded dst rows, and a padded source into them (naive).
        check<ReshapeTo>(handle.get(), TensorLayout({6, 10}, dt), {4, 15}, true);
    }
    // The value {2, 3} against a preset {3, 2}: refused as naive refuses it.
    auto op = handle->create_operator<ReshapeTo>();
    HostTensor src = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    EXPECT_THROW(run_op(*op, {src, HostTensor::from({2}, {2, 3}, dtype::Int32)}, {{3, 2}}),
                 ShapeError);
}

TEST_F(X86, BroadcastToMatchesNaive) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int8, dtype::Int32}) {
        check<BroadcastTo>(handle.get(), TensorLayout({1}, dt), {0});
        check<BroadcastTo>(handle.get(), TensorLayout({1}, dt), {1});
        check<BroadcastTo>(handle.get(), TensorLayout({13}, dt), {7, 13});
        check<BroadcastTo>(handle.get(), TensorLayout({7, 1}, dt), {3, 7, 11});
        check<BroadcastTo>(handle.get(), TensorLayout({1, 5, 1}, dt), {4, 5, 301});
        check<BroadcastTo>(handle.get(), TensorLayout({64, 1}, dt), {64, 3001});
        check<BroadcastTo>(handle.get(), TensorLayout({13, 7}, dt).dimshuffle({1, 0}), {3, 7, 13});
        check<BroadcastTo>(handle.get(), TensorLayout({3, 1, 5}, dt), {3, 4, 5}, true);
    }
    auto op = handle->create_operator<BroadcastTo>();
    HostTensor src = HostTensor::from({3}, {1, 2, 3});
    EXPECT_THROW(run_op(*op, {src, HostTensor::from({2}, {2, 4}, dtype::Int32)}, {{2, 3}}),
                 ShapeError);
}

TEST_F(X86, ShapeOpsDoNotWarn) {
    x86::forget_naive_warnings();
    testing::internal::CaptureStderr();
    HostTensor src = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    auto reshape = handle->create_operator<ReshapeTo>();
    run_op(*reshape, {src, HostTensor::from({1}, {6}, dtype::Int32)}, {{6}});
    auto broadcast = handle->create_operator<BroadcastTo>();
    run_op(*broadcast, {src, HostTensor::from({3}, {4, 2, 3}, dtype::Int32)}, {{4, 2, 3}});
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.find("warning"), std::string::npos) << err;
    EXPECT_EQ(last_kernel(*reshape), "rows");
    EXPECT_NE(last_kernel(*broadcast), "naive");
}
