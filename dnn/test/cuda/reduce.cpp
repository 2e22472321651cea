// Reduce on the CUDA handle against naive: every mode, every axis, float and integer dtypes,
// short and long axes (both kernel shapes), empty axes and outputs, strided and reversed views,
// padded outputs, NaN propagation through MIN/MAX.
#include <cmath>

#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/reduce.h"
#include "neomeg/dnn/param_base.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Reduce::Mode;
const Mode kModes[] = {Mode::SUM, Mode::SUM_SQR, Mode::PRODUCT, Mode::MIN, Mode::MAX, Mode::MEAN};

param::Reduce reduce_param(Mode m, int32_t axis) {
    param::Reduce p;
    p.mode = m;
    p.axis = axis;
    return p;
}

}  // namespace

TEST_F(Cuda, ReduceEveryModeAxisAndDtype) {
    for (Mode m : kModes)
        for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8, dtype::Int32,
                         dtype::Uint8})
            for (int32_t axis : {0, 1, 2, -1}) {
                SCOPED_TRACE(std::string(param::to_string(m)) + " " + dt.name());
                CudaChecker<Reduce> c(handle.get());
                c.set_param(reduce_param(m, axis)).set_dtype(0, dt).expect_kernel("cuda");
                // PRODUCT of values near 1 stays finite; integers small enough to wrap visibly.
                if (m == Mode::PRODUCT)
                    c.set_range(0, dt.is_float() ? 0.9 : -3, dt.is_float() ? 1.1 : 3);
                else if (!dt.is_float())
                    c.set_range(0, -100, 100);
                c.execs({{3, 17, 5}});
                c.execs({{2, 4099, 3}});
                c.set_noncontiguous(true).execs({{4, 6, 7}});
            }
}

TEST_F(Cuda, ReduceLongLinesAndManyOutputs) {
    for (Mode m : {Mode::SUM, Mode::MAX, Mode::MEAN}) {
        CudaChecker<Reduce> c(handle.get());
        c.set_param(reduce_param(m, -1)).expect_kernel("cuda");
        c.execs({{(1 << 20) + 7}});
        c.set_param(reduce_param(m, 0)).execs({{9, 8193}});
        c.set_param(reduce_param(m, 1)).execs({{8193, 3}});
    }
}

TEST_F(Cuda, ReduceEmptyAxisAndEmptyOutput) {
    for (Mode m : {Mode::SUM, Mode::SUM_SQR, Mode::PRODUCT, Mode::MEAN}) {
        CudaChecker<Reduce> c(handle.get());
        c.set_param(reduce_param(m, 1)).expect_kernel("cuda").execs({{3, 0, 2}});
        c.set_param(reduce_param(m, 0)).execs({{3, 0, 2}});
    }
}

TEST_F(Cuda, ReduceViewsAndNaN) {
    CudaChecker<Reduce> c(handle.get());
    c.set_param(reduce_param(Mode::SUM, 0)).expect_kernel("cuda");
    c.exec_layouts({TensorLayout({5, 6}, dtype::Float32).dimshuffle({1, 0})});
    c.exec_layouts({TensorLayout({4, 5}, {-5, 1}, dtype::Float32)});
    c.exec_layouts({TensorLayout({4, 5}, {0, 1}, dtype::Float32)});
    for (Mode m : {Mode::MAX, Mode::MIN}) {
        CudaChecker<Reduce> n(handle.get());
        n.set_param(reduce_param(m, 1)).set_values(0, {1, std::nan(""), 3, 4, 5, 6});
        n.execs({{2, 3}});
    }
}
