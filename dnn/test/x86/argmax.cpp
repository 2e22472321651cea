// Argmax and Argmin on the x86 handle (Highway kernels) against naive, exactly: every axis of
// ranks 1 to 4, lines of 1, primes, several vectors and above the threading grain, ties (the first
// wins), NaNs (the first wins) in any lane and in the tail, signed zeros and infinities, and the
// cases that go to naive (other dtypes); strided views through dense copies.
#include <limits>

#include "neomeg/dnn/operators/reduce.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

template <class P>
P axis_param(int32_t axis) {
    P p;
    p.axis = axis;
    return p;
}

template <class Op>
void check_all(Handle* handle) {
    const std::vector<TensorShape> shapes = {{1},        {7},          {1000},     {13, 17},
                                             {3, 1, 5},  {2, 3, 5, 7}, {64, 1001}, {3, 257, 129},
                                             {1, 70001}, {300, 301}};
    for (const TensorShape& s : shapes)
        for (int32_t a = -int32_t(s.ndim); a < int32_t(s.ndim); ++a) {
            Checker<Op> c(handle);
            c.set_param(axis_param<typename Op::Param>(a)).set_epsilon(0);
            c.execs({s});
            // Few distinct values: ties in most lines.
            std::vector<double> v(s.total_nr_elems());
            for (size_t i = 0; i < v.size(); ++i)
                v[i] = double((i * 7919) % 5);
            c.set_values(0, v).execs({s});
        }
}

template <class Op>
void check_special(Handle* handle) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    for (size_t n : {size_t(5), size_t(37), size_t(100)})
        for (size_t pos : {size_t(0), size_t(3), n / 2, n - 1}) {
            std::vector<double> v(n);
            for (size_t i = 0; i < n; ++i)
                v[i] = (i % 3 == 0) ? -0.0 : (i % 3 == 1 ? 0.0 : (i % 2 ? inf : -inf));
            v[pos] = nan;
            // Later NaNs in the same vector lane (8 and 16 lanes) and in another one.
            for (size_t later : {pos + 5, pos + 8, pos + 16})
                if (later < n)
                    v[later] = -nan;
            Checker<Op> c_row(handle);
            c_row.set_param(axis_param<typename Op::Param>(0)).set_epsilon(0);
            c_row.set_values(0, v).execs({{n}});
            // The same values down 19 columns, shifted by a column each: NaNs in every lane.
            std::vector<double> cols(n * 19);
            for (size_t k = 0; k < n; ++k)
                for (size_t j = 0; j < 19; ++j)
                    cols[k * 19 + j] = v[(k + j) % n];
            c_row.set_values(0, cols).execs({{n, 19}});
            // Without NaN: infinities and signed zeros tie.
            v[pos] = 0.0;
            if (pos + 5 < n)
                v[pos + 5] = -0.0;
            Checker<Op> c(handle);
            c.set_param(axis_param<typename Op::Param>(0)).set_epsilon(0);
            c.set_values(0, v).execs({{n}});
        }
}

}  // namespace

TEST_F(X86, ArgmaxMatchesNaive) {
    check_all<Argmax>(handle.get());
    check_special<Argmax>(handle.get());
}

TEST_F(X86, ArgminMatchesNaive) {
    check_all<Argmin>(handle.get());
    check_special<Argmin>(handle.get());
}

TEST_F(X86, ArgmaxRunsHighwayOrNaive) {
    std::mt19937 rng(4);
    HostTensor x({6, 50, 40}, dtype::Float32), i({6, 5}, dtype::Int32);
    fill_uniform(x, -1, 1, rng);
    for (int32_t a : {0, 1, 2}) {
        EXPECT_EQ(run_and_compare<Argmax>(*handle, axis_param<Argmax::Param>(a), {x}, {}, 0),
                  "hwy");
        EXPECT_EQ(run_and_compare<Argmin>(*handle, axis_param<Argmin::Param>(a), {x}, {}, 0),
                  "hwy");
    }
    EXPECT_EQ(run_and_compare<Argmax>(*handle, axis_param<Argmax::Param>(1), {i}, {}, 0), "naive");
    Checker<Argmax> c(handle.get());
    c.set_param(axis_param<Argmax::Param>(1)).set_noncontiguous(true).execs({{5, 7}});
}

// Strided views (a slice, a reversed batch, a transpose, a broadcast row), through dense copies;
// padded outputs too.
TEST_F(X86, ArgmaxOfStridedViewsMatchesNaive) {
    const std::vector<TensorLayout> views = {
            TensorLayout({64, 200}, {300, 1}, dtype::Float32),
            TensorLayout({9, 33}, {-33, 1}, dtype::Float32),
            TensorLayout({33, 9}, {1, 33}, dtype::Float32),
            TensorLayout({5, 17}, {0, 1}, dtype::Float32),
    };
    for (const TensorLayout& v : views)
        for (int32_t a : {0, 1, -1}) {
            Checker<Argmax> mx(handle.get());
            mx.set_param(axis_param<Argmax::Param>(a)).set_epsilon(0).exec_layouts({v});
            mx.set_noncontiguous(true).exec_layouts({v});
            Checker<Argmin> mn(handle.get());
            mn.set_param(axis_param<Argmin::Param>(a)).set_epsilon(0).exec_layouts({v});
        }
}
