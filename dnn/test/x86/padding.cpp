// Padding and PaddingBackward on the x86 handle against naive, exactly: the forward row by row
// into contiguous dsts (widths of 0 on some axes, CONSTANT borders wider than src, rows of one
// element, sources with strided rows, every element size); CONSTANT mode on float32
// (the border filled, the interior copied), REFLECT and REPLICATE (the border copied slab by slab,
// every dtype; the backward folded in double) with widths of 0 on some sides, borders wider than
// src, sizes 1 and primes, a 4-d NCHW case above the threading grain, broadcast, transposed and
// reversed sources, padded outputs and gradients; CONSTANT on every dtype (the value converted as
// naive converts it) and into strided dsts.
#include "neomeg/dnn/operators/tensor_shape.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Padding::Mode;

param::Padding pad_param(Mode mode, std::vector<int32_t> front, std::vector<int32_t> back,
                         float value = 0) {
    param::Padding p;
    p.mode = mode;
    p.value = value;
    p.front_offsets = std::move(front);
    p.back_offsets = std::move(back);
    return p;
}

}  // namespace

TEST_F(X86, PaddingMatchesNaive) {
    for (Mode mode : {Mode::CONSTANT, Mode::REFLECT, Mode::REPLICATE}) {
        Checker<Padding> c(handle.get());
        c.set_epsilon(0).set_param(pad_param(mode, {1, 3}, {2, 0}, 1.5f));
        c.execs({{3, 4}}).execs({{1, 1}}).execs({{13, 7}});
        c.exec_layouts({TensorLayout({4, 3}, {0, 1}, dtype::Float32)});
        c.exec_layouts({TensorLayout({4, 3}, dtype::Float32).dimshuffle({1, 0})});
        c.exec_layouts({TensorLayout({3, 4}, {-4, -1}, dtype::Float32)});
        c.set_noncontiguous(true).execs({{3, 4}});
        c.set_noncontiguous(false).set_param(pad_param(mode, {0, 0, 1, 1}, {0, 0, 1, 1}, -2.0f));
        c.execs({{8, 64, 28, 28}});
        c.set_dtype(0, dtype::Float16).execs({{2, 3, 5, 7}});
    }
    HostTensor x({4, 5}, dtype::Float32);
    EXPECT_EQ(run_and_compare<Padding>(*handle, pad_param(Mode::CONSTANT, {1, 2}, {3, 4}, 7.0f),
                                       {x}, {}, 0),
              "rows");
    for (Mode mode : {Mode::REFLECT, Mode::REPLICATE})
        EXPECT_EQ(run_and_compare<Padding>(*handle, pad_param(mode, {1, 2}, {3, 4}), {x}, {}, 0),
                  "rows");
    HostTensor h({4, 5}, dtype::Float16);
    EXPECT_EQ(run_and_compare<Padding>(*handle, pad_param(Mode::CONSTANT, {1, 2}, {3, 4}), {h}, {},
                                       0),
              "rows");
    // A src whose rows are strided goes through relayout_copy and the border slabs.
    HostTensor t(TensorLayout({5, 4}, dtype::Float32).dimshuffle({1, 0}));
    for (Mode mode : {Mode::CONSTANT, Mode::REFLECT, Mode::REPLICATE})
        EXPECT_EQ(run_and_compare<Padding>(*handle, pad_param(mode, {1, 2}, {3, 4}), {t}, {}, 0),
                  "copy");
}

TEST_F(X86, PaddingRowsEdges) {
    for (Mode mode : {Mode::CONSTANT, Mode::REFLECT, Mode::REPLICATE}) {
        Checker<Padding> c(handle.get());
        c.set_epsilon(0).set_param(pad_param(mode, {0, 2, 0}, {0, 0, 3}, -1.25f));
        // Widths of 0 on some axes, rows of one element, a src with padded rows and columns.
        c.execs({{3, 4, 5}}).execs({{1, 1, 1}}).execs({{5, 3, 1}});
        c.exec_layouts({TensorLayout({3, 4, 5}, {48, 8, 1}, dtype::Float32)});
        c.exec_layouts({TensorLayout({3, 4, 1}, {4, 1, 7}, dtype::Float32)});
        c.exec_layouts({TensorLayout({3, 4, 5}, {-20, 5, 1}, dtype::Float32)});
        // No padding at all, and only the last axis or only the first padded.
        c.set_param(pad_param(mode, {0, 0, 0}, {0, 0, 0})).execs({{2, 3, 4}});
        c.set_param(pad_param(mode, {0, 0, 3}, {0, 0, 1})).execs({{2, 3, 4}});
        c.set_param(pad_param(mode, {2, 0, 0}, {1, 0, 0})).execs({{2, 3, 4}});
        // Every element size, 1-d, and more rows than the threading grain.
        c.set_param(pad_param(mode, {1, 2}, {2, 1}, 3.0f));
        for (DType dt : {DType(dtype::Bool), DType(dtype::Int16), DType(dtype::Int32)})
            c.set_dtype(0, dt).execs({{4, 6}}).execs({{1, 1}});
        c.set_dtype(0, dtype::Float32).set_param(pad_param(mode, {3}, {2}, 2.0f));
        c.execs({{1}}).execs({{7}});
        c.set_param(pad_param(mode, {0, 1, 1}, {0, 1, 1}, 0.0f)).execs({{70000, 2, 3}});
    }
    // CONSTANT borders wider than src on every side, and an empty src padded into a full dst.
    Checker<Padding> c(handle.get());
    c.set_epsilon(0).set_param(pad_param(Mode::CONSTANT, {9, 0, 13}, {4, 11, 17}, 5.5f));
    c.execs({{2, 3, 2}}).execs({{1, 1, 1}}).execs({{0, 3, 2}}).execs({{2, 3, 0}});
}

// CONSTANT mode's vector rows at each Highway target: every row length from one element past two
// vectors (AVX-512's) and every border run from none to past a vector, in 1-, 2- and 4-byte
// elements, so that each piece of the short copies and fills and the overlapping last vector meet
// each length; sizes 1, primes, an empty src, a src with rows apart, reversed, broadcast or of one
// strided element, and a 4-d tensor of odd sizes above the threading grain (threads split it
// within a plane).
TEST_F(X86, PaddingConstantRowLengths) {
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) {
                for (DType dt :
                     {DType(dtype::Int8), DType(dtype::Float16), DType(dtype::Float32)}) {
                    Checker<Padding> c(handle.get());
                    c.set_epsilon(0).set_dtype(0, dt).set_range(0, -100, 100);
                    const size_t most = 2 * 64 / dt.size() + 1;
                    for (size_t len = 1; len <= most; ++len)
                        for (int32_t width : {0, 1, 3}) {
                            c.set_param(
                                    pad_param(Mode::CONSTANT, {1, width}, {0, width + 1}, 7.0f));
                            c.execs({{3, len}});
                        }
                    for (int32_t width = 0; width <= static_cast<int32_t>(most); width += 3) {
                        c.set_param(
                                pad_param(Mode::CONSTANT, {width, width}, {width / 2, 1}, -3.0f));
                        c.execs({{2, 5}}).execs({{1, 1}});
                    }
                    c.set_param(pad_param(Mode::CONSTANT, {0, 2, 1}, {1, 3, 2}, 1.0f));
                    c.execs({{1, 1, 1}}).execs({{3, 7, 13}}).execs({{2, 0, 5}}).execs({{2, 5, 0}});
                    c.exec_layouts({TensorLayout({3, 7, 13}, {200, 16, 1}, dt)});
                    c.exec_layouts({TensorLayout({3, 7, 13}, {-91, 13, 1}, dt)});
                    c.exec_layouts({TensorLayout({3, 7, 13}, {0, 13, 1}, dt)});
                    c.exec_layouts({TensorLayout({3, 7, 1}, {7, 1, 5}, dt)});
                    c.set_param(pad_param(Mode::CONSTANT, {0, 0, 1, 2}, {0, 0, 2, 1}, 0.0f));
                    c.execs({{3, 61, 67, 71}});
                }
            });
    EXPECT_GE(ran, 1u);
}

TEST_F(X86, PaddingConstantEveryDtype) {
    for (DType dt :
         {DType(dtype::Float16), DType(dtype::BFloat16), DType(dtype::Int8), DType(dtype::Uint8),
          DType(dtype::Int16), DType(dtype::Int32), DType(dtype::Bool)})
        for (float value : {0.0f, -2.0f, 1.5f, 300.25f}) {
            Checker<Padding> c(handle.get());
            c.set_epsilon(0).set_dtype(0, dt).set_range(0, 0, 2);
            c.set_param(pad_param(Mode::CONSTANT, {1, 0, 3}, {2, 4, 0}, value));
            c.execs({{3, 4, 5}}).execs({{1, 1, 1}}).execs({{2, 0, 3}});
            // Strided and transposed sources, and (noncontiguous) padded dsts.
            c.exec_layouts({TensorLayout({5, 4, 3}, dt).dimshuffle({2, 1, 0})});
            c.exec_layouts({TensorLayout({3, 4, 5}, {0, 5, 1}, dt)});
            c.set_noncontiguous(true).execs({{3, 4, 5}}).execs({{2, 31, 67}});
        }
    // float32 into a padded dst.
    Checker<Padding> c(handle.get());
    c.set_epsilon(0).set_noncontiguous(true).set_param(
            pad_param(Mode::CONSTANT, {0, 2, 1}, {1, 0, 3}, 0.5f));
    c.execs({{3, 4, 5}}).execs({{4, 64, 300}});
}

TEST_F(X86, PaddingReflectAndReplicateEdges) {
    for (Mode mode : {Mode::REFLECT, Mode::REPLICATE}) {
        Checker<Padding> c(handle.get());
        // Borders wider than src (REFLECT keeps mirroring), a size-1 axis, no padding at all.
        c.set_epsilon(0).set_param(pad_param(mode, {7, 0, 2}, {5, 3, 9}));
        c.execs({{3, 1, 2}}).execs({{2, 5, 11}});
        c.set_noncontiguous(true).execs({{3, 4, 5}}).set_noncontiguous(false);
        c.set_param(pad_param(mode, {0, 0}, {0, 0})).execs({{13, 17}});
        c.set_param(pad_param(mode, {2, 3, 4}, {1, 0, 5}));
        for (DType dt : {dtype::Int8, dtype::Float16, dtype::Int32, dtype::Bool}) {
            c.set_dtype(0, dt).execs({{4, 6, 7}});
            c.exec_layouts({TensorLayout({6, 4, 7}, dt).dimshuffle({1, 0, 2})});
        }
        c.set_dtype(0, dtype::Float32)
                .exec_layouts({TensorLayout({4, 6, 7}, {0, 7, 1}, dtype::Float32)});
    }
}

TEST_F(X86, PaddingBackwardMatchesNaive) {
    for (Mode mode : {Mode::CONSTANT, Mode::REFLECT, Mode::REPLICATE}) {
        auto p = pad_param(mode, {3, 1}, {2, 4});
        Checker<PaddingBackward> c(handle.get());
        c.set_epsilon(0).set_param(p).set_noncontiguous(true).execs({{8, 9}}).execs({{6, 6}});
        c.exec_layouts({TensorLayout({9, 8}, dtype::Float32).dimshuffle({1, 0})});
        c.exec_layouts({TensorLayout({8, 9}, {0, 1}, dtype::Float32)});
        c.exec_layouts({TensorLayout({8, 9}, {-9, 1}, dtype::Float32)});
        c.set_noncontiguous(false).set_param(pad_param(mode, {0, 0, 1, 1}, {0, 0, 1, 1}));
        c.execs({{8, 64, 30, 30}});
    }
    HostTensor d({8, 9}, dtype::Float32);
    EXPECT_EQ(run_and_compare<PaddingBackward>(*handle, pad_param(Mode::CONSTANT, {3, 1}, {2, 4}),
                                               {d}, {}, 0),
              "copy");
    for (Mode mode : {Mode::REFLECT, Mode::REPLICATE})
        EXPECT_EQ(run_and_compare<PaddingBackward>(*handle, pad_param(mode, {3, 1}, {2, 4}), {d},
                                                   {}, 0),
                  "fold");
}

TEST_F(X86, PaddingBackwardFoldsWideBorders) {
    for (Mode mode : {Mode::REFLECT, Mode::REPLICATE}) {
        Checker<PaddingBackward> c(handle.get());
        // Borders wider than grad: many diff elements fold onto one.
        c.set_epsilon(0).set_param(pad_param(mode, {7, 0, 2}, {5, 3, 9}));
        c.execs({{15, 4, 13}});
        c.set_noncontiguous(true).execs({{15, 4, 13}}).set_noncontiguous(false);
        c.set_param(pad_param(mode, {1, 1}, {1, 1})).execs({{3, 3}}).execs({{4, 1000}});
    }
}
