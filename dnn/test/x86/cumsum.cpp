// Cumsum on the x86 handle against naive, exactly: every axis of ranks 1 to 4, lines of 1 and
// primes, column blocks with and without a vector tail, every exclusive/reverse combination, a
// case above the threading grain, large magnitudes where the order of rounding shows, and the
// strided views (negative, transposed, broadcast, padded) at every Highway target, and the cases
// that go to naive (other dtypes).
#include <cmath>

#include "neomeg/dnn/operators/reduce.h"
#include "x86/highway_targets.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::Cumsum cumsum_param(int32_t axis, bool exclusive, bool reverse) {
    param::Cumsum p;
    p.axis = axis;
    p.exclusive = exclusive;
    p.reverse = reverse;
    return p;
}

}  // namespace

TEST_F(X86, CumsumMatchesNaive) {
    const std::vector<TensorShape> shapes = {{1},       {7},          {1000},     {13, 17},
                                             {3, 1, 5}, {2, 3, 5, 7}, {300, 301}, {4, 70001}};
    for (const TensorShape& s : shapes)
        for (int32_t a = -int32_t(s.ndim); a < int32_t(s.ndim); ++a)
            for (bool exclusive : {false, true})
                for (bool reverse : {false, true}) {
                    Checker<Cumsum> c(handle.get());
                    // Magnitudes far apart, so that a different summation order would round
                    // differently.
                    c.set_param(cumsum_param(a, exclusive, reverse)).set_epsilon(0);
                    c.set_range(0, -1e7, 1e7).execs({s});
                }
}

// Magnitudes from 1e-8 to 1e8 of both signs: the double sums are inexact, so only naive's order
// of accumulation gives naive's bits.
TEST_F(X86, CumsumKeepsNaivesOrder) {
    std::mt19937 rng(9);
    std::uniform_real_distribution<double> exponent(-8, 8);
    for (const TensorShape& s : {TensorShape{4, 70001}, TensorShape{300, 301}, TensorShape{5, 33}})
        for (int32_t a : {0, 1}) {
            std::vector<double> v(s.total_nr_elems());
            for (size_t i = 0; i < v.size(); ++i)
                v[i] = std::pow(10.0, exponent(rng)) * (i % 2 ? 1 : -1);
            for (bool reverse : {false, true}) {
                Checker<Cumsum> c(handle.get());
                c.set_param(cumsum_param(a, false, reverse)).set_epsilon(0).set_values(0, v);
                c.execs({s});
            }
        }
}

TEST_F(X86, CumsumRunsHighwayOrNaive) {
    std::mt19937 rng(5);
    HostTensor x({6, 50, 40}, dtype::Float32), i({6, 5}, dtype::Int32);
    fill_uniform(x, -1, 1, rng);
    for (int32_t a : {0, 1, 2})
        EXPECT_EQ(run_and_compare<Cumsum>(*handle, cumsum_param(a, false, false), {x}, {}, 0),
                  "hwy");
    EXPECT_EQ(run_and_compare<Cumsum>(*handle, cumsum_param(1, false, false), {i}, {}, 0), "naive");
    Checker<Cumsum> c(handle.get());
    c.set_param(cumsum_param(1, true, false)).set_noncontiguous(true).execs({{5, 7}});
    // A reversed view (x[::-1]) runs the strided loops, not naive.
    HostTensor flipped(TensorLayout({50, 40}, {-40, 1}, dtype::Float32));
    fill_uniform(flipped, -1, 1, rng);
    for (int32_t a : {0, 1})
        EXPECT_EQ(run_and_compare<Cumsum>(*handle, cumsum_param(a, false, false), {flipped}, {}, 0),
                  "hwy");
}

// Strided sources against naive, exactly, at every Highway target: reversed along and across the
// axis (x[::-1], x[:, ::-1]), both at once, transposed (the vector of columns is then strided in
// src), a broadcast (stride 0) row, padded rows, and padded outputs (set_noncontiguous); lines of
// 1, primes and vector-width edges, with every exclusive/reverse combination, on three threads.
TEST_F(X86, CumsumStridedMatchesNaive) {
#ifdef NEOMEG_WITH_DNNL
    const DType f = dtype::Float32;
    std::vector<TensorLayout> layouts;
    for (size_t n : {1, 2, 7, 8, 16, 17, 1000})
        layouts.push_back(TensorLayout({n}, {-1}, f));
    for (auto [r, c] :
         {std::pair<size_t, size_t>{1, 1}, {3, 1}, {5, 7}, {13, 16}, {9, 33}, {700, 301}}) {
        const auto rs = static_cast<ptrdiff_t>(c), cs = static_cast<ptrdiff_t>(r);
        layouts.push_back(TensorLayout({r, c}, {-rs, 1}, f));
        layouts.push_back(TensorLayout({r, c}, {rs, -1}, f));
        layouts.push_back(TensorLayout({r, c}, {-rs, -1}, f));
        layouts.push_back(TensorLayout({r, c}, {1, cs}, f));
        layouts.push_back(TensorLayout({r, c}, {0, 1}, f));
        layouts.push_back(TensorLayout({r, c}, {rs + 3, 1}, f));
    }
    layouts.push_back(TensorLayout({2, 17, 40}, {-680, 1, -17}, f));
    layouts.push_back(TensorLayout({3, 5, 4, 7}, {-140, 1, 35, 5}, f));
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t t) {
                SCOPED_TRACE(testing::Message() << "Highway target " << hwy::TargetName(t));
                // Three threads: 700 x 301 splits mid-block (a run of one block's lines
                // each), with the split off the vector width.
                ScopedOmpThreads threads(3);
                for (const TensorLayout& l : layouts)
                    for (int32_t a = 0; a < int32_t(l.ndim); ++a)
                        for (bool exclusive : {false, true})
                            for (bool reverse : {false, true}) {
                                SCOPED_TRACE(testing::Message() << l.to_string() << " axis " << a);
                                Checker<Cumsum> c(handle.get());
                                c.set_param(cumsum_param(a, exclusive, reverse)).set_epsilon(0);
                                c.set_range(0, -1e7, 1e7).exec_layouts({l});
                                c.set_noncontiguous(true).exec_layouts({l});
                            }
            });
    EXPECT_GE(ran, 1u);
#endif
}
