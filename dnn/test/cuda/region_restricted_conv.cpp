// RegionRestrictedConvolutionForward and its gradients on the CUDA handle against naive: groups,
// stride, padding and dilation, int32 and uint8 region ids, float dtypes, strided inputs and
// padded outputs.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/convolution.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

TEST_F(Cuda, RegionRestrictedConvAndGradientsMatchNaive) {
    struct Case {
        TensorShape src, filter;
        std::vector<int32_t> stride, padding, dilation;
        uint32_t group;
        size_t oh, ow;
    };
    const Case cases[] = {
            {{2, 4, 6, 7}, {6, 2, 3, 3}, {1, 2}, {1, 1}, {2, 1}, 2, 4, 4},
            {{1, 3, 5, 5}, {3, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 3, 3, 3},
            {{1, 2, 3, 4}, {2, 2, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, 3, 4},
    };
    for (DType rdt : {dtype::Int32, dtype::Uint8})
        for (DType dt : {dtype::Float32, dtype::Float16})
            for (const Case& k : cases) {
                param::RegionRestrictedConvolution p;
                p.stride = k.stride;
                p.padding = k.padding;
                p.dilation = k.dilation;
                p.group = k.group;
                TensorShape rin{k.src[0], k.src[2], k.src[3]}, rout{k.src[0], k.oh, k.ow};
                TensorShape dst{k.src[0], k.filter[0], k.oh, k.ow};
                double eps = dt == dtype::Float16 ? 2e-2 : 1e-4;
                CudaChecker<RegionRestrictedConvolutionForward> f(handle.get());
                f.set_param(p).set_epsilon(eps).set_dtype(0, dt).set_dtype(1, dt);
                f.set_dtype(2, rdt).set_dtype(3, rdt).set_range(2, 0, 2).set_range(3, 0, 2);
                f.expect_kernel("cuda").execs({k.src, k.filter, rin, rout});
                f.set_noncontiguous(true).execs({k.src, k.filter, rin, rout});

                CudaChecker<RegionRestrictedConvolutionBackwardData> d(handle.get());
                d.set_param(p).set_epsilon(eps).set_dtype(0, dt).set_dtype(1, dt);
                d.set_dtype(2, rdt).set_dtype(3, rdt).set_range(2, 0, 2).set_range(3, 0, 2);
                d.set_output_shapes({k.src}).expect_kernel("cuda");
                d.execs({k.filter, dst, rin, rout});
                d.set_noncontiguous(true).execs({k.filter, dst, rin, rout});

                CudaChecker<RegionRestrictedConvolutionBackwardFilter> w(handle.get());
                w.set_param(p).set_epsilon(eps).set_dtype(0, dt).set_dtype(1, dt);
                w.set_dtype(2, rdt).set_dtype(3, rdt).set_range(2, 0, 2).set_range(3, 0, 2);
                w.set_output_shapes({k.filter}).expect_kernel("cuda");
                w.execs({k.src, dst, rin, rout});
                w.set_noncontiguous(true).execs({k.src, dst, rin, rout});
            }
}
