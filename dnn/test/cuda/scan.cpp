// Argmax, Argmin and Cumsum on the CUDA handle against naive: every axis, short and long lines
// (both kernel shapes), float and integer dtypes, ties and NaNs (the first wins), exclusive and
// reverse scans, strided inputs and padded outputs.
#include <cmath>

#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/reduce.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(Cuda, ArgmaxArgminMatchNaive) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8, dtype::Int32})
        for (int32_t axis : {0, 1, -1}) {
            param::ArgReduce p;
            p.axis = axis;
            CudaChecker<Argmax> mx(handle.get());
            CudaChecker<Argmin> mn(handle.get());
            // Few distinct values: many ties.
            mx.set_param(p).set_dtype(0, dt).set_range(0, -4, 4).expect_kernel("cuda");
            mn.set_param(p).set_dtype(0, dt).set_range(0, -4, 4).expect_kernel("cuda");
            for (TensorShape s : {TensorShape{3, 17, 5}, TensorShape{2, 5000, 3}}) {
                mx.execs({s});
                mn.execs({s});
            }
            mx.set_noncontiguous(true).execs({{4, 6, 7}});
            mn.set_noncontiguous(true).execs({{4, 6, 7}});
        }
    double nan = std::nan("");
    param::ArgReduce last;
    last.axis = 1;
    CudaChecker<Argmin> n(handle.get());
    n.set_param(last).set_values(0, {1, nan, 0, nan, 5, 6, 7, 8}).execs({{2, 4}});
    CudaChecker<Argmax> x(handle.get());
    x.set_param(last).set_values(0, {1, 9, 0, 9, 5, 6, nan, 8}).execs({{2, 4}});
}

TEST_F(Cuda, CumsumMatchesNaive) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8, dtype::Int32})
        for (int32_t axis : {0, 1, -1})
            for (bool exclusive : {false, true})
                for (bool reverse : {false, true}) {
                    param::Cumsum p;
                    p.axis = axis;
                    p.exclusive = exclusive;
                    p.reverse = reverse;
                    CudaChecker<Cumsum> c(handle.get());
                    c.set_param(p).set_dtype(0, dt).expect_kernel("cuda");
                    if (!dt.is_float())
                        c.set_range(0, -100, 100);
                    c.execs({{3, 17, 5}});
                    c.execs({{2, 1000, 3}});
                    c.set_noncontiguous(true).execs({{4, 6, 7}});
                }
    CudaChecker<Cumsum> many(handle.get());
    many.expect_kernel("cuda").execs({{5, 9000}});
}
