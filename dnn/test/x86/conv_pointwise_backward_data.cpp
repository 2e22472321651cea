// The pointwise float32 input gradient run as the forward gemm convolution with the filter read
// transposed (src/x86/conv_pointwise_backward_data.h) against naive: 1-D, 2-D and 3-D images either
// side of kMinPointwiseGemmPixels, IC above, equal to and below OC, odd channel counts (a side of
// 32 or fewer runs blocked below AVX-512 instead), batch 1, both modes, one and two threads,
// filters small (ElementCopy) and large (oneDNN's reorder) and a strided filter view; strided
// diff or grad, which keep the backward primitive. The gradient starts as garbage, so a kernel
// that accumulated into it instead of writing it shows. A filter with a storage identity is
// served from the WeightCache (transposed) from its second call, and after a write into it (a new
// version) gives the new result.
#ifdef NEOMEG_WITH_DNNL
#include <optional>
#include <random>

#include "naive/convolution.h"
#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/conv_common.h"
#include "src/x86/weight_cache.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Runs the input gradient of `k` from a filter and diff of these layouts into a grad of layout
// `grad_l` filled with garbage, `calls` times on the same values (the filter tagged with `id`
// where given), compares each result with naive's, and returns the x86 kernel's name.
std::string check(Handle& handle, const ConvCase& k, const TensorLayout& filter_l,
                  const TensorLayout& diff_l, const TensorLayout& grad_l,
                  const StorageId* id = nullptr, int calls = 1, unsigned seed = 5) {
    std::mt19937 rng(seed);
    HostTensor w = random_tensor(filter_l, rng), d = random_tensor(diff_l, rng);
    auto op = handle.create_operator<ConvolutionBackwardData>();
    op->param() = k.p;
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<ConvolutionBackwardData>();
    ref->param() = k.p;
    HostTensor want = run_op(*ref, {w.contiguous(), d.contiguous()}, {k.src})[0];
    for (int call = 0; call < calls; ++call) {
        HostTensor got = random_tensor(grad_l, rng);
        const TensorLayout in_l[] = {w.layout(), d.layout()}, out_l[] = {got.layout()};
        const TensorND in[] = {TensorND(w.nd().raw_ptr(), w.layout(), id), d.nd()},
                       out[] = {got.nd()};
        std::vector<std::byte> ws(op->get_workspace_in_bytes(in_l, out_l));
        op->exec(in, out, {ws.data(), ws.size()});
        EXPECT_TRUE(tensors_near(got, want, 1e-4)) << op->param_str() << " call " << call;
    }
    return last_kernel(*op);
}

bool as_forward(const std::string& kernel) {
    return kernel.find("as forward") != std::string::npos;
}

}  // namespace

TEST_F(X86, ConvolutionPointwiseBackwardDataAsForward) {
    static_assert(x86::kMinPointwiseGemmPixels == 128 && x86::kMaxBlockedPointwiseChannels == 32,
                  "the shapes below straddle the bounds");
    struct Shape {
        ConvCase k;  // src is grad's shape, filter (OC, IC, 1...)
        bool forward;
    };
    const std::vector<Shape> shapes = {
            // IC > OC, at and below 128 pixels; both above kMaxBlockedPointwiseChannels.
            {{{2, 67, 8, 16}, {35, 67, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            {{{2, 67, 8, 15}, {35, 67, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false},
            {{{3, 67, 128}, {35, 67, 1}, conv_param({1}, {0}, {1})}, true},
            {{{3, 67, 127}, {35, 67, 1}, conv_param({1}, {0}, {1})}, false},
            {{{2, 41, 2, 8, 8}, {33, 41, 1, 1, 1}, conv_param({1, 1, 1}, {0, 0, 0}, {1, 1, 1})},
             true},
            {{{1, 64, 13, 11}, {33, 64, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            // Dilation leaves a 1x1 filter pointwise.
            {{{2, 50, 12, 12}, {33, 50, 1, 1}, conv_param({1, 1}, {0, 0}, {3, 2})}, true},
            // 32 channels or fewer on a side: the blocked kernel below AVX-512 (conv_common.h).
            {{{2, 37, 8, 16}, {5, 37, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
             x86::has_avx512_core()},
            // A 200 x 96 filter (75 KiB): the transpose is oneDNN's reorder, not ElementCopy.
            {{{2, 200, 12, 12}, {96, 200, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, true},
            // IC == OC and IC < OC keep the backward primitive.
            {{{2, 16, 8, 16}, {16, 16, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false},
            {{{2, 5, 8, 16}, {37, 5, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, false},
            // Not pointwise: a 3x3 filter, and a 1x1 one at stride 2.
            {{{2, 16, 16, 16}, {5, 16, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})}, false},
            {{{2, 16, 32, 32}, {5, 16, 1, 1}, conv_param({2, 2}, {0, 0}, {1, 1})}, false},
    };
    for (int threads : {1, 2}) {
        ScopedOmpThreads scope(threads);
        for (const Shape& shape : shapes)
            for (const ConvCase& k : conv_both_modes({shape.k})) {
                std::string kernel =
                        check(*handle, k, f32(k.filter), f32(conv_dst_shape(k)), f32(k.src));
                EXPECT_EQ(as_forward(kernel), shape.forward) << kernel << " threads " << threads;
            }
        // A strided filter (a view into a wider one) is transposed from its strides.
        const ConvCase k = shapes[0].k;
        EXPECT_TRUE(as_forward(check(*handle, k, padded_view(k.filter, 1, 3),
                                     f32(conv_dst_shape(k)), f32(k.src))));
        // A strided diff or grad is reordered by its operand: the backward primitive, the same
        // result.
        EXPECT_FALSE(as_forward(check(*handle, k, f32(k.filter),
                                      padded_view(conv_dst_shape(k), 1, 2), f32(k.src))));
        EXPECT_FALSE(as_forward(check(*handle, k, f32(k.filter), f32(conv_dst_shape(k)),
                                      padded_view(k.src, 1, 2))));
    }
}

// A tagged filter: filled into the WeightCache on its second call and read from it on the third
// (transposed, not the backward primitive's layout); a new version is transposed again.
TEST_F(X86, ConvolutionPointwiseBackwardDataAsForwardCachesTheTransposedFilter) {
    x86::WeightCache& cache = x86::WeightCache::instance();
    cache.clear();
    const ConvCase k{{2, 200, 12, 12}, {96, 200, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})};
    StorageId id;
    EXPECT_TRUE(as_forward(
            check(*handle, k, f32(k.filter), f32(conv_dst_shape(k)), f32(k.src), &id, 3)));
    EXPECT_EQ(cache.stats().fills, 1u);
    EXPECT_EQ(cache.stats().hits, 1u);
    id.note_write();  // new values in the same storage
    EXPECT_TRUE(as_forward(
            check(*handle, k, f32(k.filter), f32(conv_dst_shape(k)), f32(k.src), &id, 3, 6)));
    EXPECT_EQ(cache.stats().fills, 2u);
    EXPECT_EQ(cache.stats().hits, 2u);
    cache.clear();
}
#endif
