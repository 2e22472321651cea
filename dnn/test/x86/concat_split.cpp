// Concat and Split on the x86 handle (contiguous Concat row by row, the rest slabs copied by
// relayout_copy) against naive, exactly: every axis (negative too), pieces of 0, 1 and primes
// along the axis, many inputs, several dtypes, padded, broadcast, reversed and transposed sources
// and padded outputs, and large cases that the copies thread, at 1, 2 and 3 threads (the streamed
// and plain sizes at each Highway target).
#include "neomeg/dnn/operators/tensor_shape.h"
#include "x86/highway_targets.h"
#include "x86/omp_threads.h"
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
}

// Contiguous inputs: one sweep over dst's rows, each put together from a row of every input; a
// single row (the first axis, as F.stack) is cut into pieces across threads.
TEST_F(X86, ConcatOfContiguousInputsRowByRow) {
    const std::vector<std::pair<int32_t, std::vector<TensorShape>>> cases = {
            {0, {{1, 300, 1000}, {1, 300, 1000}}},
            {0, {{3, 200, 999}, {0, 200, 999}, {1, 200, 999}}},
            {1,
             {{3, 0, 5},
              {3, 1, 5},
              {3, 2, 5},
              {3, 3, 5},
              {3, 5, 5},
              {3, 7, 5},
              {3, 11, 5},
              {3, 0, 5},
              {3, 13, 5}}},
            {-1, {{70001, 1}, {70001, 2}}},
            {1, {{512, 1000}, {512, 24}, {512, 1}}},
            {1, {{0, 3}, {0, 4}}},
            {0, {{0}, {0}}},
    };
    for (int threads : {1, 2, 3}) {
        ScopedOmpThreads scope(threads);
        for (DType dt : {dtype::Float32, dtype::BFloat16, dtype::Int8, dtype::Bool, dtype::Int32}) {
            for (const auto& [axis, shapes] : cases) {
                Checker<Concat> c(handle.get());
                c.set_epsilon(0).set_param(concat_axis(axis));
                for (size_t i = 0; i <= shapes.size(); ++i)
                    c.set_dtype(i, dt).set_range(i, -100, 100);
                c.execs(shapes);
            }
        }
    }
    // A dst above 16 MiB is written with non-temporal stores (row_runs.h), one of 16 MiB (the
    // audit's (1024, 2048) pair) with plain ones above one thread; rows of 2049 floats start off
    // the vector width.
    // Both copies dispatch at run time: each Highway target the CPU has.
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t) {
        for (int threads : {1, 2, 3}) {
            ScopedOmpThreads scope(threads);
            Checker<Concat> c(handle.get());
            c.set_epsilon(0).set_param(concat_axis(0));
            c.execs({{1, 2048, 1601}, {1, 2048, 1601}});
            c.set_param(concat_axis(1)).execs({{2053, 999}, {2053, 1}, {2053, 1049}});
            c.execs({{1024, 2048}, {1024, 2048}});
        }
    });
    EXPECT_GE(ran, 1u);
    HostTensor a({4, 5}, dtype::Float32), b({4, 6}, dtype::Float32);
    EXPECT_EQ(run_and_compare<Concat>(*handle, concat_axis(1), {a, b}, {}, 0), "rows");
    // On two threads 16 MiB stays cached for its reader and one row more streams; one thread
    // streams from 12 MiB.
    HostTensor half({1024, 2048}, dtype::Float32), more({1025, 2048}, dtype::Float32);
    HostTensor under({768, 2048}, dtype::Float32), less({767, 2048}, dtype::Float32);
    for (int threads : {2, 3}) {
        ScopedOmpThreads scope(threads);
        EXPECT_EQ(run_and_compare<Concat>(*handle, concat_axis(1), {half, half}, {}, 0), "rows");
        EXPECT_EQ(run_and_compare<Concat>(*handle, concat_axis(0), {half, more}, {}, 0),
                  "rows streamed");
    }
    ScopedOmpThreads one(1);
    EXPECT_EQ(run_and_compare<Concat>(*handle, concat_axis(0), {under, under}, {}, 0),
              "rows streamed");
    EXPECT_EQ(run_and_compare<Concat>(*handle, concat_axis(0), {under, less}, {}, 0), "rows");
    HostTensor t(TensorLayout({6, 4}, dtype::Float32).dimshuffle({1, 0}));
    EXPECT_EQ(run_and_compare<Concat>(*handle, concat_axis(1), {a, t}, {}, 0), "copy");
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
