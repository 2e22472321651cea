// Correlation, DeformablePSROIPooling and their gradients on the CUDA handle against naive:
// both correlation modes over strided windows and padding, deformable pooling with and without
// offsets over rois past the edges; dense float32 runs the CUDA kernels, strided layouts the
// staged naive kernel.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/vision.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(Cuda, CorrelationAndGradientsMatchNaive) {
    for (auto [k, md, s1, s2, pad, mul] :
         std::vector<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, bool>>{
                 {1, 1, 1, 1, 0, true}, {3, 4, 2, 2, 3, false}, {3, 2, 1, 1, 2, true}}) {
        param::Correlation p;
        p.kernel_size = k;
        p.max_displacement = md;
        p.stride1 = s1;
        p.stride2 = s2;
        p.pad_size = pad;
        p.is_multiply = mul;
        TensorShape s{2, 3, 9, 10};
        auto naive = Handle::make_naive();
        auto fwd = naive->create_operator<Correlation>();
        fwd->param() = p;
        TensorShape out =
                run_op(*fwd, {HostTensor(s, dtype::Float32), HostTensor(s, dtype::Float32)})[0]
                        .shape();
        CudaChecker<Correlation> f(handle.get());
        f.set_param(p).set_epsilon(1e-5).expect_kernel("cuda").execs({s, s});
        CudaChecker<CorrelationBackwardData1> b1(handle.get());
        b1.set_param(p).set_epsilon(1e-5).expect_kernel("cuda").execs({out, s, s});
        CudaChecker<CorrelationBackwardData2> b2(handle.get());
        b2.set_param(p).set_epsilon(1e-5).expect_kernel("cuda").execs({out, s, s});
        CudaChecker<Correlation> strided(handle.get());
        strided.set_param(p).set_noncontiguous(true).expect_kernel("naive(staged)").execs({s, s});
    }
}

TEST_F(Cuda, DeformablePSROIPoolingAndGradientMatchNaive) {
    const std::vector<double> rois = {0,  1.2, 0.5, 6.3, 5.1, 1,   -2,  -1, 3,  4,  1,  5.5, 4,
                                      11, 9.5, 0.6, 2,   3,   7.5, 7.5, 0,  14, 12, 16, 15};
    for (bool no_trans : {true, false}) {
        param::DeformablePSROIPooling p;
        p.no_trans = no_trans;
        p.part_size = p.pooled_h = p.pooled_w = 3;
        p.sample_per_part = 2;
        p.spatial_scale = 0.9f;
        p.trans_std = 0.2f;
        TensorShape src{2, 4, 9, 10}, r{5, 5}, trans{5, 2, 3, 3}, pooled{5, 4, 3, 3};
        CudaChecker<DeformablePSROIPooling> f(handle.get());
        f.set_param(p).set_values(1, rois).expect_kernel("cuda").execs({src, r, trans});
        // The gradient needs the forward's counts.
        auto naive = Handle::make_naive();
        auto fwd = naive->create_operator<DeformablePSROIPooling>();
        fwd->param() = p;
        std::mt19937 rng(1);
        HostTensor x(src, dtype::Float32), t(trans, dtype::Float32);
        fill_uniform(x, -1, 1, rng);
        fill_uniform(t, -1, 1, rng);
        auto counts = run_op(*fwd, {x, HostTensor::from(r, rois), t})[1].values();
        CudaChecker<DeformablePSROIPoolingBackward> b(handle.get());
        b.set_param(p).set_values(1, rois).set_values(4, counts).set_epsilon(1e-4);
        b.expect_kernel("cuda").execs({src, r, trans, pooled, pooled});
    }
}
