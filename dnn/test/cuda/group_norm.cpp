// GroupNormForward and GroupNormBackward on the CUDA handle against naive: affine or not, one
// group to one channel per group, no spatial axes to long rows (block reductions), an empty
// batch, float dtypes, strided inputs and padded outputs.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/norm.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::GroupNorm gn(bool affine, uint32_t group) {
    param::GroupNorm p;
    p.affine = affine;
    p.group = group;
    return p;
}

}  // namespace

TEST_F(Cuda, GroupNormMatchesNaive) {
    struct Case {
        TensorShape src;
        uint32_t group;
    };
    const Case cases[] = {{{2, 6, 4, 5}, 3}, {{3, 4}, 2},    {{2, 8, 3}, 8},
                          {{1, 4, 1000}, 1}, {{0, 4, 3}, 2}, {{2, 4, 2, 3, 2}, 4}};
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (bool affine : {false, true})
            for (const Case& k : cases) {
                TensorShape stats{k.src[0], k.group}, channels{k.src[1]};
                CudaChecker<GroupNormForward> f(handle.get());
                f.set_param(gn(affine, k.group)).expect_kernel("cuda");
                for (size_t i = 0; i < 3; ++i)
                    f.set_dtype(i, dt);
                std::vector<TensorShape> shapes{k.src};
                if (affine)
                    shapes.insert(shapes.end(), {channels, channels});
                f.execs(shapes);
                f.set_noncontiguous(true).execs(shapes);

                CudaChecker<GroupNormBackward> b(handle.get());
                b.set_param(gn(affine, k.group)).set_range(3, 0.5, 2).expect_kernel("cuda");
                b.set_dtype(0, dt).set_dtype(1, dt).set_dtype(4, dt);
                // Sums over samples and positions: bfloat16's gradients need more room.
                if (dt == dtype::BFloat16)
                    b.set_epsilon(5e-2);
                std::vector<TensorShape> bshapes{k.src, k.src, stats, stats};
                if (affine)
                    bshapes.push_back(channels);
                b.execs(bshapes);
                b.set_noncontiguous(true).execs(bshapes);
            }
    // A transposed src: (N, C, H, W) read through an (N, H, W, C) buffer.
    CudaChecker<GroupNormForward> f(handle.get());
    f.set_param(gn(false, 2));
    f.exec_layouts({TensorLayout({2, 3, 5, 4}, dtype::Float32).dimshuffle({0, 3, 1, 2})});
}
