// Concat and Split on the x86 handle (slabs copied by relayout_copy) against naive, exactly: every
// axis (negative too), pieces of 0, 1 and primes along the axis, several dtypes, padded,
// broadcast, reversed and transposed sources and padded outputs, and a large case that the copy
// threads.
#include "neomeg/dnn/operators/tensor_shape.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::Concat concat_axis(int32_t axis) {
    param::Concat p;
    p.axis = axis;
    return p;
}

param::Split split_of(int32_t axis, std::vector<int32_t> sizes) {
    param::Split p;
    p.axis = axis;
    p.sizes = std::move(sizes);
    return p;
}

}  // namespace

TEST_F(X86, ConcatMatchesNaive) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int8, dtype::Int32}) {
        Checker<Concat> c(handle.get());
        c.set_epsilon(0);
        for (size_t i = 0; i < 3; ++i)
            c.set_dtype(i, dt).set_range(i, -100, 100);
        c.set_param(concat_axis(1)).set_noncontiguous(true);
        c.execs({{3, 2, 5}, {3, 7, 5}}).execs({{1, 1}, {1, 0}, {1, 3}}).execs({{0, 2}, {0, 3}});
        c.execs({{13, 17}, {13, 1}, {13, 31}});
        c.set_param(concat_axis(-1)).execs({{2, 3, 5}, {2, 3, 7}});
        c.set_param(concat_axis(0)).execs({{5, 3}, {1, 3}, {7, 3}});
        c.set_param(concat_axis(1)).set_noncontiguous(false);
        c.exec_layouts({TensorLayout({3, 4}, {0, 1}, dt),
                        TensorLayout({4, 3}, dt).dimshuffle({1, 0}),
                        TensorLayout({3, 2}, {-2, -1}, dt)});
        c.execs({{64, 1000, 3}, {64, 300, 3}});
    }
    HostTensor a({4, 5}, dtype::Float32), b({4, 6}, dtype::Float32);
    EXPECT_EQ(run_and_compare<Concat>(*handle, concat_axis(1), {a, b}, {}, 0), "copy");
}

TEST_F(X86, SplitMatchesNaive) {
    for (DType dt : {dtype::Float32, dtype::BFloat16, dtype::Uint8}) {
        Checker<Split> c(handle.get());
        c.set_epsilon(0).set_dtype(0, dt).set_range(0, -100, 100);
        c.set_param(split_of(1, {2, 0, 5})).set_noncontiguous(true);
        c.execs({{3, 7, 5}}).execs({{0, 7}}).execs({{1, 7}});
        c.set_noncontiguous(false);
        c.exec_layouts({TensorLayout({7, 3}, dt).dimshuffle({1, 0})});
        c.exec_layouts({TensorLayout({3, 7}, {0, -1}, dt)});
        c.set_param(split_of(-1, {3, 4})).execs({{5, 7}});
        c.set_param(split_of(0, {1000, 24, 1})).execs({{1025, 9}});
        c.set_param(split_of(1, {700, 301})).execs({{64, 1001}});
    }
    HostTensor a({4, 5}, dtype::Float32);
    EXPECT_EQ(run_and_compare<Split>(*handle, split_of(1, {2, 3}), {a}, {}, 0), "copy");
}
