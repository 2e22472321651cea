// Argsort and TopK on the x86 handle (vqsort, a heap or nth_element over position-tagged keys)
// against naive, exactly: every dtype, both orders and every TopK mode with k of 1, a few, all and
// their negatives, lines of 1, primes and above the threading grain, empty tensors, strided inputs
// and outputs, ties (src's order ascending, its reverse descending), NaNs (above every number),
// infinities and signed zeros (equal); and that no case runs naive.
#include <limits>

#include "neomeg/dnn/operators/reduce.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

const std::vector<DType> kDTypes = {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8,
                                    dtype::Uint8,   dtype::Int16,   dtype::Int32};

const std::vector<TensorShape> kShapes = {{1},       {7},          {1000},     {13, 17},
                                          {3, 1, 5}, {2, 3, 4, 9}, {40, 2049}, {1, 70001}};

param::Argsort argsort_param(bool descending) {
    param::Argsort p;
    p.order = descending ? param::Argsort::Order::DESCENDING : param::Argsort::Order::ASCENDING;
    return p;
}

param::TopK topk_param(param::TopK::Mode mode, int32_t k) {
    param::TopK p;
    p.mode = mode;
    p.k = k;
    return p;
}

// Few distinct values: long runs of ties in every line.
std::vector<double> tied_values(size_t n) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = double((i * 7919) % 5) - 2;
    return v;
}

// NaNs of both signs, infinities, signed zeros and repeats, in a scattered order.
std::vector<double> special_values(size_t n) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const double pool[] = {nan, -0.0, 1.5, inf, 0.0, -inf, -nan, -2.0, 1.5, 0.0, -1e30, 3.0};
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = pool[(i * 5 + i / 12) % 12];
    return v;
}

std::pair<double, double> range_of(DType dt) {
    if (dt == dtype::Uint8)
        return {0, 255};
    if (dt == dtype::Int8)
        return {-128, 127};
    if (dt == dtype::Int16 || dt == dtype::Int32)
        return {-30000, 30000};
    return {-1, 1};
}

std::vector<int32_t> ks_for(size_t n) {
    std::vector<int32_t> ks;
    for (size_t k : {size_t(1), size_t(3), n / 2, n})
        if (k >= 1 && k <= n) {
            ks.push_back(int32_t(k));
            ks.push_back(-int32_t(k));
        }
    return ks;
}

}  // namespace

TEST_F(X86, ArgsortMatchesNaive) {
    for (DType dt : kDTypes)
        for (const TensorShape& s : kShapes)
            for (bool desc : {false, true}) {
                Checker<Argsort> c(handle.get());
                auto [lo, hi] = range_of(dt);
                c.set_param(argsort_param(desc)).set_epsilon(0).set_dtype(0, dt);
                c.set_range(0, lo, hi).execs({s});
                c.set_values(0, tied_values(s.total_nr_elems())).execs({s});
                if (dt.is_float())
                    c.set_values(0, special_values(s.total_nr_elems())).execs({s});
            }
}

TEST_F(X86, ArgsortStridedAndEmpty) {
    for (bool desc : {false, true}) {
        Checker<Argsort> c(handle.get());
        c.set_param(argsort_param(desc)).set_epsilon(0).set_noncontiguous(true);
        c.execs({{5, 37}});
        c.execs({{2, 3, 11}});
        c.set_values(0, tied_values(5 * 37)).execs({{5, 37}});
        Checker<Argsort> e(handle.get());
        e.set_param(argsort_param(desc)).execs({{3, 0}});
        e.execs({{0, 4}});
    }
    // Lines read backwards: the stride along the sorted axis is negative.
    TensorLayout l({4, 9}, dtype::Float32);
    l.stride[1] = -1;
    HostTensor view(l);
    std::mt19937 rng(3);
    fill_uniform(view, -1, 1, rng);
    EXPECT_EQ(run_and_compare<Argsort>(*handle, argsort_param(false), {view}, {}, 0), "vqsort");
}

TEST_F(X86, TopKMatchesNaive) {
    using Mode = param::TopK::Mode;
    for (DType dt : kDTypes)
        for (const TensorShape& s : kShapes) {
            size_t n = s[s.ndim - 1];
            // The long line runs in TopKLongLine; the threaded rows in float32 only (naive is
            // slow there).
            if (n > 10000 || (s.total_nr_elems() > 10000 && dt != dtype::Float32))
                continue;
            for (Mode mode : {Mode::KTH_ONLY, Mode::VALUE_IDX_NOSORT, Mode::VALUE_IDX_SORTED})
                for (int32_t k : ks_for(n)) {
                    Checker<TopK> c(handle.get());
                    auto [lo, hi] = range_of(dt);
                    c.set_param(topk_param(mode, k)).set_epsilon(0).set_dtype(0, dt);
                    c.set_range(0, lo, hi).execs({s});
                    c.set_values(0, tied_values(s.total_nr_elems())).execs({s});
                    if (dt.is_float())
                        c.set_values(0, special_values(s.total_nr_elems())).execs({s});
                }
        }
}

// One long line (vqsort's and nth_element's larger paths), float32 only: naive is slow there.
TEST_F(X86, TopKLongLine) {
    using Mode = param::TopK::Mode;
    for (Mode mode : {Mode::KTH_ONLY, Mode::VALUE_IDX_NOSORT, Mode::VALUE_IDX_SORTED})
        for (int32_t k : {1, -5, 35000, -70001}) {
            Checker<TopK> c(handle.get());
            c.set_param(topk_param(mode, k)).set_epsilon(0).execs({{1, 70001}});
            c.set_values(0, tied_values(70001)).execs({{1, 70001}});
        }
}

// The heap's vector scan of dense float32 lines (topk_hwy.cpp) at each Highway target: lines
// shorter than two vectors, of whole vectors and with tails; values that never enter the heap
// after the first k, that all enter it (a monotonic line against its order), that enter only in
// the tail, ties, NaNs, infinities and signed zeros; k of 1, a few (heap) and n (no heap).
TEST_F(X86, TopKHeapScanAtEachHighwayTarget) {
#ifdef NEOMEG_WITH_DNNL
    using Mode = param::TopK::Mode;
    const std::vector<TensorShape> shapes = {{3, 37}, {2, 64}, {1, 100}, {2, 1031}};
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t) {
        for (const TensorShape& s : shapes) {
            const size_t n = s[1], total = s.total_nr_elems();
            std::vector<double> up(total), down(total), late(total, 0.0);
            for (size_t i = 0; i < total; ++i) {
                up[i] = double(i % n);
                down[i] = -double(i % n);
            }
            for (size_t r = 0; r < s[0]; ++r) {  // the extremes in the line's last three
                late[r * n + n - 1] = 5;
                late[r * n + n - 3] = -5;
            }
            for (Mode mode : {Mode::KTH_ONLY, Mode::VALUE_IDX_NOSORT, Mode::VALUE_IDX_SORTED})
                for (int32_t k : {1, -1, 4, -4, int32_t(n), -int32_t(n)}) {
                    Checker<TopK> c(handle.get());
                    c.set_param(topk_param(mode, k)).set_epsilon(0);
                    c.set_range(0, -1, 1).execs({s});
                    for (const auto& v :
                         {up, down, late, tied_values(total), special_values(total)})
                        c.set_values(0, v).execs({s});
                }
        }
    });
    EXPECT_GE(ran, 1u);
#endif
}

TEST_F(X86, TopKStridedAndEmpty) {
    using Mode = param::TopK::Mode;
    for (Mode mode : {Mode::KTH_ONLY, Mode::VALUE_IDX_NOSORT, Mode::VALUE_IDX_SORTED})
        for (int32_t k : {1, 4, -4, 37}) {
            Checker<TopK> c(handle.get());
            c.set_param(topk_param(mode, k)).set_epsilon(0).set_noncontiguous(true);
            c.execs({{5, 37}});
            c.set_values(0, tied_values(2 * 3 * 37)).execs({{2, 3, 37}});
            Checker<TopK> e(handle.get());
            e.set_param(topk_param(mode, k)).execs({{0, 37}});
        }
}

TEST_F(X86, SortRunsItsOwnKernels) {
    std::mt19937 rng(5);
    HostTensor x({6, 50}, dtype::Float32), i({6, 50}, dtype::Int8);
    fill_uniform(x, -1, 1, rng);
    fill_uniform(i, -100, 100, rng);
    using Mode = param::TopK::Mode;
    for (const HostTensor& t : {x, i}) {
        EXPECT_EQ(run_and_compare<Argsort>(*handle, argsort_param(true), {t}, {}, 0), "vqsort");
        for (Mode mode : {Mode::KTH_ONLY, Mode::VALUE_IDX_NOSORT, Mode::VALUE_IDX_SORTED}) {
            // A small k of a long line keeps a heap; a larger one partitions every key.
            EXPECT_EQ(run_and_compare<TopK>(*handle, topk_param(mode, -5), {t}, {}, 0), "heap");
            EXPECT_EQ(run_and_compare<TopK>(*handle, topk_param(mode, -20), {t}, {}, 0),
                      "nth_element");
        }
    }
}
