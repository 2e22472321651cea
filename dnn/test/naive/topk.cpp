#include <algorithm>
#include <cmath>
#include <limits>

#include "naive/reduce_test_util.h"
#include "neomeg/dnn/operators/reduce.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using Mode = param::TopK::Mode;

namespace {

param::TopK make_param(Mode mode, int32_t k) {
    param::TopK p;
    p.mode = mode;
    p.k = k;
    return p;
}

// A second formulation: the rank of element i is the number of elements ordered before it
// (smaller, or equal at a lower index; for k < 0 larger, or equal at a higher index, as MegEngine
// 1.13 orders ties). The top k are ranks 0..|k|-1.
std::vector<size_t> ranks(const std::vector<double>& row, bool largest) {
    std::vector<size_t> r(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i)
        for (size_t j = 0; j < row.size(); ++j) {
            double a = row[j], b = row[i];
            bool before = largest ? a > b : a < b;
            if (before || (a == b && (largest ? j > i : j < i)))
                ++r[i];
        }
    return r;
}

}  // namespace

TEST(TopK, MegEngineDocExample) {
    // F.topk(x, 5, descending=False) from MegEngine's documentation.
    auto x = HostTensor::from({8}, {2, 4, 6, 8, 7, 5, 3, 1});
    auto got = run<TopK>(make_param(Mode::VALUE_IDX_SORTED, 5), {x});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].values(), (std::vector<double>{1, 2, 3, 4, 5}));
    EXPECT_EQ(got[1].values(), (std::vector<double>{7, 0, 6, 1, 5}));
    EXPECT_EQ(got[1].dtype(), dtype::Int32);
    // descending=True passes -k: the largest first.
    auto largest = run<TopK>(make_param(Mode::VALUE_IDX_SORTED, -3), {x});
    EXPECT_EQ(largest[0].values(), (std::vector<double>{8, 7, 6}));
    EXPECT_EQ(largest[1].values(), (std::vector<double>{3, 4, 2}));
}

TEST(TopK, KthOnlyDropsTheLastAxis) {
    auto x = HostTensor::from({8}, {2, 4, 6, 8, 7, 5, 3, 1});
    auto kth = run<TopK>(make_param(Mode::KTH_ONLY, 5), {x});
    ASSERT_EQ(kth.size(), 1u);
    EXPECT_EQ(kth[0].shape().ndim, 0u);
    EXPECT_EQ(kth[0].values()[0], 5);
    EXPECT_EQ(run1<TopK>(make_param(Mode::KTH_ONLY, -2), {x}).values()[0], 7);
    auto rows = HostTensor::from({2, 3}, {3, 1, 2, 9, 8, 7});
    auto r = run1<TopK>(make_param(Mode::KTH_ONLY, 1), {rows});
    EXPECT_EQ(r.shape().to_string(), "{2}");
    EXPECT_EQ(r.values(), (std::vector<double>{1, 7}));
}

TEST(TopK, NoSortGivesTheSameSet) {
    std::mt19937 rng(41);
    auto x = HostTensor::from({4, 19}, random_values(76, -3, 3, rng));
    for (int32_t k : {1, 6, -6, 19, -19}) {
        auto sorted = run<TopK>(make_param(Mode::VALUE_IDX_SORTED, k), {x});
        auto nosort = run<TopK>(make_param(Mode::VALUE_IDX_NOSORT, k), {x});
        auto n = static_cast<size_t>(std::abs(k));
        auto si = sorted[1].values(), ni = nosort[1].values();
        auto nv = nosort[0].values(), xv = x.values();
        for (size_t row = 0; row < 4; ++row) {
            std::vector<double> a(si.begin() + row * n, si.begin() + (row + 1) * n);
            std::vector<double> b(ni.begin() + row * n, ni.begin() + (row + 1) * n);
            for (size_t i = 0; i < n; ++i)
                EXPECT_EQ(nv[row * n + i], xv[row * 19 + static_cast<size_t>(b[i])]);
            std::sort(a.begin(), a.end());
            std::sort(b.begin(), b.end());
            EXPECT_EQ(a, b) << "k " << k << " row " << row;
        }
    }
}

TEST(TopK, MatchesRankCountingForEveryDtype) {
    std::mt19937 rng(42);
    size_t rows = 3, n = 17;
    auto v = random_values(rows * n, -5, 5, rng, true);  // many ties
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8, dtype::Uint8,
                     dtype::Int16, dtype::Int32}) {
        std::vector<double> vv = v;
        if (dt == dtype::Uint8)
            for (auto& e : vv)
                e += 5;
        auto x = HostTensor::from({rows, n}, vv, dt);
        for (int32_t k : {1, 4, -4, 17, -17}) {
            auto kk = static_cast<size_t>(std::abs(k));
            auto got = run<TopK>(make_param(Mode::VALUE_IDX_SORTED, k), {x});
            auto kth = run1<TopK>(make_param(Mode::KTH_ONLY, k), {x});
            EXPECT_EQ(got[0].dtype(), dt);
            EXPECT_EQ(kth.dtype(), dt);
            auto gv = got[0].values(), gi = got[1].values(), kv = kth.values();
            for (size_t r = 0; r < rows; ++r) {
                std::vector<double> row(vv.begin() + r * n, vv.begin() + (r + 1) * n);
                auto rk = ranks(row, k < 0);
                for (size_t i = 0; i < n; ++i) {
                    if (rk[i] >= kk)
                        continue;
                    EXPECT_EQ(gi[r * kk + rk[i]], i) << dt.name() << " k " << k;
                    EXPECT_EQ(gv[r * kk + rk[i]], row[i]) << dt.name() << " k " << k;
                    if (rk[i] == kk - 1) {
                        EXPECT_EQ(kv[r], row[i]) << dt.name() << " k " << k;
                    }
                }
            }
        }
    }
}

TEST(TopK, LargestOfTiesAreTheLastAsInMegEngine) {
    // MegEngine 1.13: F.topk([3, 3, 1, 3], 2, descending=True) gives indices [3, 1]; all-equal
    // rows give the last positions first.
    auto x = HostTensor::from({2, 4}, {3, 3, 1, 3, 0, 0, 0, 0});
    auto got = run<TopK>(make_param(Mode::VALUE_IDX_SORTED, -2), {x});
    EXPECT_EQ(got[1].values(), (std::vector<double>{3, 1, 3, 2}));
    auto nosort = run<TopK>(make_param(Mode::VALUE_IDX_NOSORT, -2), {x});
    EXPECT_EQ(nosort[1].values(), (std::vector<double>{1, 3, 2, 3}));
    EXPECT_EQ(run<TopK>(make_param(Mode::VALUE_IDX_SORTED, 2), {x})[1].values(),
              (std::vector<double>{2, 0, 0, 1}));
}

TEST(TopK, NaNRanksAsLargest) {
    double nan = std::numeric_limits<double>::quiet_NaN();
    auto x = HostTensor::from({4}, {1, nan, -1, 0});
    auto largest = run<TopK>(make_param(Mode::VALUE_IDX_SORTED, -2), {x});
    EXPECT_EQ(largest[1].values(), (std::vector<double>{1, 0}));
    EXPECT_TRUE(std::isnan(largest[0].values()[0]));
    auto smallest = run<TopK>(make_param(Mode::VALUE_IDX_SORTED, 3), {x});
    EXPECT_EQ(smallest[1].values(), (std::vector<double>{2, 3, 0}));
}

TEST(TopK, StridedInputsAndOutputs) {
    for (auto mode : {Mode::KTH_ONLY, Mode::VALUE_IDX_NOSORT, Mode::VALUE_IDX_SORTED}) {
        for (int32_t k : {2, -3}) {
            Checker<TopK> c(naive_handle());
            c.set_param(make_param(mode, k)).set_noncontiguous(true).execs({{3, 4, 5}});
            c.set_noncontiguous(false);
            c.exec_layouts({TensorLayout({6, 5}, dtype::Float32).dimshuffle({1, 0})});
            c.exec_layouts({TensorLayout({1, 6}, dtype::Float32).broadcast({4, 6})});
            c.exec_layouts({TensorLayout({4, 6}, {-6, -1}, dtype::Float32)});
            auto x = HostTensor::from({2, 4}, {3, -1, 2, 0, 9, -4, 5, 5});
            auto padded = run_into_padded<TopK>(make_param(mode, k), {x});
            auto plain = run<TopK>(make_param(mode, k), {x});
            for (size_t i = 0; i < plain.size(); ++i)
                EXPECT_TRUE(tensors_near(padded[i], plain[i], 0)) << to_string(mode) << " " << i;
        }
    }
}

TEST(TopK, EdgeShapes) {
    auto empty =
            run<TopK>(make_param(Mode::VALUE_IDX_SORTED, 3), {HostTensor({0, 5}, dtype::Float32)});
    EXPECT_EQ(empty[0].shape().to_string(), "{0,3}");
    EXPECT_EQ(empty[1].shape().to_string(), "{0,3}");
    EXPECT_EQ(run1<TopK>(make_param(Mode::KTH_ONLY, -2), {HostTensor({0, 5}, dtype::Float32)})
                      .shape()
                      .to_string(),
              "{0}");
    EXPECT_EQ(run1<TopK>(make_param(Mode::KTH_ONLY, 1), {HostTensor::from({1}, {4})}).values()[0],
              4);
    Checker<TopK> c(naive_handle());
    c.set_param(make_param(Mode::VALUE_IDX_SORTED, -7))
            .execs({{7}})
            .execs({{11, 13}})
            .execs({{2, 4099}});
    // The large case against rank counting: the 5 largest of 4099.
    std::mt19937 rng(43);
    auto v = random_values(4099, -1, 1, rng);
    auto got = run<TopK>(make_param(Mode::VALUE_IDX_SORTED, -5), {HostTensor::from({4099}, v)});
    auto rk = ranks(v, true);
    auto gi = got[1].values();
    for (size_t i = 0; i < 4099; ++i) {
        if (rk[i] < 5) {
            EXPECT_EQ(gi[rk[i]], i);
        }
    }
}

TEST(TopK, RejectsBadKScalarAndBool) {
    auto x = HostTensor({2, 4}, dtype::Float32);
    for (int32_t k : {0, 5, -5})
        expect_error<ParamError>([&] { run<TopK>(make_param(Mode::VALUE_IDX_SORTED, k), {x}); },
                                 {"TopK(mode=VALUE_IDX_SORTED, k=" + std::to_string(k) + ")",
                                  "1 <= |k| <= 4", "{2(4),4(1)} float32"});
    expect_error<ParamError>(
            [] {
                run<TopK>(make_param(Mode::KTH_ONLY, 1), {HostTensor({3, 0}, dtype::Float32)});
            },
            {"TopK(mode=KTH_ONLY, k=1)", "{3(1),0(1)} float32"});
    expect_error<ShapeError>(
            [] {
                run<TopK>(make_param(Mode::KTH_ONLY, 1),
                          {HostTensor(TensorShape{}, dtype::Float32)});
            },
            {"TopK(mode=KTH_ONLY, k=1)", "{} float32"});
    expect_error<DTypeError>(
            [] { run<TopK>(make_param(Mode::KTH_ONLY, 1), {HostTensor({3}, dtype::Bool)}); },
            {"TopK(mode=KTH_ONLY, k=1)", "bool"});
}
