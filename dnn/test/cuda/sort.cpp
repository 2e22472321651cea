// Argsort and TopK on the CUDA handle (CUB segmented radix sort) against naive: both orders,
// every dtype, many ties (stability), NaN and signed zeros, every TopK mode with k of both signs,
// strided inputs and padded outputs.
#include <cmath>

#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/reduce.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {
const DType kDtypes[] = {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8,
                         dtype::Uint8,   dtype::Int16,   dtype::Int32};
}  // namespace

TEST_F(Cuda, ArgsortMatchesNaive) {
    using Order = param::Argsort::Order;
    for (DType dt : kDtypes)
        for (Order o : {Order::ASCENDING, Order::DESCENDING}) {
            param::Argsort p;
            p.order = o;
            CudaChecker<Argsort> c(handle.get());
            // Few distinct values: ties everywhere (src order ascending, reversed descending).
            c.set_param(p).set_dtype(0, dt).set_range(0, -5, 5).set_epsilon(0);
            c.expect_kernel("cuda:cub").execs({{7, 33}});
            c.execs({{3000}});
            c.execs({{2, 3, 1}});
            c.set_noncontiguous(true).execs({{4, 5, 6}});
        }
    double nan = std::nan("");
    CudaChecker<Argsort> s(handle.get());
    s.set_epsilon(0).set_values(0, {1, nan, -0.0, 0.0, -2, nan, 1, -0.0}).execs({{8}});
    param::Argsort desc;
    desc.order = param::Argsort::Order::DESCENDING;
    s.set_param(desc).execs({{8}});
}

TEST_F(Cuda, TopKEveryMode) {
    using Mode = param::TopK::Mode;
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::Int32})
        for (Mode m : {Mode::KTH_ONLY, Mode::VALUE_IDX_NOSORT, Mode::VALUE_IDX_SORTED})
            for (int32_t k : {1, 5, -5, 40, -40}) {
                param::TopK p;
                p.mode = m;
                p.k = k;
                CudaChecker<TopK> c(handle.get());
                c.set_param(p).set_dtype(0, dt).set_range(0, -8, 8).set_epsilon(0);
                c.expect_kernel("cuda:cub").execs({{6, 40}});
                c.set_noncontiguous(true).execs({{3, 2, 40}});
            }
}
