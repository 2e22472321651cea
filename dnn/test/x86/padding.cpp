// Padding and PaddingBackward on the x86 handle against naive, exactly: CONSTANT mode on float32
// (the border filled, the interior copied) with widths of 0 on some sides, sizes 1 and primes, a
// 4-d NCHW case above the threading grain, broadcast, transposed and reversed sources, padded
// gradients; REFLECT/REPLICATE and other dtypes, which go to naive.
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
              "copy");
    EXPECT_EQ(
            run_and_compare<Padding>(*handle, pad_param(Mode::REFLECT, {1, 2}, {3, 4}), {x}, {}, 0),
            "naive");
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
}
