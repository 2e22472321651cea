// CondTake and NonZero on the CUDA handle against naive: every dtype, 1-D to 4-D, long inputs
// (CUB's scan over many blocks), all or nothing taken, -0.0 and NaN, strided inputs and padded
// outputs, and empty inputs (count 0). The whole capacity is compared, so an element written past
// the count fails too.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/indexing.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

const DType kAll[] = {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8,
                      dtype::Uint8,   dtype::Int16,   dtype::Int32,    dtype::Bool};

const TensorShape kShapes[] = {{1}, {7}, {3, 5}, {2, 3, 4}, {2, 1, 3, 5}, {100003}, {0}, {3, 0}};

}  // namespace

TEST_F(Cuda, CondTakeMatchesNaive) {
    for (DType dt : kAll)
        for (const TensorShape& s : kShapes) {
            CudaChecker<CondTake> c(handle.get());
            c.set_dtype(0, dt).set_dtype(1, dtype::Bool).set_epsilon(0).expect_kernel("cuda");
            c.execs({s, s});
            c.set_noncontiguous(true).execs({s, s});
        }
    // Every element taken, then none.
    for (double m : {1.0, 0.0}) {
        CudaChecker<CondTake> c(handle.get());
        c.set_dtype(1, dtype::Bool).set_values(1, std::vector<double>(12, m)).set_epsilon(0);
        c.expect_kernel("cuda").execs({{3, 4}, {3, 4}});
    }
    // A broadcast mask (stride 0) and a transposed data.
    CudaChecker<CondTake> c(handle.get());
    c.set_epsilon(0).expect_kernel("cuda");
    c.exec_layouts({TensorLayout({5, 4}, dtype::Float32).dimshuffle({1, 0}),
                    TensorLayout({4, 5}, {0, 1}, dtype::Bool)});
}

TEST_F(Cuda, NonZeroMatchesNaive) {
    for (DType dt : kAll)
        for (const TensorShape& s : kShapes) {
            CudaChecker<NonZero> c(handle.get());
            // Integers in [-1, 2): about a third zeros.
            c.set_dtype(0, dt).set_range(0, -1, 2).set_epsilon(0).expect_kernel("cuda");
            c.execs({s});
            c.set_noncontiguous(true).execs({s});
        }
    // -0.0 is zero, NaN and the smallest float16 denormal are not.
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16}) {
        CudaChecker<NonZero> c(handle.get());
        c.set_dtype(0, dt).set_epsilon(0).expect_kernel("cuda");
        c.set_values(0, {0.0, -0.0, std::nan(""), 1.0, 0.0, -2.5, 0x1p-24, 0.0});
        c.execs({{2, 4}});
    }
}
