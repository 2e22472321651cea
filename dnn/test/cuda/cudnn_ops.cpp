// PoolingForward/Backward, Softmax/LogSoftmax forward and backward and BatchNormForward/Backward on
// the CUDA handle (cuDNN) against naive: 1-D, 2-D and 3-D windows with stride and padding, every
// pooling mode, softmax over every axis of dense and strided tensors, batch norm on 2-D to 5-D
// inputs with float32 statistics, the running statistics updated in place, and the cases that go
// to the staged naive kernel (inference batch norm, broadcast per-channel tensors).
#include "cuda/cuda_test.h"
#include "naive/pooling.h"
#include "neomeg/dnn/operators/norm.h"
#include "neomeg/dnn/operators/pooling.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

const DType kFloats[] = {dtype::Float32, dtype::Float16, dtype::BFloat16};

struct PoolCase {
    TensorShape src;
    param::Pooling p;
};

std::vector<PoolCase> pool_cases(param::Pooling::Mode m) {
    return {
            {{2, 3, 8, 8}, pool_param(m, {2, 2}, {2, 2}, {0, 0})},
            {{2, 3, 9, 7}, pool_param(m, {3, 3}, {2, 2}, {1, 1})},
            {{1, 4, 11, 5}, pool_param(m, {3, 2}, {1, 2}, {2, 1})},
            {{3, 2, 13}, pool_param(m, {3}, {2}, {1})},
            {{2, 2, 5, 6, 7}, pool_param(m, {2, 3, 2}, {2, 1, 2}, {1, 1, 0})},
    };
}

using PMode = param::Pooling::Mode;
const PMode kPoolModes[] = {PMode::MAX, PMode::AVERAGE, PMode::AVERAGE_COUNT_EXCLUDE_PADDING};

TensorShape pooled(const PoolCase& k) {
    TensorShape d = k.src;
    for (size_t i = 0; i + 2 < k.src.ndim; ++i)
        d[2 + i] = (k.src[2 + i] + 2 * static_cast<size_t>(k.p.padding[i]) -
                    static_cast<size_t>(k.p.window[i])) /
                           static_cast<size_t>(k.p.stride[i]) +
                   1;
    return d;
}

param::BatchNorm bn(param::BatchNorm::FwdMode mode, float eps = 1e-5f, float momentum = 0.9f) {
    param::BatchNorm p;
    p.fwd_mode = mode;
    p.epsilon = eps;
    p.momentum = momentum;
    return p;
}

std::vector<TensorShape> per_channel_shapes(const TensorShape& src) {
    TensorShape wide = src;
    for (size_t i = 0; i < wide.ndim; ++i)
        if (i != 1)
            wide[i] = 1;
    return {TensorShape{src[1]}, wide};
}

const TensorShape kBnShapes[] = {{2, 3}, {3, 2, 9}, {4, 5, 7, 7}, {2, 3, 4, 5, 6}, {64, 6, 12, 12}};

}  // namespace

TEST_F(Cuda, PoolingForwardMatchesNaive) {
    for (PMode m : kPoolModes)
        for (DType dt : kFloats)
            for (const PoolCase& k : pool_cases(m)) {
                CudaChecker<PoolingForward> c(handle.get());
                c.set_param(k.p).set_dtype(0, dt).expect_kernel("cudnn").execs({k.src});
                c.set_noncontiguous(true).execs({k.src});
            }
}

TEST_F(Cuda, PoolingBackwardMatchesNaive) {
    for (PMode m : kPoolModes)
        for (DType dt : kFloats)
            for (const PoolCase& k : pool_cases(m)) {
                CudaChecker<PoolingBackward> c(handle.get());
                c.set_param(k.p).expect_kernel("cudnn");
                for (size_t i = 0; i < 3; ++i)
                    c.set_dtype(i, dt);
                // dst is random: MAX must find its maxima from src, as naive does.
                c.execs({k.src, pooled(k), pooled(k)});
                // Strided tensors run staged, correctly.
                c.expect_kernel("naive(staged)")
                        .set_noncontiguous(true)
                        .execs({k.src, pooled(k), pooled(k)});
            }
}

TEST_F(Cuda, AdaptivePoolingMatchesNaive) {
    using AMode = param::AdaptivePooling::Mode;
    struct Case {
        TensorShape src;
        std::vector<int32_t> out;
    };
    const Case cases[] = {{{2, 3, 7, 9}, {1, 1}},
                          {{2, 3, 7, 9}, {3, 4}},
                          {{1, 2, 5, 5}, {7, 6}},
                          {{3, 2, 13}, {5}},
                          {{2, 2, 5, 6, 7}, {2, 3, 4}}};
    for (AMode m : {AMode::MAX, AMode::AVERAGE})
        for (DType dt : kFloats)
            for (const Case& k : cases) {
                param::AdaptivePooling p;
                p.mode = m;
                p.shape = k.out;
                TensorShape dst = k.src;
                for (size_t i = 0; i < k.out.size(); ++i)
                    dst[2 + i] = static_cast<size_t>(k.out[i]);
                CudaChecker<AdaptivePoolingForward> f(handle.get());
                f.set_param(p).set_dtype(0, dt).expect_kernel("cuda").execs({k.src});
                f.set_noncontiguous(true).execs({k.src});
                CudaChecker<AdaptivePoolingBackward> b(handle.get());
                b.set_param(p).expect_kernel("cuda");
                for (size_t i = 0; i < 3; ++i)
                    b.set_dtype(i, dt);
                b.execs({k.src, dst, dst});
                b.set_noncontiguous(true).execs({k.src, dst, dst});
            }
}

TEST_F(Cuda, SoftmaxFamilyEveryAxis) {
    for (DType dt : kFloats)
        for (int32_t axis : {0, 1, 2, -1}) {
            param::Softmax p;
            p.axis = axis;
            TensorShape s{5, 7, 33};
            CudaChecker<SoftmaxForward> f(handle.get());
            f.set_param(p).set_dtype(0, dt).set_range(0, -8, 8).expect_kernel("cudnn").execs({s});
            CudaChecker<LogSoftmaxForward> lf(handle.get());
            lf.set_param(p).set_dtype(0, dt).set_range(0, -8, 8).expect_kernel("cudnn").execs({s});
            CudaChecker<SoftmaxBackward> b(handle.get());
            b.set_param(p).set_dtype(0, dt).set_dtype(1, dt).set_range(0, 0, 1);
            b.expect_kernel("cudnn").execs({s, s});
            CudaChecker<LogSoftmaxBackward> lb(handle.get());
            lb.set_param(p).set_dtype(0, dt).set_dtype(1, dt).set_range(0, -4, 0);
            lb.expect_kernel("cudnn").execs({s, s});
            // Padded rows: merged or staged, right either way.
            f.expect_kernel("").set_noncontiguous(true).execs({s});
            lb.expect_kernel("").set_noncontiguous(true).execs({s, s});
        }
    // A 1-D tensor and a transposed view.
    CudaChecker<SoftmaxForward> f(handle.get());
    f.expect_kernel("cudnn").execs({{1000}});
    param::Softmax p;
    p.axis = 0;
    f.set_param(p).exec_layouts({TensorLayout({6, 4}, dtype::Float32).dimshuffle({1, 0})});
}

TEST_F(Cuda, BatchNormTrainingMatchesNaive) {
    using Mode = param::BatchNorm::FwdMode;
    for (const auto& p : {bn(Mode::TRAINING), bn(Mode::TRAINING, 1e-3f, 0.5f)})
        for (DType dt : kFloats)
            for (const TensorShape& s : kBnShapes)
                for (const TensorShape& pc : per_channel_shapes(s)) {
                    CudaChecker<BatchNormForward> f(handle.get());
                    f.set_param(p).set_dtype(0, dt).set_range(0, -2, 3).set_range(4, 0.5, 2);
                    f.expect_kernel("cudnn").execs({s, pc, pc, pc, pc});
                    CudaChecker<BatchNormBackward> b(handle.get());
                    b.set_param(p).set_dtype(0, dt).set_dtype(1, dt).set_range(1, -2, 3);
                    b.set_range(4, 0.5, 2).expect_kernel("cudnn").execs({s, s, pc, pc, pc});
                }
}

TEST_F(Cuda, BatchNormStagedCases) {
    using Mode = param::BatchNorm::FwdMode;
    CudaChecker<BatchNormForward> f(handle.get());
    f.set_param(bn(Mode::INFERENCE)).set_range(4, 0.5, 2).expect_kernel("naive(staged)");
    f.execs({{4, 5, 7, 7}, {5}, {5}, {5}, {5}});
    TensorLayout pc({4}, dtype::Float32), bcast({4}, {0}, dtype::Float32);
    f.set_param(bn(Mode::TRAINING))
            .exec_layouts({TensorLayout({3, 4, 5, 5}, dtype::Float32), bcast, pc, pc, pc});
}

TEST_F(Cuda, BatchNormRunningStatisticsInPlace) {
    using Mode = param::BatchNorm::FwdMode;
    std::mt19937 rng(7);
    HostTensor x({8, 3, 6, 6}, dtype::Float32), scale({3}, dtype::Float32),
            bias({3}, dtype::Float32), rm({3}, dtype::Float32), rv({3}, dtype::Float32);
    fill_uniform(x, -2, 3, rng);
    fill_uniform(scale, 0.5, 1.5, rng);
    fill_uniform(bias, -1, 1, rng);
    fill_uniform(rm, -1, 1, rng);
    fill_uniform(rv, 0.5, 2, rng);
    auto naive = Handle::make_naive()->create_operator<BatchNormForward>();
    naive->param() = bn(Mode::TRAINING);
    auto want = run_op(*naive, {x, scale, bias, rm, rv});

    auto op = handle->create_operator<BatchNormForward>();
    op->param() = bn(Mode::TRAINING);
    DeviceTensor dx = DeviceTensor::from(x), ds = DeviceTensor::from(scale),
                 db = DeviceTensor::from(bias), drm = DeviceTensor::from(rm),
                 drv = DeviceTensor::from(rv), dy(x.layout()), mean(rm.layout()), inv(rm.layout());
    std::vector<TensorND> in{dx.nd(), ds.nd(), db.nd(), drm.nd(), drv.nd()};
    std::vector<TensorND> out{dy.nd(), mean.nd(), inv.nd(), drm.nd(), drv.nd()};
    op->exec(in, out);
    EXPECT_EQ(last_kernel(*op), "cudnn");
    EXPECT_TRUE(tensors_near(dy.to_host(), want[0], 1e-4));
    EXPECT_TRUE(tensors_near(mean.to_host(), want[1], 1e-4));
    EXPECT_TRUE(tensors_near(inv.to_host(), want[2], 1e-4));
    EXPECT_TRUE(tensors_near(drm.to_host(), want[3], 1e-4));
    EXPECT_TRUE(tensors_near(drv.to_host(), want[4], 1e-4));
}
