// Arange, Linspace and Eye on the CUDA handle against naive: every dtype they take, strided
// outputs, empty and single-element outputs, every diagonal offset.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/tensor_basic.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(Cuda, ArangeAndLinspace) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int32, dtype::Int8}) {
        param::Arange a;
        a.start = -3.5f;
        a.step = 0.25f;
        a.dtype = dt.enumv();
        CudaChecker<Arange> c(handle.get());
        c.set_param(a).set_epsilon(0).expect_kernel("cuda");
        for (size_t n : {0, 1, 29})
            c.set_output_shapes({{n}}).execs({});
        c.set_noncontiguous(true).set_output_shapes({{17}}).execs({});
    }
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (bool endpoint : {true, false}) {
            param::Linspace p;
            p.start = -1;
            p.stop = 2.7f;
            p.endpoint = endpoint;
            p.dtype = dt.enumv();
            CudaChecker<Linspace> c(handle.get());
            c.set_param(p).set_epsilon(0).expect_kernel("cuda");
            for (size_t n : {0, 1, 2, 101})
                c.set_output_shapes({{n}}).execs({});
            c.set_noncontiguous(true).set_output_shapes({{13}}).execs({});
        }
}

TEST_F(Cuda, EyeEveryOffset) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int32, dtype::Bool})
        for (int32_t k : {-4, -1, 0, 2, 7}) {
            param::Eye p;
            p.k = k;
            p.dtype = dt.enumv();
            CudaChecker<Eye> c(handle.get());
            c.set_param(p).set_epsilon(0).expect_kernel("cuda");
            c.set_output_shapes({{5, 7}}).execs({});
            c.set_noncontiguous(true).set_output_shapes({{6, 3}}).execs({});
        }
}
