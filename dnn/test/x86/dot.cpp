// Dot on the x86 handle against naive: every dtype it takes, lengths of 0, 1, below and above the
// eight running sums and the threading grain, strided and broadcast operands; integers exactly
// (wrapping products), floats within rounding of naive's sum in one order.
#include "neomeg/dnn/operators/linalg.h"
#include "neomeg/dnn/param_base.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(X86, DotMatchesNaive) {
    for (DType dt :
         {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8, dtype::Int16, dtype::Int32})
        for (size_t n :
             {size_t(0), size_t(1), size_t(7), size_t(8), size_t(1003), size_t(300007)}) {
            Checker<Dot> c(handle.get());
            bool is_int = dt.is_int();
            double lo = is_int ? -30000 : -1, hi = is_int ? 30000 : 1;
            if (dt == dtype::Int8)
                lo = -128, hi = 127;
            c.set_dtype(0, dt).set_dtype(1, dt).set_range(0, lo, hi).set_range(1, lo, hi);
            c.set_epsilon(is_int ? 0 : (dt == dtype::Float32 ? 1e-6 : 1e-2));
            c.execs({{n}, {n}});
            c.set_noncontiguous(true).execs({{n}, {n}});
            c.set_noncontiguous(false).exec_layouts(
                    {TensorLayout({n}, {0}, dt), TensorLayout({n}, dt)});
        }
    // int32 products and sums that overflow wrap as naive's do.
    Checker<Dot> w(handle.get());
    w.set_dtype(0, dtype::Int32).set_dtype(1, dtype::Int32).set_epsilon(0);
    w.set_range(0, 1e9, 2e9).set_range(1, 1e9, 2e9).execs({{100001}, {100001}});
}

TEST_F(X86, DotRunsItsLoop) {
    std::mt19937 rng(4);
    HostTensor a({100}, dtype::Float32), b({100}, dtype::Float32);
    fill_uniform(a, -1, 1, rng);
    fill_uniform(b, -1, 1, rng);
    EXPECT_EQ(run_and_compare<Dot>(*handle, param::Empty{}, {a, b}, {}, 1e-6), "loop");
}
