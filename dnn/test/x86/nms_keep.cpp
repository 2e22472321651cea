// NMSKeep on the x86 handle against naive, exactly (the same float32 test, so the same boxes
// kept): random boxes with fractional corners at several thresholds and capacities, batches, more
// kept boxes than one block of the loop, clusters of near-identical boxes, empty and inverted
// boxes, NaN corners, no boxes, strided inputs and padded outputs; the loop kernel runs, not
// naive.
#include <cmath>
#include <random>

#include "common/nms_cases.h"
#include "neomeg/dnn/operators/vision.h"
#include "src/x86/exec_report.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(X86, NMSKeepMatchesNaive) {
    std::mt19937 rng(3);
    for (size_t n : {1, 5, 40, 300})
        for (float thresh : {0.f, 0.2f, 0.5f, 0.7f, 1.f})
            for (uint32_t cap : {1u, 7u, static_cast<uint32_t>(n), static_cast<uint32_t>(n + 9)}) {
                Checker<NMSKeep> c(handle.get());
                c.set_param(nms_param(thresh, cap)).set_epsilon(0);
                c.set_values(0, random_boxes(2 * n, rng)).execs({{2, n, 4}});
            }
    // Many kept boxes (several blocks of the loop), then a padded and a transposed input.
    Checker<NMSKeep> c(handle.get());
    c.set_param(nms_param(0.3f, 1500)).set_epsilon(0);
    c.set_values(0, random_boxes(2000, rng, 2000.f, 20.f)).execs({{1, 2000, 4}});
    c.set_param(nms_param(0.4f, 30)).set_values(0, random_boxes(3 * 50, rng));
    c.set_noncontiguous(true).execs({{3, 50, 4}});
    c.set_noncontiguous(false).exec_layouts(
            {TensorLayout({4, 3, 50}, dtype::Float32).dimshuffle({1, 2, 0})});
}

TEST_F(X86, NMSKeepEdgeCasesMatchNaive) {
    // Empty and inverted boxes, duplicates, NaN corners (which std::min and std::max resolve by
    // operand order, the same in both kernels), and no boxes.
    const double nan = std::nan("");
    std::vector<double> odd = {0,   0, 4, 4, 0, 0,   4, 4, 1, 1, 1,   1, 1, 1, 1, 1, 5, 5, 2, 2,
                               nan, 0, 3, 3, 0, nan, 3, 3, 0, 0, nan, 3, 2, 2, 6, 6, 0, 0, 4, 4};
    for (float thresh : {-1.f, 0.f, 0.5f, std::nanf("")})
        for (uint32_t cap : {0u, 3u, 10u, 12u}) {
            Checker<NMSKeep> c(handle.get());
            c.set_param(nms_param(thresh, cap)).set_epsilon(0).set_values(0, odd);
            c.execs({{1, 10, 4}});
        }
    Checker<NMSKeep> c(handle.get());
    c.set_param(nms_param(0.5f, 4)).execs({{2, 0, 4}});
    auto op = handle->create_operator<NMSKeep>();
    op->param() = nms_param(0.5f, 3);
    x86::forget_naive_warnings();
    testing::internal::CaptureStderr();
    std::mt19937 rng(4);
    auto out = run_op(*op, {HostTensor::from({1, 6, 4}, random_boxes(6, rng), dtype::Float32)});
    EXPECT_EQ(last_kernel(*op), "loop");
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}
