// Gather, IndexingOneHot and IndexingSetOneHot on the x86 handle against naive, exactly: every
// axis, element sizes 1 to 4, index shapes smaller than src outside the axis, padded, transposed,
// broadcast and reversed views, padded outputs, a case above the threading grain, empty indices,
// and out-of-range indices (negative or too large), which raise naive's IndexError.
#include <tuple>

#include "neomeg/dnn/operators/indexing.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

template <class P>
P axis(int32_t a) {
    P p;
    p.axis = a;
    return p;
}

// Expects the x86 operator to throw IndexError for an index value of `bad`.
template <class Op>
void expect_index_error(Handle& handle, int32_t ax, const TensorShape& src, const TensorShape& idx,
                        double bad) {
    auto op = handle.create_operator<Op>();
    op->param() = axis<typename Op::Param>(ax);
    HostTensor s(src, dtype::Float32), i(idx, dtype::Int32);
    std::vector<double> v(idx.total_nr_elems(), 0.0);
    v.back() = bad;
    i.set_values(v);
    EXPECT_THROW(run_op(*op, {s, i}), IndexError) << bad;
}

}  // namespace

TEST_F(X86, GatherMatchesNaive) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int8, dtype::Int32}) {
        for (int32_t a : {0, 1, 2, -1}) {
            Checker<Gather> c(handle.get());
            c.set_param(axis<Gather::Param>(a)).set_dtype(0, dt).set_epsilon(0);
            c.set_dtype(1, dtype::Int32).set_range(1, 0, 5);
            c.execs({{5, 5, 5}, {3, 4, 2}}).execs({{5, 5, 5}, {5, 5, 5}});
            c.set_noncontiguous(true).execs({{5, 6, 7}, {2, 5, 3}});
            c.set_noncontiguous(false).execs({{5, 5, 5}, {0, 3, 2}});
        }
        Checker<Gather> c(handle.get());
        c.set_param(axis<Gather::Param>(0)).set_dtype(0, dt).set_epsilon(0);
        c.set_dtype(1, dtype::Int32).set_range(1, 0, 5);
        c.exec_layouts(
                {TensorLayout({5, 3}, {1, 5}, dt), TensorLayout({4, 3}, {0, -1}, dtype::Int32)});
    }
    Checker<Gather> big(handle.get());
    big.set_param(axis<Gather::Param>(2)).set_dtype(1, dtype::Int32).set_range(1, 0, 127);
    big.set_epsilon(0).execs({{13, 31, 127}, {13, 31, 101}}).execs({{64, 64, 128}, {64, 64, 128}});
    HostTensor s({4, 5}, dtype::Float32), i({4, 2}, dtype::Int32);
    EXPECT_EQ(run_and_compare<Gather>(*handle, axis<Gather::Param>(1), {s, i}, {}, 0), "loop");
}

TEST_F(X86, IndexingOneHotMatchesNaive) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::Uint8, dtype::Int32}) {
        for (int32_t a : {0, 1, 2, -1}) {
            TensorShape src{3, 5, 4}, idx = src;
            // index: src's shape without the axis.
            size_t ax = static_cast<size_t>(a < 0 ? a + 3 : a);
            idx.ndim = 0;
            for (size_t d = 0; d < 3; ++d)
                if (d != ax)
                    idx.shape[idx.ndim++] = src.shape[d];
            Checker<IndexingOneHot> c(handle.get());
            c.set_param(axis<IndexingOneHot::Param>(a)).set_dtype(0, dt).set_epsilon(0);
            c.set_dtype(1, dtype::Int32).set_range(1, 0, double(src.shape[ax]));
            c.execs({src, idx});
            c.set_noncontiguous(true).execs({src, idx});
        }
        Checker<IndexingOneHot> c(handle.get());
        c.set_param(axis<IndexingOneHot::Param>(1)).set_dtype(0, dt).set_epsilon(0);
        c.set_dtype(1, dtype::Int32).set_range(1, 0, 5);
        c.exec_layouts({TensorLayout({4, 5}, {1, 4}, dt), TensorLayout({4}, {0}, dtype::Int32)});
    }
    Checker<IndexingOneHot> big(handle.get());
    big.set_param(axis<IndexingOneHot::Param>(0)).set_dtype(1, dtype::Int32).set_range(1, 0, 61);
    big.set_epsilon(0).execs({{61, 67, 13}, {67, 13}});
    big.set_range(1, 0, 10).execs({{10, 512, 300}, {512, 300}});
    HostTensor s({4, 5}, dtype::Float32), i({4}, dtype::Int32);
    EXPECT_EQ(
            run_and_compare<IndexingOneHot>(*handle, axis<IndexingOneHot::Param>(1), {s, i}, {}, 0),
            "loop");
}

// Axes of size 1 leave the walk (dst's picked axis among them, so that a cross_entropy's pick
// from 1024x1000 is one row of 1024): other axes of size 1 before, between and after, every axis
// of size 1, and padded views, for IndexingOneHot and Gather, at 1 and 2 threads.
TEST_F(X86, GatherWalksWithoutUnitAxes) {
    for (int threads : {1, 2}) {
        ScopedOmpThreads scope(threads);
        const std::vector<std::tuple<TensorShape, TensorShape, int32_t>> one_hot = {
                {{1024, 1000}, {1024}, 1},    {{1, 9, 1, 4}, {1, 1, 4}, 1},
                {{1, 9, 1, 4}, {1, 9, 1}, 3}, {{1, 1, 1}, {1, 1}, 0},
                {{6, 1, 7}, {6, 1}, 2},       {{300, 1, 700}, {1, 700}, 0}};
        for (const auto& [src, idx, a] : one_hot) {
            Checker<IndexingOneHot> c(handle.get());
            c.set_param(axis<IndexingOneHot::Param>(a)).set_epsilon(0).set_dtype(1, dtype::Int32);
            c.set_range(1, 0, double(src[size_t(a)]));
            c.execs({src, idx}).set_noncontiguous(true).execs({src, idx});
        }
        const std::vector<std::tuple<TensorShape, TensorShape, int32_t>> gather = {
                {{5, 1, 7}, {5, 1, 3}, 2},
                {{1, 2048}, {1, 64}, 1},
                {{1, 1}, {1, 1}, 0},
                {{1024, 1, 2048}, {1024, 1, 64}, 2}};
        for (const auto& [src, idx, a] : gather) {
            Checker<Gather> c(handle.get());
            c.set_param(axis<Gather::Param>(a)).set_epsilon(0).set_dtype(1, dtype::Int32);
            c.set_range(1, 0, double(src[size_t(a)]) - 1);
            c.execs({src, idx}).set_noncontiguous(true).execs({src, idx});
        }
    }
}

TEST_F(X86, GatherOutOfRangeRaisesNaivesError) {
    for (double bad : {-1.0, 5.0, 1e6, -2147483648.0, 2147483647.0}) {
        expect_index_error<Gather>(*handle, 1, {3, 5}, {3, 4}, bad);
        expect_index_error<IndexingOneHot>(*handle, 1, {3, 5}, {3}, bad);
    }
}

// Past the threading grain, at 1, 2 and 3 threads: the last axis gathered from contiguous tensors
// (the loop without strides), the first axis and padded views (the strided loop); a value out of
// range in the first, a middle or the last row raises naive's error, whichever thread meets it.
TEST_F(X86, GatherThreadsAndChecksEveryRow) {
    for (int threads : {1, 2, 3}) {
        ScopedOmpThreads scope(threads);
        for (DType dt : {dtype::Float32, dtype::Int8, dtype::Float16}) {
            Checker<Gather> c(handle.get());
            c.set_param(axis<Gather::Param>(-1)).set_dtype(0, dt).set_epsilon(0);
            c.set_dtype(1, dtype::Int32).set_range(1, 0, 2047);
            c.execs({{1024, 2048}, {1024, 64}}).execs({{257, 2048}, {255, 1}});
            c.set_noncontiguous(true).execs({{600, 2048}, {600, 97}});
            c.set_param(axis<Gather::Param>(0)).set_range(1, 0, 96);
            c.set_noncontiguous(false).execs({{97, 3001}, {64, 3001}});
        }
        for (size_t row : {size_t(0), size_t(511), size_t(1023)}) {
            auto op = handle->create_operator<Gather>();
            op->param() = axis<Gather::Param>(1);
            HostTensor s({1024, 100}, dtype::Float32), i({1024, 64}, dtype::Int32);
            std::vector<double> v(i.layout().total_nr_elems(), 99.0);
            v[row * 64 + 17] = row == 511 ? -1.0 : 100.0;
            i.set_values(v);
            EXPECT_THROW(run_op(*op, {s, i}), IndexError) << row << " at " << threads;
        }
    }
}

TEST_F(X86, IndexingSetOneHotMatchesNaive) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int8, dtype::Int32}) {
        for (int32_t a : {0, 1, 2, -1}) {
            TensorShape data{3, 5, 4}, idx, sub = data;
            size_t ax = static_cast<size_t>(a < 0 ? a + 3 : a);
            sub.shape[ax] = 1;
            idx.ndim = 0;
            for (size_t d = 0; d < 3; ++d)
                if (d != ax)
                    idx.shape[idx.ndim++] = data.shape[d];
            Checker<IndexingSetOneHot> c(handle.get());
            c.set_param(axis<IndexingSetOneHot::Param>(a)).set_epsilon(0);
            c.set_dtype(0, dt).set_dtype(1, dtype::Int32).set_dtype(2, dt);
            c.set_range(1, 0, double(data.shape[ax]));
            c.execs({data, idx, sub});
            c.set_noncontiguous(true).execs({data, idx, sub});
        }
    }
    Checker<IndexingSetOneHot> big(handle.get());
    big.set_param(axis<IndexingSetOneHot::Param>(1)).set_epsilon(0);
    big.set_dtype(1, dtype::Int32).set_range(1, 0, 10);
    big.execs({{512, 10, 300}, {512, 300}, {512, 1, 300}});
    // data, or sub, as one broadcast element: the gradient rules' zeros.
    for (bool padded : {false, true}) {
        big.set_noncontiguous(padded);
        big.exec_layouts({TensorLayout({512, 10, 300}, {0, 0, 0}, dtype::Float32),
                          TensorLayout({512, 300}, dtype::Int32),
                          TensorLayout({512, 1, 300}, dtype::Float32)});
        big.exec_layouts({TensorLayout({3, 10}, dtype::Float32), TensorLayout({3}, dtype::Int32),
                          TensorLayout({3, 1}, {0, 0}, dtype::Float32)});
    }
    HostTensor d({4, 5}, dtype::Float32), i({4}, dtype::Int32), s({4, 1}, dtype::Float32);
    EXPECT_EQ(run_and_compare<IndexingSetOneHot>(*handle, axis<IndexingSetOneHot::Param>(1),
                                                 {d, i, s}, {}, 0),
              "loop");
    for (double bad : {-1.0, 5.0}) {
        auto op = handle->create_operator<IndexingSetOneHot>();
        op->param() = axis<IndexingSetOneHot::Param>(1);
        i.set_values({0, 1, 2, bad});
        EXPECT_THROW(run_op(*op, {d, i, s}), IndexError) << bad;
    }
}
