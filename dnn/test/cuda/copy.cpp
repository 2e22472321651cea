// TypeCvt, Relayout and Fill on the CUDA handle against naive: every dtype pair, saturating
// float-to-integer conversions, strided, transposed, broadcast and reversed views, padded outputs;
// quantized tensors moved as their storage type, rescaled by staged naive.
#include <limits>

#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/pooling.h"
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

// A quantized tensor's bytes move on the device: QuantizedS32's four a value as well (the launcher
// knew no quantized dtype and moved one byte an element).
TEST_F(Cuda, RelayoutQuantizedMovesTheStorage) {
    for (DType dt : {DType::quantized_s8(0.5f), DType::quantized_8asymm(0.25f, 128),
                     DType::quantized_s32(0.125f)}) {
        SCOPED_TRACE(dt.full_name());
        CudaChecker<Relayout> c(handle.get());
        c.set_dtype(0, dt).set_epsilon(0).set_range(0, -100, 100);
        c.expect_kernel("cuda:memcpy").execs({{6, 7}});
        c.expect_kernel("cuda").set_noncontiguous(true).execs({{2, 3, 4}});
        c.set_noncontiguous(false);
        c.exec_layouts({TensorLayout({4, 5, 6}, dt).dimshuffle({2, 0, 1})});
    }
}

// A TypeCvt that keeps a quantized dtype is a move on the device; one that rescales (to or from
// float, to another scale) is naive's rounding and saturation, staged.
TEST_F(Cuda, QuantizedTypeCvtAndPoolingMatchNaive) {
    const DType q8 = DType::quantized_s8(0.5f), q8b = DType::quantized_s8(0.2f),
                u8 = DType::quantized_8asymm(0.25f, 128);
    struct Case {
        DType from, to;
        const char* kernel;
    };
    for (const Case& k : {Case{q8, q8, "cuda"}, Case{dtype::Float32, q8, "naive(staged)"},
                          Case{q8, dtype::Float32, "naive(staged)"}, Case{q8, q8b, "naive(staged)"},
                          Case{u8, q8, "naive(staged)"}}) {
        SCOPED_TRACE(k.from.full_name() + " -> " + k.to.full_name());
        param::TypeCvt p;
        p.dtype = k.to.enumv();
        p.scale = k.to.scale();
        p.zero_point = k.to.zero_point();
        CudaChecker<TypeCvt> c(handle.get());
        c.set_param(p).set_dtype(0, k.from).set_epsilon(0).set_range(0, -90, 90);
        c.expect_kernel(k.kernel).execs({{5, 9}});
    }
    // Any other kernel declines quantized tensors (kernel.h) rather than misreading them.
    param::Pooling pp;
    pp.mode = param::Pooling::Mode::MAX;
    pp.window = {2, 2};
    pp.stride = {2, 2};
    pp.padding = {0, 0};
    CudaChecker<PoolingForward> m(handle.get());
    m.set_param(pp).set_dtype(0, q8).set_epsilon(0).set_range(0, -100, 100);
    m.expect_kernel("naive(staged)").execs({{2, 3, 6, 8}});
}
