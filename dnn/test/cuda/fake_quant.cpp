// FakeQuant, TQT, LSQ and their backward operators on the CUDA handle against naive: scalar and
// per-channel scales, float dtypes, strided inputs and padded outputs, an empty input.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/quantization.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::FakeQuant range(int32_t qmin, int32_t qmax) {
    param::FakeQuant p;
    p.qmin = qmin;
    p.qmax = qmax;
    return p;
}

}  // namespace

TEST_F(Cuda, FakeQuantFamilyMatchesNaive) {
    const TensorShape x{4, 3, 5, 6};
    struct Scale {
        TensorShape shape;
        std::vector<double> step, log2_step;
    };
    const Scale scales[] = {{{1}, {0.02}, {-5}}, {{1, 3, 1, 1}, {0.01, 0.03, 0.1}, {-6, -4, -3}}};
    for (DType dt : {dtype::Float32, dtype::Float16})
        for (const Scale& s : scales)
            for (bool strided : {false, true}) {
                auto p = range(-128, 127);
                TensorShape one{1};
                CudaChecker<FakeQuant> f(handle.get());
                f.set_param(p).set_dtype(0, dt).set_values(1, s.step).set_values(2, {3});
                f.set_noncontiguous(strided).expect_kernel("cuda").execs({x, s.shape, one});
                CudaChecker<FakeQuantBackward> fb(handle.get());
                fb.set_param(p).set_dtype(0, dt).set_dtype(1, dt).set_values(2, s.step);
                fb.set_values(3, {3}).set_noncontiguous(strided).expect_kernel("cuda");
                fb.execs({x, x, s.shape, one});

                CudaChecker<TQT> t(handle.get());
                t.set_param(p).set_dtype(0, dt).set_values(1, s.log2_step);
                t.set_noncontiguous(strided).expect_kernel("cuda").execs({x, s.shape});
                CudaChecker<TQTBackward> tb(handle.get());
                tb.set_param(p).set_dtype(0, dt).set_dtype(1, dt).set_values(2, s.log2_step);
                tb.set_noncontiguous(strided).expect_kernel("cuda").execs({x, x, s.shape});

                CudaChecker<LSQ> l(handle.get());
                l.set_param(p).set_dtype(0, dt).set_values(1, s.step).set_values(2, {1});
                l.set_values(3, {0.5}).set_noncontiguous(strided).expect_kernel("cuda");
                l.execs({x, s.shape, one, one});
                CudaChecker<LSQBackward> lb(handle.get());
                lb.set_param(p).set_dtype(0, dt).set_dtype(1, dt).set_values(2, s.step);
                lb.set_values(3, {1}).set_values(4, {0.5}).set_noncontiguous(strided);
                lb.expect_kernel("cuda").execs({x, x, s.shape, one, one});
            }
}

TEST_F(Cuda, FakeQuantEmptyInput) {
    CudaChecker<FakeQuant> f(handle.get());
    f.set_param(range(-8, 7)).set_values(1, {0.5}).set_values(2, {0});
    f.execs({{0, 4}, {1}, {1}});
}
