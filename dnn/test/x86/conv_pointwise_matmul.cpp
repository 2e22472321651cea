// Small pointwise float32 images as one batched matmul, forward and input gradient
// (src/x86/conv_pointwise_matmul.h), against naive: 1-D, 2-D and 3-D images of 16 to 112 pixels,
// odd channel counts either way, batch 1, dilation, both modes, one and two threads, a strided
// filter view; pixel counts off the step (100, 120, 127: the matmul below AVX-512 only; 49 and
// the gemm bound, 128: never), strided activations, a 3x3 filter and stride 2, which keep their
// convolution plans. Outputs start as garbage, so a kernel that accumulated into them shows. The
// input gradient's transposed filter is served from the WeightCache from its second call and is
// transposed again after a write (a new version). Whether the matmul ran is asserted per ISA:
// oneDNN's brgemm kernel from AVX-512, its gemm kernel below (the dnn.x86.isa.AVX2 ctest entry
// runs these below it on an AVX-512 machine). ConvBias takes the matmul below AVX-512 only, with a
// sweep for its bias, z and nonlinearity.
#ifdef NEOMEG_WITH_DNNL
#include <random>

#include "naive/convolution.h"
#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/conv_common.h"
#include "src/x86/conv_pointwise_matmul.h"
#include "src/x86/weight_cache.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Whether oneDNN's matmul has its brgemm kernel here (float32 needs AVX-512); below, its gemm.
bool has_brgemm() {
    return x86::has_avx512_core();
}

bool as_matmul(const std::string& kernel) {
    return kernel.find("as pointwise") != std::string::npos;
}

// Runs Op (ConvolutionForward: inputs {data, filter}; ConvolutionBackwardData: {filter, data})
// `calls` times on the same values (the filter tagged with `id` where given) into an output of
// layout `out_l` filled with garbage, compares each result with naive's, and returns the x86
// kernel's name.
template <class Op>
std::string check(Handle& handle, const param::Convolution& p, const TensorLayout& filter_l,
                  const TensorLayout& data_l, const TensorLayout& out_l,
                  const StorageId* id = nullptr, int calls = 1, unsigned seed = 3) {
    constexpr bool forward = std::is_same_v<Op, ConvolutionForward>;
    std::mt19937 rng(seed);
    HostTensor w = random_tensor(filter_l, rng), d = random_tensor(data_l, rng);
    auto op = handle.create_operator<Op>();
    op->param() = p;
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<Op>();
    ref->param() = p;
    const TensorShape out_shape = out_l;
    HostTensor want = forward ? run_op(*ref, {d.contiguous(), w.contiguous()}, {out_shape})[0]
                              : run_op(*ref, {w.contiguous(), d.contiguous()}, {out_shape})[0];
    for (int call = 0; call < calls; ++call) {
        HostTensor got = random_tensor(out_l, rng);
        const TensorND wt(w.nd().raw_ptr(), w.layout(), id), dt = d.nd();
        const TensorLayout in_l[] = {forward ? d.layout() : w.layout(),
                                     forward ? w.layout() : d.layout()},
                           o_l[] = {got.layout()};
        const TensorND in[] = {forward ? dt : wt, forward ? wt : dt}, out[] = {got.nd()};
        std::vector<std::byte> ws(op->get_workspace_in_bytes(in_l, o_l));
        op->exec(in, out, {ws.data(), ws.size()});
        EXPECT_TRUE(tensors_near(got, want, 1e-4)) << op->param_str() << " call " << call;
    }
    return last_kernel(*op);
}

// Which pixel counts take the matmul: those on the step everywhere, those off it from
// kMinPointwiseSgemmMatmulPixels below AVX-512 only.
enum class Taken { always, below_avx512, never };

// Both passes of `k` on contiguous tensors; expects the matmul where `taken` says so here.
void check_both(Handle& handle, const ConvCase& k, Taken taken, int threads) {
    const bool want = taken == Taken::always || (taken == Taken::below_avx512 && !has_brgemm());
    const TensorLayout filter = f32(k.filter), src = f32(k.src), dst = f32(conv_dst_shape(k));
    EXPECT_EQ(as_matmul(check<ConvolutionForward>(handle, k.p, filter, src, dst)), want)
            << "forward " << k.src.to_string() << " threads " << threads;
    EXPECT_EQ(as_matmul(check<ConvolutionBackwardData>(handle, k.p, filter, dst, src)), want)
            << "backward data " << k.src.to_string() << " threads " << threads;
}

}  // namespace

TEST_F(X86, ConvolutionPointwiseSmallImagesAsMatmul) {
    static_assert(x86::kMinPointwiseGemmPixels == 128 && x86::kPointwiseMatmulPixelStep == 16 &&
                          x86::kMinPointwiseSgemmMatmulPixels == 64,
                  "the shapes below straddle the bounds");
    using enum Taken;
    struct Shape {
        ConvCase k;  // src, filter (OC, IC, 1...)
        Taken taken;
    };
    const std::vector<Shape> shapes = {
            // 64 pixels, more channels in than out and the other way, odd counts.
            {{{2, 37, 8, 8}, {5, 37, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, always},
            {{{3, 5, 8, 8}, {37, 5, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, always},
            {{{1, 17, 8, 8}, {19, 17, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, always},
            {{{2, 3, 4, 4}, {1, 3, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, always},
            {{{2, 33, 112}, {17, 33, 1}, conv_param({1}, {0}, {1})}, always},
            {{{3, 9, 16}, {7, 9, 1}, conv_param({1}, {0}, {1})}, always},
            {{{2, 9, 2, 4, 8}, {7, 9, 1, 1, 1}, conv_param({1, 1, 1}, {0, 0, 0}, {1, 1, 1})},
             always},
            // Dilation leaves a 1x1 filter pointwise.
            {{{2, 18, 4, 8}, {17, 18, 1, 1}, conv_param({1, 1}, {0, 0}, {3, 2})}, always},
            // Off the step from 64 pixels: the matmul below AVX-512 only.
            {{{2, 21, 10, 10}, {13, 21, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, below_avx512},
            {{{2, 19, 8, 15}, {16, 19, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, below_avx512},
            {{{3, 33, 127}, {17, 33, 1}, conv_param({1}, {0}, {1})}, below_avx512},
            // Off the step below 64 pixels, at the gemm bound, not pointwise: convolution plans.
            {{{2, 37, 7, 7}, {5, 37, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})}, never},
            {{{3, 33, 128}, {17, 33, 1}, conv_param({1}, {0}, {1})}, never},
            {{{2, 16, 8, 8}, {5, 16, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})}, never},
            {{{2, 16, 16, 16}, {5, 16, 1, 1}, conv_param({2, 2}, {0, 0}, {1, 1})}, never},
    };
    for (int threads : {1, 2}) {
        ScopedOmpThreads scope(threads);
        for (const Shape& shape : shapes)
            for (const ConvCase& k : conv_both_modes({shape.k}))
                check_both(*handle, k, shape.taken, threads);
        const ConvCase k = shapes[0].k;
        const TensorShape dst = conv_dst_shape(k);
        // A strided filter (a view into a wider one) is read, or transposed, from its strides.
        EXPECT_TRUE(as_matmul(check<ConvolutionForward>(*handle, k.p, padded_view(k.filter, 1, 3),
                                                        f32(k.src), f32(dst))));
        EXPECT_TRUE(as_matmul(check<ConvolutionBackwardData>(
                *handle, k.p, padded_view(k.filter, 0, 2), f32(dst), f32(k.src))));
        // Strided activations are reordered by their operands: the convolution plans.
        EXPECT_FALSE(as_matmul(check<ConvolutionForward>(*handle, k.p, f32(k.filter),
                                                         padded_view(k.src, 1, 2), f32(dst))));
        EXPECT_FALSE(as_matmul(check<ConvolutionBackwardData>(*handle, k.p, f32(k.filter), f32(dst),
                                                              padded_view(k.src, 1, 2))));
    }
}

// The input gradient's transposed filter: filled into the WeightCache on its second call and read
// from it on the third; a new version is transposed again, with the new result.
TEST_F(X86, ConvolutionPointwiseMatmulCachesTheTransposedFilter) {
    x86::WeightCache& cache = x86::WeightCache::instance();
    cache.clear();
    const ConvCase k{{2, 200, 8, 8}, {96, 200, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})};
    const TensorLayout filter = f32(k.filter), dst = f32(conv_dst_shape(k)), src = f32(k.src);
    StorageId id;
    EXPECT_TRUE(as_matmul(check<ConvolutionBackwardData>(*handle, k.p, filter, dst, src, &id, 3)));
    EXPECT_EQ(cache.stats().fills, 1u);
    EXPECT_EQ(cache.stats().hits, 1u);
    id.note_write();  // new values in the same storage
    EXPECT_TRUE(
            as_matmul(check<ConvolutionBackwardData>(*handle, k.p, filter, dst, src, &id, 3, 4)));
    EXPECT_EQ(cache.stats().fills, 2u);
    EXPECT_EQ(cache.stats().hits, 2u);
    cache.clear();
}
#endif

// ConvBias on small pointwise images: below AVX-512, pixel counts on the step below the gemm bound
// run the matmul and a sweep of bias, z and the nonlinearity (conv_bias.cpp); every mode, with and
// without bias and z, against naive; 63 and 128 pixels, 100 (off the step, which only
// ConvolutionForward takes from 64) and a padded src keep the convolution with post-ops.
// From AVX-512 ConvBias never takes it.
TEST_F(X86, ConvBiasPointwiseSmallImagesAsMatmul) {
    static_assert(x86::kMinPointwiseGemmPixels == 128 && x86::kPointwiseMatmulPixelStep == 16,
                  "the shapes below straddle the bounds");
    using Nonline = param::ConvBias::NonlineMode;
    struct Shape {
        TensorShape src, filter;
        bool taken;  // below AVX-512
    };
    const std::vector<Shape> shapes = {
            {{2, 37, 8, 8}, {5, 37, 1, 1}, true},
            {{3, 5, 4, 4}, {37, 5, 1, 1}, true},
            {{1, 17, 8, 8}, {19, 17, 1, 1}, true},  // batch 1
            {{2, 9, 112}, {7, 9, 1}, true},
            {{2, 9, 2, 4, 8}, {7, 9, 1, 1, 1}, true},
            {{2, 19, 7, 9}, {16, 19, 1, 1}, false},  // 63 pixels
            {{2, 19, 10, 10}, {16, 19, 1, 1}, false},
            {{2, 19, 8, 16}, {16, 19, 1, 1}, false},  // the gemm bound
    };
    std::mt19937 rng(29);
    for (int threads : {1, 2}) {
        ScopedOmpThreads scope(threads);
        for (const Shape& s : shapes) {
            const size_t nd = s.src.ndim - 2;
            param::Convolution cp = nd == 1   ? conv_param({1}, {0}, {1})
                                    : nd == 2 ? conv_param({1, 1}, {0, 0}, {1, 1})
                                              : conv_param({1, 1, 1}, {0, 0, 0}, {1, 1, 1});
            for (const ConvCase& k : conv_both_modes({{s.src, s.filter, cp}})) {
                const param::Convolution& p = k.p;
                const TensorShape dst = conv_dst_shape(k);
                TensorShape bias = dst;
                for (size_t i = 0; i < bias.ndim; ++i)
                    bias[i] = i == 1 ? dst[1] : 1;
                for (Nonline act :
                     {Nonline::IDENTITY, Nonline::RELU, Nonline::SIGMOID, Nonline::H_SWISH})
                    for (const auto& [b, z] :
                         {std::pair{bias, dst}, std::pair{bias, TensorShape{}},
                          std::pair{TensorShape{}, dst}, std::pair{TensorShape{}, TensorShape{}}}) {
                        std::vector<HostTensor> in = {
                                random_tensor(f32(s.src), rng), random_tensor(f32(s.filter), rng),
                                random_tensor(f32(b), rng), random_tensor(f32(z), rng)};
                        const std::string kernel =
                                run_and_compare<ConvBias>(*handle, conv_bias_param(p, act), in);
                        EXPECT_EQ(as_matmul(kernel), s.taken && !has_brgemm())
                                << s.src.to_string() << " " << kernel << " threads " << threads;
                        // A src with padded rows (a view into a wider one): staged into the
                        // convolution's layout, not the matmul.
                        in[0] = random_tensor(padded_view(s.src, s.src.ndim - 1, 2), rng);
                        EXPECT_FALSE(as_matmul(
                                run_and_compare<ConvBias>(*handle, conv_bias_param(p, act), in)))
                                << s.src.to_string() << " padded, threads " << threads;
                    }
            }
        }
    }
}
