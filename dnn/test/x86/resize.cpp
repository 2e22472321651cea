// Resize and ResizeBackward on the x86 handle against naive, exactly: NEAREST, LINEAR with and
// without align_corners and CUBIC, up- and downsampling by whole and fractional factors, sizes of 1
// and primes, the float dtypes, padded, broadcast and transposed views, empty batches and outputs,
// enough planes for the backward's vector groups; and that they run their own loops.
#include "neomeg/dnn/operators/tensor_shape.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using IMode = param::Resize::InterpolationMode;

param::Resize resize_param(IMode mode, uint32_t h, uint32_t w, bool align = false) {
    param::Resize p;
    p.mode = mode;
    p.out_h = h;
    p.out_w = w;
    p.align_corners = align;
    return p;
}

std::vector<param::Resize> variants(uint32_t h, uint32_t w) {
    return {resize_param(IMode::NEAREST, h, w), resize_param(IMode::LINEAR, h, w),
            resize_param(IMode::LINEAR, h, w, true), resize_param(IMode::CUBIC, h, w)};
}

struct Size {
    size_t in_h, in_w;
    uint32_t out_h, out_w;
};

const std::vector<Size> kSizes = {{5, 7, 4, 3},   {4, 4, 8, 8},     {7, 5, 13, 11},
                                  {1, 1, 3, 5},   {6, 9, 1, 1},     {3, 8, 3, 8},
                                  {2, 17, 5, 31}, {37, 41, 19, 64}, {64, 64, 128, 96}};

}  // namespace

TEST_F(X86, ResizeMatchesNaiveExactly) {
    for (const Size& s : kSizes)
        for (const auto& p : variants(s.out_h, s.out_w))
            for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16}) {
                TensorShape src{2, 3, s.in_h, s.in_w};
                Checker<Resize> f(handle.get());
                f.set_param(p).set_dtype(0, dt).set_epsilon(0).execs({src});
                f.set_noncontiguous(true).execs({src});
                Checker<ResizeBackward> b(handle.get());
                b.set_param(p).set_dtype(0, dt).set_epsilon(0);
                b.set_output_shapes({src}).execs({{2, 3, s.out_h, s.out_w}});
                b.set_noncontiguous(true).execs({{2, 3, s.out_h, s.out_w}});
            }
}

// Enough planes for the backward's groups of planes (one per vector lane: 4 or 8) with planes
// left over, rows of several vectors with a partial one for the forward, padded views.
TEST_F(X86, ResizeManyPlanesMatchesNaiveExactly) {
    const std::vector<Size> sizes = {{9, 13, 20, 27}, {16, 16, 8, 8}, {5, 33, 7, 17}};
    for (const Size& s : sizes)
        for (const auto& p : variants(s.out_h, s.out_w))
            for (TensorShape src :
                 {TensorShape{3, 6, s.in_h, s.in_w}, TensorShape{1, 8, s.in_h, s.in_w}}) {
                TensorShape dst{src[0], src[1], s.out_h, s.out_w};
                Checker<Resize> f(handle.get());
                f.set_param(p).set_epsilon(0).execs({src});
                f.set_noncontiguous(true).execs({src});
                Checker<ResizeBackward> b(handle.get());
                b.set_param(p).set_epsilon(0).set_output_shapes({src}).execs({dst});
                b.set_noncontiguous(true).execs({dst});
            }
}

TEST_F(X86, ResizeViewsAndEmpty) {
    for (const auto& p : variants(4, 3)) {
        Checker<Resize> f(handle.get());
        f.set_param(p).set_epsilon(0);
        f.exec_layouts({TensorLayout({2, 3, 5, 7}, {0, 0, 7, 1}, dtype::Float32)});
        f.exec_layouts({TensorLayout({2, 3, 7, 5}, dtype::Float32).dimshuffle({0, 1, 3, 2})});
        f.execs({{0, 3, 5, 7}});
        Checker<ResizeBackward> b(handle.get());
        b.set_param(p).set_epsilon(0).set_output_shapes({{2, 3, 5, 7}});
        b.exec_layouts({TensorLayout({2, 3, 4, 3}, {0, 0, 3, 1}, dtype::Float32)});
        b.exec_layouts({TensorLayout({2, 3, 3, 4}, dtype::Float32).dimshuffle({0, 1, 3, 2})});
        b.set_output_shapes({{0, 3, 5, 7}}).execs({{0, 3, 4, 3}});
    }
    Checker<Resize> empty_out(handle.get());
    empty_out.set_param(resize_param(IMode::LINEAR, 0, 3)).execs({{2, 3, 5, 7}});
}

TEST_F(X86, ResizeRunsItsLoops) {
    std::mt19937 rng(11);
    HostTensor x({2, 3, 9, 10}, dtype::Float32), dy({2, 3, 4, 5}, dtype::Float32);
    fill_uniform(x, -1, 1, rng);
    fill_uniform(dy, -1, 1, rng);
    for (const auto& p : variants(4, 5)) {
        EXPECT_EQ(run_and_compare<Resize>(*handle, p, {x}, {}, 0), "loop");
        EXPECT_EQ(run_and_compare<ResizeBackward>(*handle, p, {dy}, {{2, 3, 9, 10}}, 0), "loop");
    }
}
