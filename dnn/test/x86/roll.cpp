// Roll on the x86 handle against naive, exactly, at 1, 2 and 3 threads: contiguous tensors (the
// row-by-row copy: the last axis, the first, an outer axis rolled with an inner one, a repeated
// axis, shifts of any sign and size) and padded, transposed, broadcast and reversed views (the
// copy of each piece), sizes 0, 1 and primes, element sizes 1, 2 and 4 and bool, and tensors
// past the threading grain, one of them a single row cut into pieces.
#include "neomeg/dnn/operators/tensor_shape.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

struct RollCase {
    param::Roll p;
    TensorShape shape;
};

const RollCase kCases[] = {
        {param::Roll{{3}, {1}}, {13, 29}},
        {param::Roll{{-1}, {-1}}, {7, 1, 5}},
        {param::Roll{{1}, {0}}, {5, 3, 7}},
        {param::Roll{{2, -3}, {0, 2}}, {5, 4, 7}},
        {param::Roll{{1, 1, 1}, {0, 1, 2}}, {2, 3, 5}},
        {param::Roll{{40, 2}, {1, 1}}, {3, 11}},
        {param::Roll{{5}, {1}}, {3, 5}},
        {param::Roll{{1}, {0}}, {1, 9}},
        {param::Roll{{1, 2}, {1, 0}}, {0, 4}},
        {param::Roll{{100003}, {0}}, {1 << 18}},
        {param::Roll{{7, -100}, {0, 1}}, {64, 2048}},
        {param::Roll{{3}, {2}}, {31, 37, 101}},
};

}  // namespace

TEST_F(X86, RollMatchesNaive) {
    for (int threads : {1, 2, 3}) {
        ScopedOmpThreads scope(threads);
        for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int8, dtype::Bool, dtype::Int32,
                         dtype::BFloat16}) {
            for (const RollCase& rc : kCases) {
                Checker<Roll> c(handle.get());
                c.set_epsilon(0).set_dtype(0, dt).set_range(0, -100, 100).set_param(rc.p);
                c.execs({rc.shape});
                c.set_noncontiguous(true).execs({rc.shape});
            }
            Checker<Roll> c(handle.get());
            c.set_epsilon(0).set_dtype(0, dt).set_range(0, -100, 100);
            c.set_param(param::Roll{{2, -1}, {0, 1}});
            c.exec_layouts({TensorLayout({7, 5}, dt).dimshuffle({1, 0})});
            c.exec_layouts({TensorLayout({5, 7}, {0, 1}, dt)});
            c.exec_layouts({TensorLayout({5, 7}, {-7, -1}, dt)});
        }
        // Above 16 MiB: written with non-temporal stores (row_runs.h).
        Checker<Roll> big(handle.get());
        big.set_epsilon(0).set_param(param::Roll{{-2, 1001}, {1, 0}}).execs({{2053, 2048}});
    }
}

TEST_F(X86, RollRunsItsOwnKernels) {
    HostTensor a({4, 5}, dtype::Float32);
    EXPECT_EQ(run_and_compare<Roll>(*handle, param::Roll{{2}, {1}}, {a}, {}, 0), "rows");
    EXPECT_EQ(run_and_compare<Roll>(*handle, param::Roll{{2, 1}, {1, 0}}, {a}, {}, 0), "rows");
    EXPECT_EQ(run_and_compare<Roll>(*handle, param::Roll{{5}, {1}}, {a}, {}, 0), "copy");
    HostTensor t(TensorLayout({5, 4}, dtype::Float32).dimshuffle({1, 0}));
    EXPECT_EQ(run_and_compare<Roll>(*handle, param::Roll{{2}, {1}}, {t}, {}, 0), "copy");
}
