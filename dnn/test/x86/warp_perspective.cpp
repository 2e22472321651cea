// WarpPerspective and its gradients on the x86 handle against naive: every border
// mode, identity, affine and projective matrices (points past every edge, a denominator through
// zero giving infinite and NaN points), mat_idx sending several outputs to one image and leaving
// another unused, odd and 1-pixel images, padded inputs and outputs, enough channels for the
// OpenMP split, the bad-index error, and float16 (naive's kernel). The forward sums a point's four
// taps in float32 and is held to the bound of that arithmetic (float_sum_bound: four products
// of weights summing to 1, values in [-1, 1]); the gradients must be naive's bits.
#include "neomeg/dnn/operators/vision.h"
#include "x86/omp_threads.h"
#include "x86/vision_loops.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using BMode = param::WarpPerspective::BorderMode;

// Three matrices per call: a shifted, scaled identity; a rotation reaching past the edges; a
// projection whose denominator crosses zero inside the output.
const std::vector<double> kMats = {1.1, 0,    -0.7, 0,   0.9, 1.3,  0,    0,    1,
                                   0.8, -0.6, 2.5,  0.6, 0.8, -1.5, 0,    0,    1,
                                   1,   0.2,  0.1,  0.1, 1,   0.3,  0.15, -0.1, -0.4};

}  // namespace

TEST_F(X86, WarpPerspectiveAndGradientsMatchNaive) {
    std::mt19937 rng(37);
    struct Case {
        TensorShape src;
        uint32_t oh, ow;
    };
    const std::vector<Case> cases = {
            {{2, 3, 7, 5}, 6, 9}, {{3, 2, 1, 1}, 3, 2}, {{2, 16, 20, 24}, 18, 26}};
    for (bool padded : {false, true})
        for (BMode bm :
             {BMode::REPLICATE, BMode::REFLECT, BMode::REFLECT_101, BMode::WRAP, BMode::CONSTANT})
            for (const Case& c : cases) {
                param::WarpPerspective p;
                p.bmode = bm;
                p.border_val = 0.5f;
                p.out_h = c.oh;
                p.out_w = c.ow;
                HostTensor x = make_tensor(c.src, padded, rng);
                HostTensor mat = make_tensor({3, 3, 3}, padded, rng, kMats);
                // outputs 0 and 2 warp image 1, output 1 image 0 (image 2, if any, unused)
                HostTensor idx = make_tensor({3}, padded, rng, {1, 0, 1}, 0, 0, dtype::Int32);
                HostTensor dy = make_tensor({3, c.src[1], c.oh, c.ow}, padded, rng);
                expect_naive_near<WarpPerspective>(*handle, p, float_sum_bound(4, 1.0),
                                                   {x, mat, idx});
                expect_naive_bits<WarpPerspectiveBackwardData>(*handle, p, {mat, idx, dy}, {c.src});
                expect_naive_bits<WarpPerspectiveBackwardMat>(*handle, p, {x, mat, idx, dy});
            }
}

// Batches whose outputs differ in their work: a shrinking matrix (every point in the table), one
// far past the image (every point CONSTANT's value, computed per channel in double), a projection
// whose denominator crosses zero (infinite and NaN points) and a rotation past the edges, cycled
// over 1, 2, 3, 5 and 8 outputs (whole outputs across two threads for 2 and 8, each output's rows
// for 1, 3 and 5), each output warping image n % 2. Enough channels and pixels to cross the
// threading grain; at one and two threads, the gradients naive's bits and the forward within its
// float32 bound of naive and the same bits at both counts.
TEST_F(X86, WarpPerspectiveMixedBatchesMatchNaiveAtOneAndTwoThreads) {
    std::mt19937 rng(43);
    const std::vector<double> mats[] = {{0.5, 0.1, 1, 0.05, 0.6, 2, 0, 0, 1},
                                        {1, 0, 500, 0, 1, -400, 0, 0, 1},
                                        {1, 0.2, 0.1, 0.1, 1, 0.3, 0.015, -0.01, -0.4},
                                        {0.8, -0.6, 2.5, 0.6, 0.8, -1.5, 0, 0, 1}};
    for (size_t outputs : {1, 2, 3, 5, 8})
        for (BMode bm : {BMode::REFLECT, BMode::CONSTANT}) {
            param::WarpPerspective p;
            p.bmode = bm;
            p.border_val = 0.5f;
            p.out_h = 36;
            p.out_w = 44;
            const TensorShape src{2, 16, 24, 20};
            HostTensor x = make_tensor(src, false, rng);
            std::vector<double> m, idx;
            for (size_t n = 0; n < outputs; ++n) {
                m.insert(m.end(), mats[n % 4].begin(), mats[n % 4].end());
                idx.push_back(static_cast<double>(n % 2));
            }
            HostTensor mat = make_tensor({outputs, 3, 3}, false, rng, m);
            HostTensor ix = make_tensor({outputs}, false, rng, idx, 0, 0, dtype::Int32);
            HostTensor dy = make_tensor({outputs, 16, 36, 44}, false, rng);
            std::vector<HostTensor> fwd;
            for (int threads : {1, 2}) {
                ScopedOmpThreads scope(threads);
                auto op = handle->create_operator<WarpPerspective>();
                op->param() = p;
                fwd.push_back(run_op(*op, {x, mat, ix})[0]);
                expect_naive_near<WarpPerspective>(*handle, p, float_sum_bound(4, 1.0),
                                                   {x, mat, ix});
                expect_naive_bits<WarpPerspectiveBackwardData>(*handle, p, {mat, ix, dy}, {src});
                expect_naive_bits<WarpPerspectiveBackwardMat>(*handle, p, {x, mat, ix, dy});
            }
            EXPECT_TRUE(tensors_near(fwd[0], fwd[1], 0)) << outputs << " outputs";
        }
}

TEST_F(X86, WarpPerspectiveBadIndexAndFloat16) {
    std::mt19937 rng(41);
    param::WarpPerspective p;
    p.out_h = 4;
    p.out_w = 4;
    HostTensor x = make_tensor({2, 3, 5, 5}, false, rng);
    HostTensor mat = make_tensor({1, 3, 3}, false, rng, {1, 0, 0, 0, 1, 0, 0, 0, 1});
    auto op = handle->create_operator<WarpPerspective>();
    op->param() = p;
    EXPECT_THROW(run_op(*op, {x, mat, HostTensor::from({1}, {2}, dtype::Int32)}), IndexError);
    HostTensor h16 = make_tensor({2, 3, 5, 5}, false, rng, {}, -1, 1, dtype::Float16);
    expect_naive_bits<WarpPerspective>(
            *handle, p, {h16, mat, HostTensor::from({1}, {1}, dtype::Int32)}, {}, "naive");
}
