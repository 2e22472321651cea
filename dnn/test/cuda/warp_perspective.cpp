// WarpPerspective and its gradients on the CUDA handle against naive: every border mode, float
// dtypes, mat_idx pairing, strided inputs and padded outputs, an empty batch, and the mat_idx
// range error.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/vision.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using BMode = param::WarpPerspective::BorderMode;

// Two mild perspective matrices whose source points reach past every edge of a small image.
const std::vector<double> kMats = {1.1, -0.2, -2.5, 0.15,  0.9, -1.5, 0.01,   -0.02, 1.05,
                                   0.7, 0.3,  1.2,  -0.25, 1.3, 0.4,  -0.015, 0.01,  0.95};

}  // namespace

TEST_F(Cuda, WarpPerspectiveAndGradientsMatchNaive) {
    struct Case {
        TensorShape src;
        uint32_t out_h, out_w;
    };
    const Case cases[] = {{{3, 2, 5, 7}, 6, 9}, {{3, 1, 1, 1}, 3, 2}, {{3, 3, 16, 12}, 20, 25}};
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (BMode mode :
             {BMode::REPLICATE, BMode::REFLECT, BMode::REFLECT_101, BMode::WRAP, BMode::CONSTANT})
            for (const Case& k : cases) {
                param::WarpPerspective p;
                p.bmode = mode;
                p.border_val = 0.5f;
                p.out_h = k.out_h;
                p.out_w = k.out_w;
                TensorShape mat{2, 3, 3}, idx{2}, warped{2, k.src[1], k.out_h, k.out_w};
                CudaChecker<WarpPerspective> f(handle.get());
                f.set_param(p).set_dtype(0, dt).set_dtype(2, dtype::Int32);
                f.set_values(1, kMats).set_values(2, {2, 0}).expect_kernel("cuda");
                f.execs({k.src, mat, idx});
                f.set_noncontiguous(true).execs({k.src, mat, idx});

                CudaChecker<WarpPerspectiveBackwardData> b(handle.get());
                b.set_param(p).set_dtype(1, dtype::Int32).set_dtype(2, dt);
                b.set_values(0, kMats).set_values(1, {2, 0}).set_output_shapes({k.src});
                b.expect_kernel("cuda").execs({mat, idx, warped});
                b.set_noncontiguous(true).execs({mat, idx, warped});

                CudaChecker<WarpPerspectiveBackwardMat> m(handle.get());
                m.set_param(p).set_dtype(0, dt).set_dtype(2, dtype::Int32).set_dtype(3, dt);
                m.set_values(1, kMats).set_values(2, {1, 1}).set_epsilon(1e-3);
                m.expect_kernel("cuda").execs({k.src, mat, idx, warped});
                m.set_noncontiguous(true).execs({k.src, mat, idx, warped});
            }
}

TEST_F(Cuda, WarpPerspectiveEmptyBatchAndBadIndex) {
    param::WarpPerspective p;
    p.out_h = 2;
    p.out_w = 3;
    CudaChecker<WarpPerspective> f(handle.get());
    f.set_param(p).set_dtype(2, dtype::Int32).execs({{1, 2, 4, 4}, {0, 3, 3}, {0}});
    CudaChecker<WarpPerspective> bad(handle.get());
    bad.set_param(p).set_dtype(2, dtype::Int32).set_values(2, {0, 3});
    EXPECT_THROW(bad.execs({{2, 1, 4, 4}, {2, 3, 3}, {2}}), IndexError);
}
