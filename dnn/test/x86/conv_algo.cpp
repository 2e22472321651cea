// The x86 convolutions' choice of algorithm (src/x86/conv_algo.h). The default rule is a function
// of the shape (checked on shapes, never on what a CPU picks); on a shape the rule gives Winograd,
// every pass, plain and blocked, matches naive within the bound Winograd's rounding justifies,
// whichever kernel oneDNN has on this CPU; NEOMEG_CONV_WINOGRAD=0 keeps Winograd out, by default
// and with fastrun. Fastrun (x86_benchmark_kernel): off, nothing is measured; on, each case is
// measured once per process, whichever operator object or handle plans it, and the choice is
// kept; Winograd, where it is chosen, matches naive on plain and on blocked tensors (both backward
// passes, and ConvBiasBlocked with its filter converted per call and once); a cached choice oneDNN
// cannot plan falls back to direct, never to naive.
#include <cmath>
#include <cstdlib>

#include "naive/channel_blocked.h"
#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/conv_algo.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

class X86ConvAlgo : public X86 {
protected:
    void SetUp() override {
        X86::SetUp();
        x86::conv_algo_cache().clear();
        set_x86_benchmark_kernel(true);
    }
    void TearDown() override {
        set_x86_benchmark_kernel(false);
        x86::conv_algo_cache().clear();
    }

    x86::ConvAlgoCache& cache() { return x86::conv_algo_cache(); }
    // Makes `alg` the choice for a case, as a measurement would have; `plain` (src, filter, dst)
    // gives the geometry where the call's layouts are blocked.
    template <class Param>
    void choose(std::string_view pass, const Param& p, std::vector<TensorLayout> layouts,
                dnnl::algorithm alg, std::vector<TensorLayout> plain = {}) {
        if (plain.empty())
            plain = {layouts[0], layouts[1], layouts.back()};
        auto g = x86::conv_geometry(ConvArgs::of(p), plain[0], plain[1], plain[2]);
        ASSERT_TRUE(g.has_value());
        cache().put(x86::conv_case_key(pass, *g, layouts), alg);
    }
};

param::Convolution conv3x3(int stride) {
    param::Convolution p;
    p.stride = {stride, stride};
    p.padding = {1, 1};
    return p;
}

// The largest difference from naive over the output's largest magnitude.
double scaled_error(const HostTensor& got, const HostTensor& want) {
    auto g = got.values(), w = want.values();
    double err = 0, scale = 0;
    for (size_t i = 0; i < w.size(); ++i) {
        err = std::max(err, std::abs(g[i] - w[i]));
        scale = std::max(scale, std::abs(w[i]));
    }
    return err / scale;
}

// Runs `op` and naive's op of the same param on `in`; returns the scaled error.
template <class Op>
double error_against_naive(Op& op, const std::vector<HostTensor>& in,
                           const std::vector<TensorShape>& out_shapes = {}) {
    auto got = run_op(op, in, out_shapes);
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<Op>();
    ref->param() = op.param();
    auto want = run_op(*ref, in, out_shapes);
    return scaled_error(got[0], want[0]);
}

// Errors relative to the output's largest magnitude, on these sums of 9*C products of values in
// [-1, 1): the direct method measured about 3e-7 (float32 accumulation), Winograd F(4x4, 3x3)
// 0.6e-6 to 2.3e-6 (16 and 64 channels; its transforms add terms that cancel). The bounds leave
// room for other shapes and ISAs while a wrong tile, transform or layout, whose errors are of the
// output's own size, still fails.
constexpr double kWinogradTolerance = 1e-5;
constexpr double kDirectTolerance = 1e-6;
// The filter gradient sums N*H*W products (2048 in SwitchedOffNeverRunsWinograd) instead of 9*C:
// the AVX2 direct kernel (ONEDNN_MAX_CPU_ISA=AVX2) measured 1.9e-6 there.
constexpr double kDirectFilterGradTolerance = 5e-6;

// NEOMEG_CONV_WINOGRAD set for a scope (unset where `value` is null).
struct WinogradEnv : ScopedEnv {
    explicit WinogradEnv(const char* value) : ScopedEnv("NEOMEG_CONV_WINOGRAD", value) {}
};

// The rule's answer for the convolution of src (N, IC, H, W) and an OC x IC x K x K filter, padded
// to keep the size at stride 1.
bool rule_says_winograd(x86::ConvPass pass, TensorShape src, size_t oc, int k = 3, int stride = 1,
                        int dilation = 1, DType dtype = dtype::Float32) {
    param::Convolution p;
    p.stride = {stride, stride};
    p.dilation = {dilation, dilation};
    p.padding = {dilation * (k / 2), dilation * (k / 2)};
    const size_t st = static_cast<size_t>(stride), ks = static_cast<size_t>(k);
    TensorShape dst{src[0], oc, (src[2] - 1) / st + 1, (src[3] - 1) / st + 1};
    TensorLayout s(src, dtype), f({oc, src[1], ks, ks}, dtype), d(dst, dtype);
    auto g = x86::conv_geometry(ConvArgs::of(p), s, f, d);
    EXPECT_TRUE(g.has_value());
    return g &&
           x86::default_conv_algorithm(pass, *g, s, f, d) == dnnl::algorithm::convolution_winograd;
}

}  // namespace

TEST(X86ConvAlgoRule, WinogradFor3x3Stride1WhereItWins) {
    using x86::ConvPass;
    for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_filter}) {
        // The CIFAR ResNet-18's stride-1 3x3 convolutions at batch 32 past the first layer.
        EXPECT_TRUE(rule_says_winograd(pass, {32, 64, 32, 32}, 64));
        EXPECT_TRUE(rule_says_winograd(pass, {32, 128, 16, 16}, 128));
        EXPECT_TRUE(rule_says_winograd(pass, {32, 256, 8, 8}, 256));
        // ImageNet sizes: 7x7 fills 77% of its 4x4 tiles; one 56x56 image has 196 tiles.
        EXPECT_TRUE(rule_says_winograd(pass, {32, 512, 7, 7}, 512));
        EXPECT_TRUE(rule_says_winograd(pass, {1, 64, 56, 56}, 64));
        EXPECT_TRUE(rule_says_winograd(pass, {8, 32, 32, 32}, 64));     // the smallest channels
        EXPECT_TRUE(rule_says_winograd(pass, {32, 1024, 8, 8}, 1024));  // and the largest
        // Where it lost or was not measured: few channels (the 3-channel first layer), strides,
        // other kernels, dilation, a 5x5 image (39% of its tiles filled), batch 1 on small
        // images, more than 1024 channels, 16-bit types.
        EXPECT_FALSE(rule_says_winograd(pass, {32, 3, 32, 32}, 64));
        EXPECT_FALSE(rule_says_winograd(pass, {32, 64, 32, 32}, 16));
        EXPECT_FALSE(rule_says_winograd(pass, {32, 64, 32, 32}, 128, 3, 2));
        EXPECT_FALSE(rule_says_winograd(pass, {32, 64, 32, 32}, 64, 1));
        EXPECT_FALSE(rule_says_winograd(pass, {32, 64, 32, 32}, 64, 5));
        EXPECT_FALSE(rule_says_winograd(pass, {32, 64, 32, 32}, 64, 3, 1, 2));
        EXPECT_FALSE(rule_says_winograd(pass, {32, 512, 5, 5}, 512));
        EXPECT_FALSE(rule_says_winograd(pass, {1, 256, 14, 14}, 256));
        EXPECT_FALSE(rule_says_winograd(pass, {32, 2048, 8, 8}, 2048));
        EXPECT_FALSE(rule_says_winograd(pass, {32, 64, 32, 32}, 64, 3, 1, 1, dtype::BFloat16));
    }
    // The 4x4 images of the last stage: the filter gradient's direct kernel is slow there, the
    // other two passes' are not.
    EXPECT_FALSE(rule_says_winograd(ConvPass::forward, {32, 512, 4, 4}, 512));
    EXPECT_FALSE(rule_says_winograd(ConvPass::backward_data, {32, 512, 4, 4}, 512));
    EXPECT_TRUE(rule_says_winograd(ConvPass::backward_filter, {32, 512, 4, 4}, 512));
    EXPECT_FALSE(rule_says_winograd(ConvPass::backward_filter, {8, 512, 4, 4}, 512));
    EXPECT_FALSE(rule_says_winograd(ConvPass::backward_filter, {32, 512, 5, 5}, 512));
    // A constant filter is transformed once: a forward of a few tiles is enough.
    EXPECT_TRUE(rule_says_winograd(ConvPass::forward_const_filter, {1, 512, 7, 7}, 512));
    EXPECT_TRUE(rule_says_winograd(ConvPass::forward_const_filter, {1, 256, 14, 14}, 256));
    EXPECT_FALSE(rule_says_winograd(ConvPass::forward, {1, 512, 7, 7}, 512));
    EXPECT_FALSE(rule_says_winograd(ConvPass::forward_const_filter, {1, 512, 4, 4}, 512));
    EXPECT_FALSE(rule_says_winograd(ConvPass::forward_const_filter, {1, 16, 56, 56}, 16));
}

TEST(X86ConvAlgoRule, GroupedAndOtherRanksAreDirect) {
    param::Convolution p;
    p.padding = {1, 1};
    p.group = 2;
    TensorLayout src({32, 64, 32, 32}, dtype::Float32), filter({64, 32, 3, 3}, dtype::Float32);
    auto g = x86::conv_geometry(ConvArgs::of(p), src, filter, src);
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(x86::default_conv_algorithm(x86::ConvPass::forward, *g, src, filter, src),
              dnnl::algorithm::convolution_direct);
    // A 1-D convolution of a long signal: oneDNN 2.6 has Winograd for 2-D only.
    param::Convolution p1;
    p1.stride = {1};
    p1.dilation = {1};
    p1.padding = {1};
    TensorLayout s1({32, 64, 1024}, dtype::Float32), f1({64, 64, 3}, dtype::Float32);
    auto g1 = x86::conv_geometry(ConvArgs::of(p1), s1, f1, s1);
    ASSERT_TRUE(g1.has_value());
    EXPECT_EQ(x86::default_conv_algorithm(x86::ConvPass::forward, *g1, s1, f1, s1),
              dnnl::algorithm::convolution_direct);
}

TEST(X86ConvAlgoRule, TheSwitchReadsZeroAsOff) {
    {
        WinogradEnv env(nullptr);
        EXPECT_TRUE(x86::winograd_enabled());
    }
    for (const char* on : {"", "1", "yes"}) {  // anything but 0 (a typo warns) leaves it on
        WinogradEnv env(on);
        EXPECT_TRUE(x86::winograd_enabled()) << on;
    }
    WinogradEnv env("0");
    EXPECT_FALSE(x86::winograd_enabled());
}

// Fastrun off, on a shape the rule gives Winograd (32 channels, 32x32, batch 2: 128 tiles): every
// pass matches naive within Winograd's bound, whichever kernel this CPU has (direct where it has
// no Winograd, silently), and runs oneDNN.
TEST_F(X86, DefaultRuleShapeMatchesNaive) {
    std::mt19937 rng(7);
    const auto p = conv3x3(1);
    auto src = random_tensor({2, 32, 32, 32}, rng), filter = random_tensor({32, 32, 3, 3}, rng);
    auto diff = random_tensor({2, 32, 32, 32}, rng);
    auto fwd = handle->create_operator<ConvolutionForward>();
    auto bwd_data = handle->create_operator<ConvolutionBackwardData>();
    auto bwd_filter = handle->create_operator<ConvolutionBackwardFilter>();
    fwd->param() = bwd_data->param() = bwd_filter->param() = p;
    EXPECT_LT(error_against_naive(*fwd, {src, filter}), kWinogradTolerance);
    EXPECT_LT(error_against_naive(*bwd_data, {filter, diff}, {src.shape()}), kWinogradTolerance);
    EXPECT_LT(error_against_naive(*bwd_filter, {src, diff}, {filter.shape()}), kWinogradTolerance);
    for (const OperatorBase* op :
         std::initializer_list<const OperatorBase*>{fwd.get(), bwd_data.get(), bwd_filter.get()})
        EXPECT_TRUE(ran_onednn(*op)) << last_kernel(*op);
    EXPECT_EQ(x86::conv_algo_cache().size(), 0u);  // nothing measured
}

// The same on the blocked forms the traced graph runs: both backward passes and ConvBiasBlocked
// with relu, its filter converted per call and once (Winograd's inference form where it applies).
TEST_F(X86, DefaultRuleShapeMatchesNaiveBlocked) {
    using Nonline = param::ConvBias::NonlineMode;
    std::mt19937 rng(8);
    const auto p = conv3x3(1);
    const size_t c = 32, block = 16;
    TensorShape plain{2, c, 32, 32}, blocked{2, c / block, 32, 32, block};
    auto src = block_ref(random_tensor(plain, rng), block);
    auto diff = block_ref(random_tensor(plain, rng), block);
    auto filter = random_tensor({c, c, 3, 3}, rng), bias = random_tensor({1, c, 1, 1}, rng);
    auto bwd_data = handle->create_operator<ConvolutionBackwardDataBlocked>();
    auto bwd_filter = handle->create_operator<ConvolutionBackwardFilterBlocked>();
    bwd_data->param() = bwd_filter->param() = p;
    EXPECT_LT(error_against_naive(*bwd_data, {filter, diff}, {blocked}), kWinogradTolerance);
    EXPECT_LT(error_against_naive(*bwd_filter, {src, diff}, {filter.shape()}), kWinogradTolerance);
    EXPECT_TRUE(ran_onednn(*bwd_data)) << last_kernel(*bwd_data);
    EXPECT_TRUE(ran_onednn(*bwd_filter)) << last_kernel(*bwd_filter);
    for (bool is_const : {false, true}) {
        auto op = handle->create_operator<ConvBiasBlocked>();
        op->param() = blocked_conv_param(p, Nonline::RELU, block, is_const);
        for (int call = 0; call < 2; ++call)  // the second reads the filter converted by the first
            EXPECT_LT(error_against_naive(*op, {src, filter, bias, absent_tensor()}),
                      kWinogradTolerance)
                    << "filter_is_const=" << is_const << " call " << call;
        EXPECT_TRUE(ran_onednn(*op)) << last_kernel(*op);
    }
}

// NEOMEG_CONV_WINOGRAD=0: no pass runs Winograd on that shape, by default or with fastrun, and the
// results are the direct method's.
TEST_F(X86ConvAlgo, SwitchedOffNeverRunsWinograd) {
    WinogradEnv env("0");
    std::mt19937 rng(9);
    auto src = random_tensor({2, 32, 32, 32}, rng), filter = random_tensor({32, 32, 3, 3}, rng);
    auto diff = random_tensor({2, 32, 32, 32}, rng);
    for (bool fastrun : {false, true}) {
        set_x86_benchmark_kernel(fastrun);
        auto fwd = handle->create_operator<ConvolutionForward>();
        auto bwd_data = handle->create_operator<ConvolutionBackwardData>();
        auto bwd_filter = handle->create_operator<ConvolutionBackwardFilter>();
        fwd->param() = bwd_data->param() = bwd_filter->param() = conv3x3(1);
        EXPECT_LT(error_against_naive(*fwd, {src, filter}), kDirectTolerance);
        EXPECT_LT(error_against_naive(*bwd_data, {filter, diff}, {src.shape()}), kDirectTolerance);
        EXPECT_LT(error_against_naive(*bwd_filter, {src, diff}, {filter.shape()}),
                  kDirectFilterGradTolerance);
        for (const OperatorBase* op : std::initializer_list<const OperatorBase*>{
                     fwd.get(), bwd_data.get(), bwd_filter.get()}) {
            EXPECT_TRUE(ran_onednn(*op)) << last_kernel(*op);
            EXPECT_EQ(last_kernel(*op).find("wino"), std::string::npos)
                    << "fastrun=" << fastrun << " " << last_kernel(*op);
        }
    }
}

// Off, a shape the rule leaves to direct (8x8 images at batch 2: 8 tiles) plans direct.
TEST_F(X86ConvAlgo, OffFollowsTheRuleAndMeasuresNothing) {
    set_x86_benchmark_kernel(false);
    std::mt19937 rng(1);
    auto src = random_tensor({2, 64, 8, 8}, rng), filter = random_tensor({64, 64, 3, 3}, rng);
    auto op = handle->create_operator<ConvolutionForward>();
    op->param() = conv3x3(1);
    EXPECT_LT(error_against_naive(*op, {src, filter}), kDirectTolerance);
    EXPECT_TRUE(ran_onednn(*op)) << last_kernel(*op);
    EXPECT_EQ(last_kernel(*op).find("wino"), std::string::npos) << last_kernel(*op);
    EXPECT_EQ(cache().size(), 0u);
}

TEST_F(X86ConvAlgo, EachCaseIsMeasuredOncePerProcess) {
    std::mt19937 rng(2);
    auto src = random_tensor({2, 32, 8, 8}, rng), filter = random_tensor({32, 32, 3, 3}, rng);
    auto diff = random_tensor({2, 32, 8, 8}, rng);
    for (int round = 0; round < 2; ++round) {
        // The second round on new operator objects of another handle: the choice is the process's.
        auto h = round == 0 ? std::move(handle) : Handle::make_x86();
        auto fwd = h->create_operator<ConvolutionForward>();
        auto bwd_data = h->create_operator<ConvolutionBackwardData>();
        auto bwd_filter = h->create_operator<ConvolutionBackwardFilter>();
        handle = std::move(h);
        fwd->param() = bwd_data->param() = bwd_filter->param() = conv3x3(1);
        // Whichever algorithm won, the result is naive's within Winograd's bound.
        EXPECT_LT(error_against_naive(*fwd, {src, filter}), kWinogradTolerance);
        EXPECT_LT(error_against_naive(*bwd_data, {filter, diff}, {src.shape()}),
                  kWinogradTolerance);
        EXPECT_LT(error_against_naive(*bwd_filter, {src, diff}, {filter.shape()}),
                  kWinogradTolerance);
        for (const OperatorBase* op : std::initializer_list<const OperatorBase*>{
                     fwd.get(), bwd_data.get(), bwd_filter.get()})
            EXPECT_TRUE(ran_onednn(*op)) << last_kernel(*op);
        EXPECT_EQ(cache().size(), 3u) << "round " << round;
    }
    // Another case (stride 2, which has no Winograd kernel) is one more entry.
    auto strided = handle->create_operator<ConvolutionForward>();
    strided->param() = conv3x3(2);
    EXPECT_LT(error_against_naive(*strided, {src, filter}), kDirectTolerance);
    EXPECT_EQ(cache().size(), 4u);
}

TEST_F(X86ConvAlgo, WinogradMatchesNaiveOnPlainTensors) {
    std::mt19937 rng(3);
    const auto p = conv3x3(1);
    for (size_t c : {16u, 64u}) {
        auto src = random_tensor({2, c, 8, 8}, rng), filter = random_tensor({c, c, 3, 3}, rng);
        auto diff = random_tensor({2, c, 8, 8}, rng);
        const auto win = dnnl::algorithm::convolution_winograd;
        choose("fwd", p, {src.layout(), filter.layout(), f32(diff.shape())}, win);
        choose("bwd_data", p, {filter.layout(), diff.layout(), f32(src.shape())}, win);
        choose("bwd_filter", p, {src.layout(), diff.layout(), f32(filter.shape())}, win);
        auto fwd = handle->create_operator<ConvolutionForward>();
        auto bwd_data = handle->create_operator<ConvolutionBackwardData>();
        auto bwd_filter = handle->create_operator<ConvolutionBackwardFilter>();
        fwd->param() = bwd_data->param() = bwd_filter->param() = p;
        double errors[] = {error_against_naive(*fwd, {src, filter}),
                           error_against_naive(*bwd_data, {filter, diff}, {src.shape()}),
                           error_against_naive(*bwd_filter, {src, diff}, {filter.shape()})};
        if (last_kernel(*fwd).find("wino") == std::string::npos)
            GTEST_SKIP() << "oneDNN has no Winograd kernel on this CPU: " << last_kernel(*fwd);
        for (const OperatorBase* op : std::initializer_list<const OperatorBase*>{
                     fwd.get(), bwd_data.get(), bwd_filter.get()})
            EXPECT_NE(last_kernel(*op).find("wino"), std::string::npos) << last_kernel(*op);
        for (double e : errors)
            EXPECT_LT(e, kWinogradTolerance) << c << " channels";
    }
}

TEST_F(X86ConvAlgo, WinogradMatchesNaiveOnBlockedTensors) {
    std::mt19937 rng(4);
    const auto p = conv3x3(1);
    const size_t c = 32, block = 16;
    TensorShape plain{2, c, 8, 8}, blocked{2, c / block, 8, 8, block};
    auto src = block_ref(random_tensor(plain, rng), block);
    auto diff = block_ref(random_tensor(plain, rng), block);
    auto filter = random_tensor({c, c, 3, 3}, rng);
    const auto win = dnnl::algorithm::convolution_winograd;
    const std::vector<TensorLayout> geometry = {f32(plain), filter.layout(), f32(plain)};
    choose("bwd_data_blocked", p, {filter.layout(), diff.layout(), f32(blocked)}, win, geometry);
    choose("bwd_filter_blocked", p, {src.layout(), diff.layout(), f32(filter.shape())}, win,
           geometry);
    auto bwd_data = handle->create_operator<ConvolutionBackwardDataBlocked>();
    auto bwd_filter = handle->create_operator<ConvolutionBackwardFilterBlocked>();
    bwd_data->param() = bwd_filter->param() = p;
    EXPECT_LT(error_against_naive(*bwd_data, {filter, diff}, {blocked}), kWinogradTolerance);
    EXPECT_LT(error_against_naive(*bwd_filter, {src, diff}, {filter.shape()}), kWinogradTolerance);
    if (last_kernel(*bwd_data).find("wino") == std::string::npos)
        GTEST_SKIP() << "oneDNN has no Winograd kernel on this CPU: " << last_kernel(*bwd_data);
    EXPECT_NE(last_kernel(*bwd_filter).find("wino"), std::string::npos) << last_kernel(*bwd_filter);
}

// The forward on blocked tensors with bias and relu, its filter converted on every call (training)
// or once (filter_is_const: Winograd's inference form, the filter pre-transformed).
TEST_F(X86ConvAlgo, WinogradConvBiasBlockedMatchesNaive) {
    using Nonline = param::ConvBias::NonlineMode;
    std::mt19937 rng(6);
    const size_t c = 32, block = 16;
    TensorShape plain{2, c, 8, 8}, blocked{2, c / block, 8, 8, block};
    auto src = block_ref(random_tensor(plain, rng), block);
    auto filter = random_tensor({c, c, 3, 3}, rng), bias = random_tensor({1, c, 1, 1}, rng);
    const std::vector<TensorLayout> geometry = {f32(plain), filter.layout(), f32(plain)};
    for (bool is_const : {false, true}) {
        auto p = blocked_conv_param(conv3x3(1), Nonline::RELU, block, is_const);
        std::string pass = str_cat("fwd_blocked nonline", static_cast<int>(p.nonlineMode),
                                   is_const ? " const" : "");
        choose(pass, p,
               {src.layout(), filter.layout(), bias.layout(), absent_tensor().layout(),
                f32(blocked)},
               dnnl::algorithm::convolution_winograd, geometry);
        auto op = handle->create_operator<ConvBiasBlocked>();
        op->param() = p;
        for (int call = 0; call < 2; ++call)  // the second reads the filter converted by the first
            EXPECT_LT(error_against_naive(*op, {src, filter, bias, absent_tensor()}),
                      kWinogradTolerance)
                    << "filter_is_const=" << is_const << " call " << call;
        if (last_kernel(*op).find("wino") == std::string::npos)
            GTEST_SKIP() << "oneDNN has no Winograd kernel on this CPU: " << last_kernel(*op);
    }
}

TEST_F(X86ConvAlgo, ACachedChoiceOneDnnCannotPlanFallsBackToDirect) {
    std::mt19937 rng(5);
    const auto p = conv3x3(2);  // no Winograd kernel for a strided convolution
    auto src = random_tensor({2, 16, 8, 8}, rng), filter = random_tensor({16, 16, 3, 3}, rng);
    choose("fwd", p, {src.layout(), filter.layout(), f32({2, 16, 4, 4})},
           dnnl::algorithm::convolution_winograd);
    auto op = handle->create_operator<ConvolutionForward>();
    op->param() = p;
    EXPECT_LT(error_against_naive(*op, {src, filter}), kDirectTolerance);
    EXPECT_TRUE(ran_onednn(*op)) << last_kernel(*op);
}
