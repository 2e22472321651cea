// TypeCvt, Relayout and Fill on the CUDA handle against naive: every dtype pair, saturating
// float-to-integer conversions, strided, transposed, broadcast and reversed views, padded outputs.
#include <limits>

#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/tensor_basic.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

const DType kAll[] = {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8,
                      dtype::Uint8,   dtype::Int16,   dtype::Int32,    dtype::Bool};

}  // namespace

TEST_F(Cuda, TypeCvtEveryPair) {
    for (DType from : kAll)
        for (DType to : kAll) {
            param::TypeCvt p;
            p.dtype = to.enumv();
            CudaChecker<TypeCvt> c(handle.get());
            c.set_param(p).set_dtype(0, from).set_epsilon(0).expect_kernel("cuda");
            // Out of every integer range and fractional, so that saturation and truncation show.
            c.set_range(0, -70000, 70000).execs({{5, 33}});
            c.set_range(0, -3, 3).execs({{7}});
            c.set_noncontiguous(true).execs({{3, 4, 5}});
        }
}

TEST_F(Cuda, TypeCvtSpecialValues) {
    param::TypeCvt p;
    p.dtype = DTypeEnum::Int8;
    double inf = std::numeric_limits<double>::infinity();
    CudaChecker<TypeCvt> c(handle.get());
    c.set_param(p).set_epsilon(0);
    c.set_values(0, {std::nan(""), inf, -inf, -1.5, 127.9, -128.9, 1e10}).execs({{7}});
}

TEST_F(Cuda, RelayoutViews) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int8, dtype::Bool}) {
        CudaChecker<Relayout> c(handle.get());
        c.set_dtype(0, dt).set_epsilon(0);
        c.expect_kernel("cuda:memcpy").execs({{6, 7}});
        c.expect_kernel("cuda").set_noncontiguous(true).execs({{2, 3, 4}});
        c.set_noncontiguous(false);
        c.exec_layouts({TensorLayout({4, 5, 6}, dt).dimshuffle({2, 0, 1})});
        c.exec_layouts({TensorLayout({4, 5}, {0, 1}, dt)});
        c.exec_layouts({TensorLayout({4, 5}, {-5, -1}, dt)});
    }
}

TEST_F(Cuda, FillEveryDtype) {
    for (DType dt : kAll) {
        param::Fill p;
        p.value = 2.75f;
        p.dtype = dt.enumv();
        CudaChecker<Fill> c(handle.get());
        c.set_param(p).set_epsilon(0).expect_kernel("cuda");
        c.set_output_shapes({{3, 7}}).execs({});
        c.set_output_shapes({{0}}).execs({});
        c.set_noncontiguous(true).set_output_shapes({{4, 5}}).execs({});
    }
}
