// NMSKeep on the CUDA handle against naive, exactly: random boxes with fractional corners at
// several thresholds and capacities (one kept, some, all boxes, past N), batches, more boxes than
// a block has threads, NaN corners and empty boxes, no boxes, strided inputs and padded outputs.
#include <cmath>
#include <random>

#include "common/nms_cases.h"
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/vision.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(Cuda, NMSKeepMatchesNaive) {
    std::mt19937 rng(3);
    for (size_t n : {1, 5, 40, 700})
        for (float thresh : {0.f, 0.3f, 0.7f})
            for (uint32_t cap : {1u, 7u, static_cast<uint32_t>(n), static_cast<uint32_t>(n + 9)}) {
                CudaChecker<NMSKeep> c(handle.get());
                c.set_param(nms_param(thresh, cap)).set_epsilon(0).expect_kernel("cuda");
                c.set_values(0, random_boxes(2 * n, rng, n > 100 ? 1000.f : 100.f));
                c.execs({{2, n, 4}});
                c.set_noncontiguous(true).execs({{2, n, 4}});
            }
    const double nan = std::nan("");
    std::vector<double> odd = {0,   0, 4, 4, 0, 0,   4, 4, 1, 1, 1,   1, 1, 1, 1, 1, 5, 5, 2, 2,
                               nan, 0, 3, 3, 0, nan, 3, 3, 0, 0, nan, 3, 2, 2, 6, 6, 0, 0, 4, 4};
    for (float thresh : {-1.f, 0.f, 0.5f})
        for (uint32_t cap : {0u, 3u, 12u}) {
            CudaChecker<NMSKeep> c(handle.get());
            c.set_param(nms_param(thresh, cap)).set_epsilon(0).expect_kernel("cuda");
            c.set_values(0, odd).execs({{1, 10, 4}});
        }
    CudaChecker<NMSKeep> c(handle.get());
    c.set_param(nms_param(0.5f, 4)).set_epsilon(0).expect_kernel("cuda").execs({{2, 0, 4}});
    c.set_values(0, random_boxes(30, rng))
            .exec_layouts({TensorLayout({4, 3, 10}, dtype::Float32).dimshuffle({1, 2, 0})});
}
