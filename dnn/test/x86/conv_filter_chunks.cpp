// Winograd filter gradients split along the output channels (src/x86/conv_filter_chunks.h): over
// the scratchpad budget, the plain and the blocked filter gradient run in slices whose workspace is
// well below the whole plan's, and still match naive; the budget bounds the scratchpad alone, not
// the reorder buffers; the budget's switch reads what it should.
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "naive/channel_blocked.h"
#include "neomeg/dnn/operators/convolution.h"
#include "src/x86/conv_filter_chunks.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// NEOMEG_WINOGRAD_SCRATCH_MB set for a scope (unset where `value` is null).
struct ScratchBudgetEnv : ScopedEnv {
    explicit ScratchBudgetEnv(const char* value) : ScopedEnv("NEOMEG_WINOGRAD_SCRATCH_MB", value) {}
};

// The largest difference from naive over the gradient's largest magnitude.
template <class Op>
double error_against_naive(Op& op, const std::vector<HostTensor>& in, const TensorShape& grad) {
    auto got = run_op(op, in, {grad});
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<Op>();
    ref->param() = op.param();
    auto want = run_op(*ref, in, {grad});
    auto g = got[0].values(), w = want[0].values();
    double err = 0, scale = 0;
    for (size_t i = 0; i < w.size(); ++i) {
        err = std::max(err, std::abs(g[i] - w[i]));
        scale = std::max(scale, std::abs(w[i]));
    }
    return err / scale;
}

// conv_algo.cpp's bound for Winograd F(4x4, 3x3) against naive, relative to the largest output.
constexpr double kWinogradTolerance = 1e-5;

// 128 channels, 16x16, batch 2 (32 tiles): the default rule gives Winograd for the filter
// gradient, whose whole plan measured 17 MiB of workspace (about 9 MiB of it the same at any
// channel count), so a 2 MiB budget splits it as far as Winograd goes: 4 slices of 32 channels,
// 11 MiB.
template <class Op>
void expect_split_within_budget(Handle& handle, const std::vector<HostTensor>& in,
                                const TensorShape& grad) {
    param::Convolution p;
    p.padding = {1, 1};
    std::vector<TensorLayout> layouts{in[0].layout(), in[1].layout(),
                                      TensorLayout(grad, dtype::Float32)};
    auto whole = handle.create_operator<Op>();
    whole->param() = p;
    EXPECT_LT(error_against_naive(*whole, in, grad), kWinogradTolerance);
    if (last_kernel(*whole).find("wino") == std::string::npos)
        GTEST_SKIP() << "oneDNN has no Winograd kernel on this CPU: " << last_kernel(*whole);
    const size_t whole_ws = whole->get_workspace_in_bytes(std::span(layouts).first(2),
                                                          std::span(layouts).subspan(2));
    ASSERT_GT(whole_ws, size_t{4} << 20) << "the shape no longer needs a split at 2 MiB";
    EXPECT_EQ(last_kernel(*whole).find("slices"), std::string::npos) << last_kernel(*whole);

    ScratchBudgetEnv env("2");
    auto split = handle.create_operator<Op>();
    split->param() = p;
    EXPECT_LT(error_against_naive(*split, in, grad), kWinogradTolerance);
    EXPECT_NE(last_kernel(*split).find("wino"), std::string::npos) << last_kernel(*split);
    EXPECT_NE(last_kernel(*split).find("output-channel slices"), std::string::npos)
            << last_kernel(*split);
    const size_t split_ws = split->get_workspace_in_bytes(std::span(layouts).first(2),
                                                          std::span(layouts).subspan(2));
    EXPECT_LT(split_ws, whole_ws * 3 / 4);
}

}  // namespace

TEST_F(X86, WinogradFilterGradientSplitsToItsScratchBudgetPlain) {
    std::mt19937 rng(21);
    const size_t c = 128;
    auto src = random_tensor({2, c, 16, 16}, rng), diff = random_tensor({2, c, 16, 16}, rng);
    expect_split_within_budget<ConvolutionBackwardFilter>(*handle, {src, diff}, {c, c, 3, 3});
}

TEST_F(X86, WinogradFilterGradientSplitsToItsScratchBudgetBlocked) {
    std::mt19937 rng(22);
    const size_t c = 128, block = 16;
    auto src = block_ref(random_tensor({2, c, 16, 16}, rng), block);
    auto diff = block_ref(random_tensor({2, c, 16, 16}, rng), block);
    expect_split_within_budget<ConvolutionBackwardFilterBlocked>(*handle, {src, diff},
                                                                 {c, c, 3, 3});
}

namespace {

// A plan that only reports its name and sizes, for split_filter_gradient's rule; it never runs.
class SizedPlan final : public x86::Plan {
public:
    SizedPlan(std::string name, size_t workspace, size_t scratchpad)
        : m_name(std::move(name)), m_workspace(workspace), m_scratchpad(scratchpad) {}
    size_t workspace_in_bytes() const override { return m_workspace; }
    size_t scratchpad_in_bytes() const override { return m_scratchpad; }
    const char* name() const override { return m_name.c_str(); }
    void run(std::span<const TensorND>, Workspace, dnnl::stream&) override {
        ADD_FAILURE() << "a SizedPlan ran";
    }

private:
    std::string m_name;
    size_t m_workspace, m_scratchpad;
};

constexpr size_t kMiB = size_t{1} << 20;

}  // namespace

// The budget bounds the primitive's scratchpad, not the buffers that reorder plain src and diff
// to the kernel's layout: slices need those all the same, and a plain ImageNet-sized gradient
// (64 channels, 56x56, batch 32: 51 MiB of them) ran 1.3x slower in two slices than whole.
TEST(X86ConvFilterChunks, TheBudgetCountsTheScratchpadOnly) {
    ScratchBudgetEnv env("6");
    const TensorLayout src({2, 64, 8, 8}, dtype::Float32), diff({2, 64, 8, 8}, dtype::Float32),
            grad({64, 64, 3, 3}, dtype::Float32);
    const TensorLayout in[] = {src, diff}, out[] = {grad};
    std::vector<size_t> planned;  // the output channels of each slice planned
    auto make = [&](std::span<const TensorLayout> i, std::span<const TensorLayout> o) {
        EXPECT_EQ(i[1][1], o[0][0]);
        planned.push_back(o[0][0]);
        // The scratchpad in proportion to the output channels, the reorder buffers not.
        return std::make_unique<SizedPlan>("onednn:jit_wino_4x3", 64 * kMiB, o[0][0] * kMiB / 4);
    };
    // 64 MiB of workspace, 4 MiB of it scratchpad: whole.
    auto kept = x86::split_filter_gradient(
            std::make_unique<SizedPlan>("onednn:jit_wino_4x3", 64 * kMiB, 4 * kMiB), in, out, 1,
            make);
    EXPECT_STREQ(kept->name(), "onednn:jit_wino_4x3");
    EXPECT_TRUE(planned.empty());
    // 20 MiB of scratchpad: halves (32 channels, 8 MiB, still over), then quarters (4 MiB).
    auto split = x86::split_filter_gradient(
            std::make_unique<SizedPlan>("onednn:jit_wino_4x3", 64 * kMiB, 20 * kMiB), in, out, 1,
            make);
    EXPECT_STREQ(split->name(), "onednn:jit_wino_4x3 in 4 output-channel slices");
    EXPECT_EQ(split->scratchpad_in_bytes(), 4 * kMiB);
    EXPECT_EQ(planned, (std::vector<size_t>{32, 16}));
    // Not Winograd: never split, whatever its scratchpad.
    planned.clear();
    auto direct = x86::split_filter_gradient(
            std::make_unique<SizedPlan>("onednn:direct (a test plan)", 64 * kMiB, 64 * kMiB), in,
            out, 1, make);
    EXPECT_STREQ(direct->name(), "onednn:direct (a test plan)");
    EXPECT_TRUE(planned.empty());
}

TEST(X86ConvFilterChunks, TheBudgetSwitchReadsPositiveMebibytes) {
    {
        ScratchBudgetEnv env(nullptr);
        EXPECT_EQ(x86::winograd_filter_scratch_budget(), size_t{32} << 20);
    }
    {
        ScratchBudgetEnv env("5");
        EXPECT_EQ(x86::winograd_filter_scratch_budget(), size_t{5} << 20);
    }
    for (const char* bad : {"0", "-3", "4MB", "lots"}) {
        ScratchBudgetEnv env(bad);
        EXPECT_EQ(x86::winograd_filter_scratch_budget(), size_t{32} << 20) << bad;
    }
}
