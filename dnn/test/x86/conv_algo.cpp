// The x86 convolutions' fastrun (x86_benchmark_kernel, src/x86/conv_algo.h): off, every pass runs
// oneDNN's direct algorithm and measures nothing; on, each case is measured once per process,
// whichever operator object or handle plans it, and the choice is kept; Winograd, where it is
// chosen, matches naive within the bound its rounding justifies, on plain and on blocked tensors
// (both backward passes, and ConvBiasBlocked with its filter converted per call and once); a
// cached choice oneDNN cannot plan falls back to direct, never to naive.
#include <cmath>

#include "naive/channel_blocked.h"
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

TensorLayout f32(const TensorShape& s) {
    return TensorLayout(s, dtype::Float32);
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

}  // namespace

TEST_F(X86ConvAlgo, OffPlansDirectAndMeasuresNothing) {
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
