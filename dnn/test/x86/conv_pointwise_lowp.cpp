// The bfloat16 1x1 convolution backward passes of conv_pointwise_lowp.h against naive: strided
// input gradients computed at stride 1 into a zeroed grad's subsampled view (the positions the
// view skips must come out zero whatever the output held), in 1-D, 2-D and 3-D, per-axis strides,
// groups, the flipped mode, a channels-last gradient, and the cases that keep the strided kernel
// (a size the stride does not divide, a padded output view); filter gradients by the gemm kernel.
#include "naive/convolution.h"
#include "neomeg/dnn/channels_last.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/param_base.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

std::vector<ConvCase> cases() {
    return {
            {{2, 16, 8, 8}, {32, 16, 1, 1}, conv_param({2, 2}, {0, 0}, {1, 1})},
            {{3, 8, 6, 9}, {16, 8, 1, 1}, conv_param({3, 3}, {0, 0}, {1, 1})},
            {{2, 32, 8, 6}, {16, 32, 1, 1}, conv_param({2, 1}, {0, 0}, {1, 1})},
            {{2, 8, 8, 8}, {12, 4, 1, 1}, conv_param({2, 2}, {0, 0}, {1, 1}, 2)},
            {{2, 16, 10}, {8, 16, 1}, conv_param({2}, {0}, {1})},
            {{1, 16, 4, 6, 4}, {16, 16, 1, 1, 1}, conv_param({2, 2, 2}, {0, 0, 0}, {1, 1, 1})},
            // 9 rows at stride 2: not divided, so the strided kernel (oneDNN's strides rule)
            {{2, 16, 9, 8}, {32, 16, 1, 1}, conv_param({2, 2}, {0, 0}, {1, 1})},
    };
}

HostTensor random(const TensorLayout& l, std::mt19937& rng) {
    HostTensor t(l);
    fill_uniform(t, -1, 1, rng);
    return t;
}

// Runs the x86 input gradient into `grad_layout` (filled with garbage first) and compares it with
// naive's; returns the kernel.
std::string check_data(Handle& handle, const ConvCase& k, const TensorLayout& grad_layout) {
    std::mt19937 rng(7);
    const DType bf16 = dtype::BFloat16;
    HostTensor filter = random(TensorLayout(k.filter, bf16), rng);
    HostTensor diff = random(TensorLayout(conv_dst_shape(k), bf16), rng);
    auto ref = Handle::make_naive()->create_operator<ConvolutionBackwardData>();
    ref->param() = k.p;
    auto want = run_op(*ref, {filter, diff}, {k.src});
    auto op = handle.create_operator<ConvolutionBackwardData>();
    op->param() = k.p;
    HostTensor got = random(grad_layout, rng);  // nothing of it may survive
    std::vector<TensorLayout> in{filter.layout(), diff.layout()}, out{got.layout()};
    std::vector<std::byte> ws(op->get_workspace_in_bytes(in, out));
    const TensorND in_nds[] = {filter.nd(), diff.nd()}, out_nds[] = {got.nd()};
    op->exec(in_nds, out_nds, {ws.data(), ws.size()});
    EXPECT_TRUE(tensors_near(got, want[0], default_epsilon(bf16)))
            << op->param_str() << " into " << grad_layout.to_string();
    return last_kernel(*op);
}

// Whether this CPU runs bfloat16 convolutions in oneDNN's 16-bit kernels (not the float32 one
// between conversions), where the choices under test apply.
bool bf16_kernels(const std::string& kernel) {
    return !kernel.starts_with("onednn:f32:");
}

}  // namespace

TEST_F(X86, PointwiseBFloat16BackwardDataMatchesNaive) {
    const auto all = conv_both_modes(cases());
    for (size_t i = 0; i < all.size(); ++i) {
        const ConvCase& k = all[i];
        std::string kernel = check_data(*handle, k, TensorLayout(k.src, dtype::BFloat16));
        bool divided = k.src[2] != 9;
        if (bf16_kernels(kernel)) {
            EXPECT_EQ(kernel.ends_with(":subsampled"), divided)
                    << kernel << " " << param::to_string(k.p);
        }
        if (k.src.ndim == 4 || k.src.ndim == 5) {
            kernel = check_data(*handle, k, channels_last_layout(k.src, dtype::BFloat16));
            if (bf16_kernels(kernel)) {
                EXPECT_EQ(kernel.ends_with(":subsampled"), divided) << kernel;
            }
        }
    }
}

TEST_F(X86, PointwiseBFloat16BackwardThroughCheckers) {
    // The Checker's runs: contiguous, and (noncontiguous) padded inputs and a padded output view,
    // which the subsampled path declines (it zeroes the output whole).
    for (const ConvCase& k : conv_both_modes(cases())) {
        Checker<ConvolutionBackwardData> data(handle.get());
        data.set_param(k.p).set_dtype(0, dtype::BFloat16).set_dtype(1, dtype::BFloat16);
        data.set_output_shapes({k.src}).set_noncontiguous(true).execs(
                {k.filter, conv_dst_shape(k)});
        Checker<ConvolutionBackwardFilter> filt(handle.get());
        filt.set_param(k.p).set_dtype(0, dtype::BFloat16).set_dtype(1, dtype::BFloat16);
        filt.set_output_shapes({k.filter})
                .set_noncontiguous(true)
                .execs({k.src, conv_dst_shape(k)});
    }
}

TEST_F(X86, PointwiseBFloat16BackwardFilterRunsGemm) {
    std::mt19937 rng(11);
    for (const ConvCase& k : conv_both_modes(cases())) {
        std::string kernel = run_and_compare<ConvolutionBackwardFilter>(
                *handle, k.p,
                {random(TensorLayout(k.src, dtype::BFloat16), rng),
                 random(TensorLayout(conv_dst_shape(k), dtype::BFloat16), rng)},
                {k.filter}, default_epsilon(dtype::BFloat16));
        if (bf16_kernels(kernel)) {
            EXPECT_NE(kernel.find("gemm"), std::string::npos) << kernel;
        }
    }
    // A 3x3 filter keeps oneDNN's first choice (16-wide rows: not conv_im2col_lowp.h's either).
    ConvCase k{{2, 16, 16, 16}, {16, 16, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})};
    std::string kernel = run_and_compare<ConvolutionBackwardFilter>(
            *handle, k.p,
            {random(TensorLayout(k.src, dtype::BFloat16), rng),
             random(TensorLayout(conv_dst_shape(k), dtype::BFloat16), rng)},
            {k.filter}, default_epsilon(dtype::BFloat16));
    if (bf16_kernels(kernel)) {  // without them oneDNN's float32 choice is its own business
        EXPECT_EQ(kernel.find("gemm"), std::string::npos) << kernel;
    }
}
