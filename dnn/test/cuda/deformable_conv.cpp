// DeformableConvForward and its gradients on the CUDA handle against naive: groups, deformable
// groups, stride, padding and dilation, offsets that leave the image, float dtypes, strided
// inputs and padded outputs, an empty batch.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/convolution.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(Cuda, DeformableConvAndGradientsMatchNaive) {
    struct Case {
        TensorShape src, filter;
        std::vector<int32_t> stride, padding, dilation;
        uint32_t group;
        size_t dg, oh, ow;
    };
    const Case cases[] = {
            {{2, 4, 6, 7}, {6, 2, 3, 3}, {1, 2}, {1, 1}, {2, 1}, 2, 2, 4, 4},
            {{1, 3, 5, 5}, {2, 3, 1, 2}, {1, 1}, {0, 0}, {1, 1}, 1, 3, 5, 4},
            {{1, 2, 1, 1}, {1, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, 1, 1, 1},
    };
    for (DType dt : {dtype::Float32, dtype::Float16})
        for (const Case& k : cases) {
            param::DeformableConv p;
            p.stride = k.stride;
            p.padding = k.padding;
            p.dilation = k.dilation;
            p.group = k.group;
            size_t taps = k.filter[2] * k.filter[3];
            TensorShape offset{k.src[0], 2 * k.dg * taps, k.oh, k.ow};
            TensorShape mask{k.src[0], k.dg * taps, k.oh, k.ow};
            TensorShape dst{k.src[0], k.filter[0], k.oh, k.ow};
            double eps = dt == dtype::Float16 ? 2e-2 : 1e-4;
            CudaChecker<DeformableConvForward> f(handle.get());
            f.set_param(p).set_epsilon(eps).set_range(2, -3, 3).expect_kernel("cuda");
            for (size_t i = 0; i < 4; ++i)
                f.set_dtype(i, dt);
            f.execs({k.src, k.filter, offset, mask});
            f.set_noncontiguous(true).execs({k.src, k.filter, offset, mask});

            CudaChecker<DeformableConvBackwardData> d(handle.get());
            d.set_param(p).set_epsilon(eps).set_range(2, -3, 3).expect_kernel("cuda");
            for (size_t i = 0; i < 5; ++i)
                d.set_dtype(i, dt);
            d.execs({k.src, k.filter, offset, mask, dst});
            d.set_noncontiguous(true).execs({k.src, k.filter, offset, mask, dst});

            CudaChecker<DeformableConvBackwardFilter> w(handle.get());
            w.set_param(p).set_epsilon(eps).set_range(1, -3, 3).expect_kernel("cuda");
            for (size_t i = 0; i < 4; ++i)
                w.set_dtype(i, dt);
            w.set_output_shapes({k.filter}).execs({k.src, offset, mask, dst});
            w.set_noncontiguous(true).execs({k.src, offset, mask, dst});
        }
}

TEST_F(Cuda, DeformableConvEmptyBatch) {
    CudaChecker<DeformableConvForward> f(handle.get());
    f.execs({{0, 2, 4, 4}, {3, 2, 3, 3}, {0, 18, 2, 2}, {0, 9, 2, 2}});
    CudaChecker<DeformableConvBackwardFilter> w(handle.get());
    w.set_output_shapes({{3, 2, 3, 3}})
            .execs({{0, 2, 4, 4}, {0, 18, 2, 2}, {0, 9, 2, 2}, {0, 3, 2, 2}});
}
