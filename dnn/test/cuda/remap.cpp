// Remap and its gradients on the CUDA handle against naive: both interpolations, every border
// mode, float dtypes, strided inputs and padded outputs, and an empty output.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/vision.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(Cuda, RemapAndGradientsMatchNaive) {
    using BMode = param::Remap::BorderMode;
    using IMode = param::Remap::InterpolationMode;
    struct Case {
        TensorShape src;
        size_t oh, ow;
    };
    const Case cases[] = {{{2, 2, 5, 7}, 6, 9}, {{2, 1, 1, 1}, 3, 2}, {{2, 3, 16, 12}, 20, 25}};
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (IMode imode : {IMode::LINEAR, IMode::NEAREST})
            for (BMode mode : {BMode::REPLICATE, BMode::REFLECT, BMode::REFLECT_101, BMode::WRAP,
                               BMode::CONSTANT})
                for (const Case& k : cases) {
                    param::Remap p;
                    p.imode = imode;
                    p.border_type = mode;
                    p.scalar = 0.5f;
                    TensorShape map{k.src[0], k.oh, k.ow, 2},
                            mapped{k.src[0], k.src[1], k.oh, k.ow};
                    CudaChecker<Remap> f(handle.get());
                    f.set_param(p).set_dtype(0, dt).set_range(1, -3, 20).expect_kernel("cuda");
                    f.execs({k.src, map});
                    f.set_noncontiguous(true).execs({k.src, map});

                    CudaChecker<RemapBackwardData> b(handle.get());
                    b.set_param(p).set_dtype(1, dt).set_range(0, -3, 20);
                    b.set_output_shapes({k.src}).expect_kernel("cuda").execs({map, mapped});
                    b.set_noncontiguous(true).execs({map, mapped});

                    CudaChecker<RemapBackwardMat> m(handle.get());
                    m.set_param(p).set_dtype(0, dt).set_dtype(2, dt).set_range(1, -3, 20);
                    m.set_epsilon(1e-3).expect_kernel("cuda").execs({k.src, map, mapped});
                    m.set_noncontiguous(true).execs({k.src, map, mapped});
                }
}

TEST_F(Cuda, RemapEmptyOutput) {
    CudaChecker<Remap> f(handle.get());
    f.execs({{2, 3, 4, 4}, {2, 0, 3, 2}});
}
