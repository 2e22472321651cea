// LayerNormForward and LayerNormBackward on the CUDA handle against naive: affine or not, one to
// three normalised axes, long rows (block reductions), float dtypes, strided and broadcast inputs,
// padded outputs.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/norm.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::LayerNorm ln(bool affine, uint32_t dims) {
    param::LayerNorm p;
    p.affine = affine;
    p.normalized_dim = dims;
    return p;
}

}  // namespace

TEST_F(Cuda, LayerNormMatchesNaive) {
    struct Case {
        TensorShape src;
        uint32_t dims;
        TensorShape stats, weight;
    };
    const Case cases[] = {{{4, 5, 6}, 2, {4}, {5, 6}},
                          {{3, 7}, 1, {3}, {7}},
                          {{2, 3, 4, 5}, 3, {2}, {3, 4, 5}},
                          {{2, 3000}, 1, {2}, {3000}}};
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (bool affine : {false, true})
            for (const Case& k : cases) {
                CudaChecker<LayerNormForward> f(handle.get());
                f.set_param(ln(affine, k.dims)).expect_kernel("cuda");
                for (size_t i = 0; i < 3; ++i)
                    f.set_dtype(i, dt);
                std::vector<TensorShape> shapes{k.src};
                if (affine)
                    shapes.insert(shapes.end(), {k.weight, k.weight});
                f.execs(shapes);
                f.set_noncontiguous(true).execs(shapes);

                CudaChecker<LayerNormBackward> b(handle.get());
                b.set_param(ln(affine, k.dims)).set_range(3, 0.5, 2).expect_kernel("cuda");
                b.set_dtype(0, dt).set_dtype(1, dt).set_dtype(4, dt);
                // Sums over rows: bfloat16's gradients need more room.
                if (dt == dtype::BFloat16)
                    b.set_epsilon(5e-2);
                std::vector<TensorShape> bshapes{k.src, k.src, k.stats, k.stats};
                if (affine)
                    bshapes.push_back(k.weight);
                b.execs(bshapes);
                b.set_noncontiguous(true).execs(bshapes);
            }
    // A broadcast src (stride 0 rows) and a transposed one.
    CudaChecker<LayerNormForward> f(handle.get());
    f.set_param(ln(false, 1));
    f.exec_layouts({TensorLayout({4, 6}, {0, 1}, dtype::Float32)});
    f.exec_layouts({TensorLayout({6, 4}, dtype::Float32).dimshuffle({1, 0})});
}
