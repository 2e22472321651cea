// The pointwise float32 filter gradient run one image at a time (src/x86/conv_filter_per_image.h)
// against naive: 1-D, 2-D and 3-D images at and just below kMinFilterPerImagePixels, odd channel
// counts and batches, both modes, one and two threads; batch 1 and strided inputs, which run whole;
// gradients large enough to leave the blocked weights through BlockTranspose (split across two
// threads past its grain); below the per-image bound, the whole batch on oneDNN's gemm kernel.
// Where oneDNN runs no AVX-512 kernels every pointwise one from 64 pixels runs gemm whole instead
// (conv_common.h's pointwise_gemm), so the per-image expectations hold on AVX-512 only.
// The gradient starts as garbage, so a first image that did not overwrite it, or a later one that
// overwrote instead of adding, shows.
#include <random>

#include "naive/convolution.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/param_base.h"
#include "src/x86/conv_filter_per_image.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Runs the filter gradient of `k` on src and diff of these layouts (diff's shape deduced) into a
// gradient filled with garbage, compares it with naive's, and returns the x86 kernel's name.
std::string check(Handle& handle, const ConvCase& k, const TensorLayout& src,
                  const TensorLayout& diff) {
    std::mt19937 rng(11);
    HostTensor s = random_tensor(src, rng), d = random_tensor(diff, rng);
    auto op = handle.create_operator<ConvolutionBackwardFilter>();
    op->param() = k.p;
    HostTensor got = random_tensor(TensorLayout(k.filter, dtype::Float32), rng);
    const TensorLayout in_l[] = {s.layout(), d.layout()}, out_l[] = {got.layout()};
    const TensorND in[] = {s.nd(), d.nd()}, out[] = {got.nd()};
    std::vector<std::byte> ws(op->get_workspace_in_bytes(in_l, out_l));
    op->exec(in, out, {ws.data(), ws.size()});
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<ConvolutionBackwardFilter>();
    ref->param() = k.p;
    HostTensor want = run_op(*ref, {s.contiguous(), d.contiguous()}, {k.filter})[0];
    EXPECT_TRUE(tensors_near(got, want, 1e-4)) << op->param_str();
    return last_kernel(*op);
}

}  // namespace

TEST_F(X86, ConvolutionFilterPerImageMatchesNaive) {
    static_assert(x86::kMinFilterPerImagePixels == 512, "the shapes below straddle the bound");
    static_assert(x86::kMinFilterPerImageFloatsThreaded == 262144, "and across threads");
    // per_image: at one thread; at two, also (IC + OC) x pixels >= 262144.
    struct Shape {
        ConvCase k;
        bool per_image;
    };
    const std::vector<Shape> shapes = {
            {{{2, 7, 16, 32}, {13, 7, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            {{{3, 5, 17, 31}, {33, 5, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            {{{3, 5, 7, 73}, {33, 5, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false},
            {{{5, 19, 600}, {3, 19, 1}, conv_param({1}, {0}, {1})}, true},
            {{{2, 4, 8, 8, 8}, {17, 4, 1, 1, 1}, conv_param({1, 1, 1}, {0, 0, 0}, {1, 1, 1})},
             true},
            // Dilation leaves a 1x1 filter pointwise.
            {{{2, 16, 24, 24}, {16, 16, 1, 1}, conv_param({1, 1}, {0, 0}, {2, 2})}, true},
            {{{1, 16, 32, 32}, {24, 16, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false},
            // At and below the two-thread bound: 64 and 63 channels of 64x64.
            {{{2, 31, 64, 64}, {33, 31, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            {{{2, 31, 64, 64}, {32, 31, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            // Gradients of 80 x 128 channels (40 KiB, past ElementCopy's bound): out of the
            // kernel's square blocks by BlockTranspose (block_transpose.h), whole and per image.
            {{{2, 80, 5, 5}, {128, 80, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false},
            {{{2, 80, 24, 24}, {128, 80, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            // 272 x 512 (139264 floats): past two threads' grain, so BlockTranspose splits its
            // 17 rows of 16-channel blocks across the threads.
            {{{2, 512, 2, 2}, {272, 512, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false},
            // Not pointwise: a 3x3 filter, and a 1x1 one at stride 2.
            {{{2, 3, 24, 24}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})}, false},
            {{{2, 3, 48, 48}, {5, 3, 1, 1}, conv_param({2, 2}, {0, 0}, {1, 1})}, false},
    };
    for (int threads : {1, 2}) {
        ScopedOmpThreads scope(threads);
        for (const Shape& shape : shapes)
            for (const ConvCase& k : conv_both_modes({shape.k})) {
                std::string kernel = check(*handle, k, f32(k.src), f32(conv_dst_shape(k)));
                const size_t floats =
                        (k.src[1] + k.filter[0]) * (k.src.total_nr_elems() / k.src[0] / k.src[1]);
                const bool want = shape.per_image && x86::has_avx512_core() &&
                                  (threads == 1 || floats >= 262144);
                EXPECT_EQ(kernel.find("per image") != std::string::npos, want)
                        << kernel << " threads " << threads;
            }
    }
}

// A strided src or diff (a padded view) is reordered whole by its operand: no per-image plan, and
// the same result.
TEST_F(X86, ConvolutionFilterPerImageNotForStridedViews) {
    ConvCase k{{2, 6, 16, 32}, {10, 6, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})};
    const TensorShape dst = conv_dst_shape(k);
    auto padded = [](const TensorShape& s) {
        TensorLayout big({s[0], s[1] + 3, s[2], s[3]}, dtype::Float32);
        TensorLayout view = f32(s);
        for (size_t i = 0; i < 4; ++i)
            view.stride[i] = big.stride[i];
        return view;
    };
    for (int threads : {1, 2}) {
        ScopedOmpThreads scope(threads);
        EXPECT_EQ(check(*handle, k, padded(k.src), f32(dst)).find("per image"), std::string::npos);
        EXPECT_EQ(check(*handle, k, f32(k.src), padded(dst)).find("per image"), std::string::npos);
    }
}

// Below the per-image bound, from kMinPointwiseFilterGemmPixels, a filter gradient of at least two
// contiguous images runs oneDNN's gemm kernel on the plain tensors (conv_common.h's
// pointwise_gemm); batch 1 and images outside [256, 512) pixels do not. Where oneDNN runs no
// AVX-512 kernels, every contiguous pointwise one of at least kMinPointwiseFilterGemmPixelsAvx2
// pixels does, any batch. Each case asserts which path ran under the rule of the ISA oneDNN
// reports, at one and two threads (the rule does not read the thread count, the per-image one
// above it does).
TEST_F(X86, ConvolutionFilterGemmBelowPerImageBound) {
    static_assert(x86::kMinPointwiseFilterGemmPixels == 256 &&
                          x86::kMaxPointwiseFilterGemmPixels == 512 &&
                          x86::kMinPointwiseFilterGemmPixelsAvx2 == 64,
                  "the shapes below straddle the bounds");
    // gemm: with AVX-512 kernels; gemm_avx2: without.
    struct Shape {
        ConvCase k;
        bool gemm, gemm_avx2 = gemm;
    };
    const std::vector<Shape> shapes = {
            {{{2, 7, 16, 31}, {13, 7, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            {{{3, 5, 7, 73}, {33, 5, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            // 512 pixels: per image at one thread, whole and blocked at two.
            {{{2, 7, 16, 32}, {13, 7, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false, true},
            {{{2, 17, 16, 16}, {19, 17, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            {{{2, 17, 15, 17}, {19, 17, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false, true},
            {{{2, 17, 255}, {19, 17, 1}, conv_param({1}, {0}, {1})}, false, true},
            {{{3, 17, 256}, {19, 17, 1}, conv_param({1}, {0}, {1})}, true},
            // 128 pixels: gemm in the other passes, not in this one.
            {{{2, 17, 8, 16}, {19, 17, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false, true},
            // Either side of the bound without AVX-512: 64 and 63 pixels, 1-D and 2-D.
            {{{3, 9, 8, 8}, {11, 9, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false, true},
            {{{3, 9, 7, 9}, {11, 9, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false, false},
            {{{2, 33, 64}, {5, 33, 1}, conv_param({1}, {0}, {1})}, false, true},
            {{{2, 33, 63}, {5, 33, 1}, conv_param({1}, {0}, {1})}, false, false},
            {{{2, 4, 4, 8, 8}, {17, 4, 1, 1, 1}, conv_param({1, 1, 1}, {0, 0, 0}, {1, 1, 1})},
             true},
            {{{2, 3, 16, 17}, {1, 3, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            {{{2, 3, 12, 12}, {1, 3, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false, true},
            {{{2, 16, 24, 12}, {16, 16, 1, 1}, conv_param({1, 1}, {0, 0}, {2, 2})}, true},
            // 128 x 128 channels: the kernel's and the bench's shape, on 16x16.
            {{{2, 128, 16, 16}, {128, 128, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            // Batch 1 stays blocked with AVX-512 kernels.
            {{{1, 16, 16, 16}, {24, 16, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false, true},
            {{{1, 5, 8, 8}, {7, 5, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false, true},
            // Large images: per image with AVX-512 kernels (the test above), gemm without.
            {{{2, 8, 40, 40}, {24, 8, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false, true},
            {{{2, 3, 4, 16, 16}, {6, 3, 1, 1, 1}, conv_param({1, 1, 1}, {0, 0, 0}, {1, 1, 1})},
             false,
             true},
            // Not pointwise: a 3x3 filter, and a 1x1 one at stride 2 (576 pixels in, 144 out).
            {{{2, 3, 12, 12}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})}, false},
            {{{2, 3, 24, 24}, {5, 3, 1, 1}, conv_param({2, 2}, {0, 0}, {1, 1})}, false},
    };
    const bool avx512 = x86::has_avx512_core();
    for (int threads : {1, 2}) {
        ScopedOmpThreads scope(threads);
        for (const Shape& shape : shapes)
            for (const ConvCase& k : conv_both_modes({shape.k})) {
                std::string kernel = check(*handle, k, f32(k.src), f32(conv_dst_shape(k)));
                EXPECT_EQ(kernel.find("gemm") != std::string::npos,
                          avx512 ? shape.gemm : shape.gemm_avx2)
                        << kernel << " threads " << threads << " src " << k.src.to_string();
            }
    }
}

// A padded src or diff of 256 pixels per image: its operand copies it to a dense buffer of the
// layout the primitive takes (the plain one, which its contiguous partner pins, as in the forward
// pass); the same result.
TEST_F(X86, ConvolutionFilterGemmStridedViews) {
    ConvCase k{{2, 6, 16, 16}, {10, 6, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})};
    const TensorShape dst = conv_dst_shape(k);
    auto padded = [](const TensorShape& s) {
        TensorLayout big({s[0], s[1], s[2], s[3] + 5}, dtype::Float32);
        TensorLayout view = f32(s);
        for (size_t i = 0; i < 4; ++i)
            view.stride[i] = big.stride[i];
        return view;
    };
    for (int threads : {1, 2}) {
        ScopedOmpThreads scope(threads);
        EXPECT_NE(check(*handle, k, f32(k.src), f32(dst)).find("gemm"), std::string::npos);
        check(*handle, k, padded(k.src), f32(dst));
        check(*handle, k, f32(k.src), padded(dst));
        check(*handle, k, padded(k.src), padded(dst));
    }
}
