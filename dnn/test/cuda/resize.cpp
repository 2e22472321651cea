// Resize and ResizeBackward on the CUDA handle against naive: NEAREST and LINEAR with and
// without align_corners, upsampling, downsampling and size-1 axes, float dtypes, strided inputs
// and padded outputs, an empty batch.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/tensor_shape.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(Cuda, ResizeAndBackwardMatchNaive) {
    using Mode = param::Resize::InterpolationMode;
    struct Case {
        TensorShape src;
        uint32_t out_h, out_w;
    };
    const Case cases[] = {{{2, 3, 4, 5}, 7, 9}, {{2, 3, 7, 9}, 4, 5}, {{1, 2, 1, 1}, 3, 4},
                          {{1, 2, 3, 4}, 1, 1}, {{2, 1, 5, 5}, 5, 5}, {{1, 1, 64, 48}, 100, 30},
                          {{0, 3, 4, 5}, 2, 2}};
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (auto [mode, align] : {std::pair{Mode::NEAREST, false}, std::pair{Mode::LINEAR, false},
                                   std::pair{Mode::LINEAR, true}})
            for (const Case& k : cases) {
                param::Resize p;
                p.mode = mode;
                p.align_corners = align;
                p.out_h = k.out_h;
                p.out_w = k.out_w;
                CudaChecker<Resize> f(handle.get());
                f.set_param(p).set_dtype(0, dt).expect_kernel("cuda");
                f.execs({k.src});
                f.set_noncontiguous(true).execs({k.src});

                TensorShape diff{k.src[0], k.src[1], k.out_h, k.out_w};
                CudaChecker<ResizeBackward> b(handle.get());
                b.set_param(p).set_dtype(0, dt).set_output_shapes({k.src}).expect_kernel("cuda");
                b.execs({diff});
                b.set_noncontiguous(true).execs({diff});
            }
}
