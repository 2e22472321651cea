// BatchNormForward and BatchNormBackward on float16 and bfloat16 data with float32 statistics and
// parameters (what autocast gives) on the x86 handle against naive: contiguous data runs the
// Highway loops (reading the 16-bit data exactly) and agrees with naive within one unit of the
// 16-bit dtype (the sums' order differs in the last bits of a double); 2-D to 5-D src, channel
// counts of 1 and primes, training and inference; padded (strided) data and mixed data dtypes go to
// naive.
#include "neomeg/dnn/operators/norm.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::BatchNorm::FwdMode;

const DType kLowp[] = {dtype::Float16, dtype::BFloat16};

param::BatchNorm bn(Mode mode) {
    param::BatchNorm p;
    p.fwd_mode = mode;
    return p;
}

const std::vector<TensorShape> kSrcShapes = {{2, 3},       {7, 1},          {3, 2, 9},
                                             {4, 5, 7, 7}, {2, 3, 4, 5, 6}, {32, 16, 12, 12}};

TensorShape per_channel(const TensorShape& src) {
    TensorShape pc = src;
    for (size_t i = 0; i < pc.ndim; ++i)
        if (i != 1)
            pc[i] = 1;
    return pc;
}

std::vector<HostTensor> random_inputs(std::vector<std::pair<TensorShape, DType>> specs,
                                      std::mt19937& rng) {
    std::vector<HostTensor> r;
    for (auto& [shape, dt] : specs) {
        r.emplace_back(shape, dt);
        fill_uniform(r.back(), 0.5, 2, rng);
    }
    return r;
}

}  // namespace

TEST_F(X86, BatchNormLowpForwardMatchesNaive) {
    for (DType dt : kLowp)
        for (Mode mode : {Mode::TRAINING, Mode::INFERENCE})
            for (const TensorShape& s : kSrcShapes) {
                TensorShape pc = per_channel(s);
                Checker<BatchNormForward> c(handle.get());
                c.set_param(bn(mode)).set_dtype(0, dt).set_range(0, -2, 3).set_range(4, 0.5, 2);
                c.execs({s, pc, pc, pc, pc});
                c.set_noncontiguous(true).execs({s, pc, pc, pc, pc});
            }
}

TEST_F(X86, BatchNormLowpBackwardMatchesNaive) {
    for (DType dt : kLowp)
        for (Mode mode : {Mode::TRAINING, Mode::INFERENCE})
            for (const TensorShape& s : kSrcShapes) {
                TensorShape pc = per_channel(s);
                Checker<BatchNormBackward> c(handle.get());
                c.set_param(bn(mode)).set_dtype(0, dt).set_dtype(1, dt);
                c.set_range(1, -2, 3).set_range(4, 0.5, 2);
                c.execs({s, s, pc, pc, pc});
                c.set_noncontiguous(true).execs({s, s, pc, pc, pc});
            }
}

TEST_F(X86, BatchNormLowpRunsHighway) {
    std::mt19937 rng(3);
    TensorShape s{8, 4, 6, 6}, pc{1, 4, 1, 1};
    const DType f32 = dtype::Float32;
    for (DType dt : kLowp) {
        auto fwd = random_inputs({{s, dt}, {pc, f32}, {pc, f32}, {pc, f32}, {pc, f32}}, rng);
        EXPECT_EQ(run_and_compare<BatchNormForward>(*handle, bn(Mode::TRAINING), fwd, {}, 2e-2),
                  "hwy");
        auto bwd = random_inputs({{s, dt}, {s, dt}, {pc, f32}, {pc, f32}, {pc, f32}}, rng);
        EXPECT_EQ(run_and_compare<BatchNormBackward>(*handle, bn(Mode::TRAINING), bwd, {}, 2e-2),
                  "hwy");
        // 16-bit statistics are not what autocast gives: naive.
        auto all16 = random_inputs({{s, dt}, {pc, dt}, {pc, dt}, {pc, dt}, {pc, dt}}, rng);
        EXPECT_EQ(run_and_compare<BatchNormForward>(*handle, bn(Mode::TRAINING), all16, {}, 2e-2),
                  "naive");
    }
}
