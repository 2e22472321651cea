// Concat, Split, Roll, Padding and PaddingBackward on the CUDA handle against naive: every axis,
// empty pieces, every dtype, shifts of any sign and size on one or several axes, strided inputs and
// padded outputs, the three border modes with borders wider than src.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/tensor_basic.h"
#include "neomeg/dnn/operators/tensor_shape.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

const DType kAll[] = {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8,
                      dtype::Uint8,   dtype::Int16,   dtype::Int32,    dtype::Bool};

param::Padding pad(param::Padding::Mode m, std::vector<int32_t> front, std::vector<int32_t> back) {
    param::Padding p;
    p.mode = m;
    p.value = 2.5f;
    p.front_offsets = std::move(front);
    p.back_offsets = std::move(back);
    return p;
}

}  // namespace

TEST_F(Cuda, ConcatAndSplitEveryAxis) {
    for (DType dt : kAll)
        for (int32_t axis : {0, 1, -1}) {
            param::Concat p;
            p.axis = axis;
            CudaChecker<Concat> c(handle.get());
            c.set_param(p).set_epsilon(0).expect_kernel("cuda");
            for (size_t i = 0; i < 3; ++i)
                c.set_dtype(i, dt);
            auto shape = [&](size_t n) {
                TensorShape s{4, 5, 6};
                s[static_cast<size_t>(axis < 0 ? axis + 3 : axis)] = n;
                return s;
            };
            c.execs({shape(2), shape(0), shape(3)});
            c.set_noncontiguous(true).execs({shape(1), shape(4), shape(2)});

            param::Split sp;
            sp.axis = axis;
            sp.sizes = {3, 0, 1, 2};
            CudaChecker<Split> s(handle.get());
            s.set_param(sp).set_dtype(0, dt).set_epsilon(0).expect_kernel("cuda");
            s.execs({shape(6)});
            s.set_noncontiguous(true).execs({shape(6)});
        }
}

TEST_F(Cuda, RollOneAndSeveralAxes) {
    for (DType dt : kAll)
        for (auto [shift, axis] :
             std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>>{
                     {{2}, {1}},
                     {{-1}, {-1}},
                     {{13, 1}, {0, 2}},
                     {{1, 1, 1}, {0, 1, 1}},
                     {{4}, {0}}}) {
            param::Roll p;
            p.shift = shift;
            p.axis = axis;
            CudaChecker<Roll> c(handle.get());
            c.set_param(p).set_dtype(0, dt).set_epsilon(0).expect_kernel("cuda");
            c.execs({{4, 5, 6}}).execs({{4, 0, 6}});
            c.set_noncontiguous(true).execs({{4, 5, 6}});
        }
}

TEST_F(Cuda, PaddingEveryMode) {
    using Mode = param::Padding::Mode;
    for (Mode m : {Mode::CONSTANT, Mode::REFLECT, Mode::REPLICATE})
        for (DType dt : kAll) {
            CudaChecker<Padding> c(handle.get());
            c.set_dtype(0, dt).set_epsilon(0).expect_kernel("cuda");
            // Borders wider than src along axis 1 (REFLECT keeps mirroring).
            c.set_param(pad(m, {1, 5, 0}, {2, 7, 1})).execs({{3, 3, 4}});
            c.set_noncontiguous(true).execs({{3, 3, 4}});
        }
}

TEST_F(Cuda, PaddingBackwardEveryMode) {
    using Mode = param::Padding::Mode;
    for (Mode m : {Mode::CONSTANT, Mode::REFLECT, Mode::REPLICATE})
        for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16}) {
            CudaChecker<PaddingBackward> c(handle.get());
            c.set_dtype(0, dt).expect_kernel("cuda");
            c.set_param(pad(m, {1, 5, 0}, {2, 7, 1})).set_output_shapes({{3, 3, 4}});
            c.execs({{6, 15, 5}});
            c.set_noncontiguous(true).execs({{6, 15, 5}});
        }
}

TEST_F(Cuda, DiagBothWays) {
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int8, dtype::Bool})
        for (int32_t k : {-3, -1, 0, 2, 5}) {
            param::Diag p;
            p.k = k;
            CudaChecker<Diag> c(handle.get());
            c.set_param(p).set_dtype(0, dt).set_epsilon(0).expect_kernel("cuda");
            c.execs({{4}});
            c.execs({{5, 7}});
            c.set_noncontiguous(true).execs({{6}});
            c.execs({{6, 4}});
        }
}
