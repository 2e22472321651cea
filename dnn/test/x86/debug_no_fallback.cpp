// Under NEOMEG_DEBUG=1 (the ctest entry dnn.x86.debug) the x86 handle prints the kernel of every
// op: the float32 cases that used to fall back to naive (the Elemwise modes of
// elemwise_math_hwy.cpp, Padding REFLECT/REPLICATE and its backward, ReshapeTo, BroadcastTo,
// GaussianRNG, UniformRNG, Scatter, the multi-axis indexing operators) now print a kernel of their
// own and no warning; so do the cases of other dtypes that used to (16-bit RNG, Padding CONSTANT
// and Scatter ADD on integers).
#include <cstdlib>

#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/operators/indexing.h"
#include "neomeg/dnn/operators/random.h"
#include "neomeg/dnn/operators/tensor_shape.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

size_t count(const std::string& s, const std::string& needle) {
    size_t n = 0;
    for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1))
        ++n;
    return n;
}

template <class Op>
void run(Handle& h, const typename Op::Param& p, const std::vector<HostTensor>& in,
         const std::vector<TensorShape>& out = {}) {
    auto op = h.create_operator<Op>();
    op->param() = p;
    run_op(*op, in, out);
}

HostTensor random_tensor(const TensorShape& s, std::mt19937& rng) {
    HostTensor t(s, dtype::Float32);
    fill_uniform(t, 0.1, 0.9, rng);
    return t;
}

HostTensor ints(const TensorShape& s, const std::vector<double>& v) {
    return HostTensor::from(s, v, dtype::Int32);
}

}  // namespace

TEST_F(X86, DebugSwitchReportsNoNaiveFallbackForNewKernels) {
    const char* env = std::getenv("NEOMEG_DEBUG");
    if (!env || std::string(env) != "1")
        GTEST_SKIP() << "runs under NEOMEG_DEBUG=1 (ctest dnn.x86.debug)";
    std::mt19937 rng(61);
    auto x = random_tensor({4, 6}, rng), y = random_tensor({4, 6}, rng);
    testing::internal::CaptureStderr();
    using M = param::Elemwise::Mode;
    size_t runs = 0;
    for (M m : {M::POW, M::MOD, M::FLOOR_DIV, M::TAN, M::ERF, M::ERFINV, M::ERFC, M::ERFCINV,
                M::GELU, M::GELU_GRAD, M::EXP}) {
        param::Elemwise p;
        p.mode = m;
        std::vector<HostTensor> in{x};
        if (param::Elemwise::arity(m) == 2)
            in.push_back(y);
        run<Elemwise>(*handle, p, in);
        ++runs;
    }
    for (auto mode : {param::Padding::Mode::REFLECT, param::Padding::Mode::REPLICATE}) {
        param::Padding p;
        p.mode = mode;
        p.front_offsets = {1, 2};
        p.back_offsets = {2, 1};
        run<Padding>(*handle, p, {x});
        run<PaddingBackward>(*handle, p, {random_tensor({7, 9}, rng)});
        runs += 2;
    }
    run<ReshapeTo>(*handle, {}, {x, ints({2}, {6, 4})}, {{6, 4}});
    run<BroadcastTo>(*handle, {}, {x, ints({3}, {2, 4, 6})}, {{2, 4, 6}});
    run<GaussianRNG>(*handle, {}, {}, {{100}});
    run<UniformRNG>(*handle, {}, {}, {{100}});
    param::Scatter sp;
    sp.axis = 1;
    run<Scatter>(*handle, sp, {x, ints({4, 1}, {0, 5, 2, 2}), random_tensor({4, 1}, rng)});
    param::IndexingMultiAxis ip;
    ip.axes = {1};
    run<IndexingMultiAxisVec>(*handle, ip, {x, ints({3}, {0, -1, 2})});
    run<IndexingSetMultiAxisVec>(*handle, ip,
                                 {x, random_tensor({4, 3}, rng), ints({3}, {0, -1, 2})});
    run<IndexingIncrMultiAxisVec>(*handle, ip,
                                  {x, random_tensor({4, 3}, rng), ints({3}, {0, -1, 2})});
    runs += 8;
    param::GaussianRNG g16;
    g16.dtype = DTypeEnum::Float16;
    run<GaussianRNG>(*handle, g16, {}, {{100}});
    param::UniformRNG ubf16;
    ubf16.dtype = DTypeEnum::BFloat16;
    run<UniformRNG>(*handle, ubf16, {}, {{100}});
    param::Padding pc;
    pc.front_offsets = {1, 0};
    pc.back_offsets = {0, 2};
    auto small = HostTensor::from({2, 2}, {1, 2, 3, 4}, dtype::Int8);
    run<Padding>(*handle, pc, {small});
    sp.mode = param::Scatter::Mode::ADD;
    run<Scatter>(*handle, sp,
                 {HostTensor::from({2, 2}, {1, 2, 3, 4}, dtype::Int16), ints({2, 1}, {1, 1}),
                  HostTensor::from({2, 1}, {5, 6}, dtype::Int16)});
    runs += 4;
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(count(err, "neomeg x86: "), runs) << err;
    EXPECT_EQ(count(err, "kernel naive"), 0u) << err;
    EXPECT_EQ(err.find("warning"), std::string::npos) << err;
}
