#include <cmath>
#include <limits>

#include "naive/reduce_test_util.h"
#include "neomeg/dnn/operators/reduce.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using Order = param::Argsort::Order;

namespace {

param::Argsort order_param(Order o) {
    param::Argsort p;
    p.order = o;
    return p;
}

// A second formulation: insertion sort of each row, NaN counted as the largest value, stable
// ascending; descending places an element before every equal one (the reverse order).
void insertion_sort_rows(const std::vector<double>& v, size_t rows, size_t n, bool descending,
                         std::vector<double>& values, std::vector<double>& indices) {
    auto less = [](double x, double y) { return !std::isnan(x) && (std::isnan(y) || x < y); };
    auto before = [&](double a, double b) {  // a, later in the row, goes before b
        return descending ? !less(a, b) : less(a, b);
    };
    values.assign(v.size(), 0);
    indices.assign(v.size(), 0);
    for (size_t r = 0; r < rows; ++r) {
        std::vector<size_t> idx;
        for (size_t i = 0; i < n; ++i) {
            size_t pos = idx.size();
            while (pos > 0 && before(v[r * n + i], v[r * n + idx[pos - 1]]))
                --pos;
            idx.insert(idx.begin() + static_cast<ptrdiff_t>(pos), i);
        }
        for (size_t i = 0; i < n; ++i) {
            values[r * n + i] = v[r * n + idx[i]];
            indices[r * n + i] = static_cast<double>(idx[i]);
        }
    }
}

}  // namespace

TEST(Argsort, HandComputed) {
    auto x = HostTensor::from({3}, {3, 1, 2});
    auto asc = run<Argsort>(order_param(Order::ASCENDING), {x});
    EXPECT_EQ(asc[0].values(), (std::vector<double>{1, 2, 3}));
    EXPECT_EQ(asc[1].values(), (std::vector<double>{1, 2, 0}));
    EXPECT_EQ(asc[1].dtype(), dtype::Int32);
    auto desc = run<Argsort>(order_param(Order::DESCENDING), {x});
    EXPECT_EQ(desc[0].values(), (std::vector<double>{3, 2, 1}));
    EXPECT_EQ(desc[1].values(), (std::vector<double>{0, 2, 1}));
}

TEST(Argsort, TiesStableAscendingReversedDescending) {
    // MegEngine 1.13 (pairs of value and position compared whole): F.argsort([3, 3, 1, 3],
    // descending=True) is [3, 1, 0, 2], the ascending order reversed.
    auto x = HostTensor::from({3, 4}, {2, 1, 2, 1, 5, 5, 5, 5, 3, 3, 1, 3});
    auto asc = run<Argsort>(order_param(Order::ASCENDING), {x});
    EXPECT_EQ(asc[1].values(), (std::vector<double>{1, 3, 0, 2, 0, 1, 2, 3, 2, 0, 1, 3}));
    auto desc = run<Argsort>(order_param(Order::DESCENDING), {x});
    EXPECT_EQ(desc[1].values(), (std::vector<double>{2, 0, 3, 1, 3, 2, 1, 0, 3, 1, 0, 2}));
}

TEST(Argsort, NaNSortsAsLargest) {
    double nan = std::numeric_limits<double>::quiet_NaN();
    auto x = HostTensor::from({4}, {nan, 1, nan, 0});
    auto asc = run<Argsort>(order_param(Order::ASCENDING), {x});
    EXPECT_EQ(asc[1].values(), (std::vector<double>{3, 1, 0, 2}));
    auto av = asc[0].values();
    EXPECT_TRUE(av[0] == 0 && av[1] == 1 && std::isnan(av[2]) && std::isnan(av[3]));
    auto desc = run<Argsort>(order_param(Order::DESCENDING), {x});
    EXPECT_EQ(desc[1].values(), (std::vector<double>{2, 0, 1, 3}));
}

TEST(Argsort, MatchesInsertionSortForEveryDtype) {
    std::mt19937 rng(31);
    size_t rows = 5, n = 23;
    auto v = random_values(rows * n, -6, 6, rng, true);  // many ties
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8, dtype::Int16,
                     dtype::Int32}) {
        auto x = HostTensor::from({rows, n}, v, dt);
        for (auto order : {Order::ASCENDING, Order::DESCENDING}) {
            auto got = run<Argsort>(order_param(order), {x});
            std::vector<double> values, indices;
            insertion_sort_rows(v, rows, n, order == Order::DESCENDING, values, indices);
            EXPECT_EQ(got[0].dtype(), dt);
            EXPECT_EQ(got[0].values(), values) << dt.name() << " " << to_string(order);
            EXPECT_EQ(got[1].values(), indices) << dt.name() << " " << to_string(order);
        }
    }
    auto u8 = HostTensor::from({4}, {200, 3, 255, 0}, dtype::Uint8);
    EXPECT_EQ(run<Argsort>(order_param(Order::ASCENDING), {u8})[1].values(),
              (std::vector<double>{3, 1, 0, 2}));
}

TEST(Argsort, ValuesAreSrcAtIndicesAndSorted) {
    std::mt19937 rng(32);
    TensorShape shape{3, 4, 37};
    auto x = HostTensor::from(shape, random_values(shape.total_nr_elems(), -1, 1, rng));
    auto v = x.values();
    auto got = run<Argsort>(order_param(Order::DESCENDING), {x});
    auto vals = got[0].values(), idx = got[1].values();
    for (size_t line = 0; line < 12; ++line) {
        std::vector<bool> seen(37, false);
        for (size_t i = 0; i < 37; ++i) {
            auto j = static_cast<size_t>(idx[line * 37 + i]);
            ASSERT_LT(j, 37u);
            EXPECT_FALSE(seen[j]);
            seen[j] = true;
            EXPECT_EQ(vals[line * 37 + i], v[line * 37 + j]);
            if (i > 0) {
                EXPECT_GE(vals[line * 37 + i - 1], vals[line * 37 + i]);
            }
        }
    }
}

TEST(Argsort, StridedInputsAndOutputs) {
    for (auto order : {Order::ASCENDING, Order::DESCENDING}) {
        Checker<Argsort> c(naive_handle());
        c.set_param(order_param(order)).set_noncontiguous(true).execs({{3, 4, 5}});
        c.set_noncontiguous(false);
        c.exec_layouts({TensorLayout({6, 5}, dtype::Float32).dimshuffle({1, 0})});
        c.exec_layouts({TensorLayout({1, 6}, dtype::Float32).broadcast({4, 6})});
        c.exec_layouts({TensorLayout({4, 6}, {6, -1}, dtype::Float32)});
        auto x = HostTensor::from({2, 3}, {3, -1, 2, 0, 9, -4});
        auto padded = run_into_padded<Argsort>(order_param(order), {x});
        auto plain = run<Argsort>(order_param(order), {x});
        EXPECT_FALSE(padded[0].layout().is_contiguous());
        EXPECT_TRUE(tensors_near(padded[0], plain[0], 0));
        EXPECT_TRUE(tensors_near(padded[1], plain[1], 0));
    }
}

TEST(Argsort, EdgeShapes) {
    for (auto shape : std::vector<TensorShape>{{0}, {0, 5}, {3, 0}}) {
        auto got = run<Argsort>(order_param(Order::ASCENDING), {HostTensor(shape, dtype::Float32)});
        EXPECT_EQ(got[0].shape().to_string(), shape.to_string());
        EXPECT_EQ(got[1].shape().to_string(), shape.to_string());
    }
    auto one = run<Argsort>(order_param(Order::DESCENDING), {HostTensor::from({1}, {7})});
    EXPECT_EQ(one[1].values()[0], 0);
    Checker<Argsort> c(naive_handle());
    c.set_param(order_param(Order::ASCENDING)).execs({{13}}).execs({{7, 11}}).execs({{2, 4099}});
    std::mt19937 rng(33);
    auto v = random_values(2 * 4099, -100, 100, rng, true);
    std::vector<double> values, indices;
    insertion_sort_rows(v, 2, 4099, false, values, indices);
    auto got = run<Argsort>(order_param(Order::ASCENDING), {HostTensor::from({2, 4099}, v)});
    EXPECT_EQ(got[1].values(), indices);
}

TEST(Argsort, RejectsScalarAndBool) {
    expect_error<ShapeError>(
            [] {
                run<Argsort>(order_param(Order::ASCENDING),
                             {HostTensor(TensorShape{}, dtype::Float32)});
            },
            {"Argsort(order=ASCENDING)", "at least one axis", "{} float32"});
    expect_error<DTypeError>(
            [] { run<Argsort>(order_param(Order::DESCENDING), {HostTensor({3}, dtype::Bool)}); },
            {"Argsort(order=DESCENDING)", "bool", "{3(1)} bool"});
}
