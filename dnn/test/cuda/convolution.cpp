// ConvolutionForward, ConvolutionBackwardData, ConvolutionBackwardFilter and ConvBias on the CUDA
// handle (cuDNN) against naive: 1-D, 2-D and 3-D, stride, padding, dilation, groups (depthwise
// too), both modes, float32/float16/bfloat16, NHWC views, padded inputs and outputs (which may go
// to the staged naive kernel; their values are checked either way), a preset larger input for
// backward data, every ConvBias nonlinearity with bias and z (fused into one cuDNN call where
// cuDNN can, run as convolution + Elemwise elsewhere), and algorithms chosen by measuring
// (Handle::cuda_benchmark_kernel, cached per handle and case). The CudaConv suite runs on both
// paths: the graph API's plans where cuDNN finalizes one (conv_graph.h) and the legacy API alone
// (NEOMEG_CUDNN_LEGACY's switch).
#include <cmath>
#include <optional>

#include "cuda/cuda_test.h"
#include "naive/convolution.h"
#include "neomeg/dnn/operators/convolution.h"
#include "src/cuda/conv_graph.h"
#include "src/cuda/handle.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Case = ConvCase;

std::vector<Case> cases() {
    return {
            {{1, 1, 1, 1}, {1, 1, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{2, 3, 7, 7}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            {{2, 3, 7, 7}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1}, 1, true)},
            {{3, 2, 11, 13}, {7, 2, 3, 2}, conv_param({2, 3}, {1, 0}, {1, 1})},
            {{2, 3, 9, 8}, {4, 3, 3, 3}, conv_param({1, 2}, {2, 1}, {2, 3})},
            {{1, 6, 7, 5}, {4, 3, 3, 2}, conv_param({2, 1}, {1, 0}, {1, 2}, 2)},
            {{2, 8, 9, 9}, {8, 1, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1}, 8)},  // depthwise
            {{5, 16, 13, 13}, {32, 16, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
            {{4, 16, 14, 14}, {24, 16, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1})},
            {{3, 4, 17}, {6, 2, 3}, conv_param({2}, {1}, {2}, 2)},                            // 1-D
            {{2, 3, 5, 6, 7}, {4, 3, 3, 2, 3}, conv_param({1, 2, 1}, {1, 0, 1}, {1, 1, 2})},  // 3-D
    };
}

const DType kFloats[] = {dtype::Float32, dtype::Float16, dtype::BFloat16};

// Sets a process-wide switch for a scope and restores its value after.
class ScopedSwitch {
public:
    ScopedSwitch(bool (*get)(), void (*set)(bool), bool on) : m_set(set), m_was(get()) { set(on); }
    ~ScopedSwitch() { m_set(m_was); }
    ScopedSwitch(const ScopedSwitch&) = delete;
    ScopedSwitch& operator=(const ScopedSwitch&) = delete;

private:
    void (*m_set)(bool);
    bool m_was;
};

// Measured algorithm choice on.
struct BenchmarkKernels : ScopedSwitch {
    BenchmarkKernels()
        : ScopedSwitch(&Handle::cuda_benchmark_kernel, &Handle::set_cuda_benchmark_kernel, true) {}
};

// TF32 on.
struct AllowTf32 : ScopedSwitch {
    AllowTf32() : ScopedSwitch(&Handle::cuda_allow_tf32, &Handle::set_cuda_allow_tf32, true) {}
};

// The graph API's plans tried first (on) or the legacy API alone (off).
struct GraphPath : ScopedSwitch {
    explicit GraphPath(bool on)
        : ScopedSwitch(&cuda::conv_graph_enabled, &cuda::set_conv_graph_enabled, on) {}
};

enum class ConvPath { Graph, Legacy };

// For the test names gtest and ctest print ("GetParam() = graph").
void PrintTo(ConvPath p, std::ostream* os) {
    *os << (p == ConvPath::Graph ? "graph" : "legacy");
}

// The convolution tests on each path. On the graph path a case runs the graph plan where cuDNN
// finalizes one and the legacy plan otherwise, so its kernel is "cudnn..." either way
// (ConvGraphRunsCommonCases holds the graph path to the common cases); on the legacy path it is
// always a legacy algorithm.
class CudaConv : public Cuda, public ::testing::WithParamInterface<ConvPath> {
protected:
    void SetUp() override {
        Cuda::SetUp();
        m_path.emplace(GetParam() == ConvPath::Graph);
    }
    void TearDown() override {
        m_path.reset();
        Cuda::TearDown();
    }
    const char* kernel() const { return GetParam() == ConvPath::Graph ? "cudnn" : "cudnn:"; }

private:
    std::optional<GraphPath> m_path;
};

}  // namespace

INSTANTIATE_TEST_SUITE_P(Paths, CudaConv, ::testing::Values(ConvPath::Graph, ConvPath::Legacy),
                         [](const auto& p) {
                             return p.param == ConvPath::Graph ? "graph" : "legacy";
                         });

TEST_P(CudaConv, ForwardMatchesNaive) {
    for (DType dt : kFloats)
        for (const Case& k : cases()) {
            CudaChecker<ConvolutionForward> c(handle.get());
            c.set_param(k.p).set_dtype(0, dt).set_dtype(1, dt);
            c.expect_kernel(kernel()).execs({k.src, k.filter});
            c.expect_kernel("").set_noncontiguous(true).execs({k.src, k.filter});
        }
}

TEST_P(CudaConv, BackwardDataMatchesNaive) {
    for (DType dt : kFloats)
        for (const Case& k : cases()) {
            CudaChecker<ConvolutionBackwardData> c(handle.get());
            c.set_param(k.p).set_dtype(0, dt).set_dtype(1, dt).set_output_shapes({k.src});
            c.expect_kernel(kernel()).execs({k.filter, conv_dst_shape(k)});
            c.expect_kernel("").set_noncontiguous(true).execs({k.filter, conv_dst_shape(k)});
        }
}

TEST_P(CudaConv, BackwardFilterMatchesNaive) {
    for (DType dt : kFloats)
        for (const Case& k : cases()) {
            CudaChecker<ConvolutionBackwardFilter> c(handle.get());
            c.set_param(k.p).set_dtype(0, dt).set_dtype(1, dt).set_output_shapes({k.filter});
            // Sums over batch and space: bfloat16's 8-bit mantissa needs more room.
            if (dt == dtype::BFloat16)
                c.set_epsilon(5e-2);
            c.expect_kernel(kernel()).execs({k.src, conv_dst_shape(k)});
            c.expect_kernel("").set_noncontiguous(true).execs({k.src, conv_dst_shape(k)});
        }
}

TEST_P(CudaConv, Tf32MatchesNaiveWithinTf32Rounding) {
    // TF32 keeps 10 bits of mantissa: each product is off by up to 2^-11 relative, and the
    // filter gradient sums up to 845 of them.
    AllowTf32 on;
    for (const Case& k : cases()) {
        CudaChecker<ConvolutionForward> f(handle.get());
        f.set_param(k.p).set_epsilon(2e-2).expect_kernel(kernel()).execs({k.src, k.filter});
        CudaChecker<ConvolutionBackwardData> d(handle.get());
        d.set_param(k.p).set_epsilon(2e-2).set_output_shapes({k.src}).expect_kernel(kernel());
        d.execs({k.filter, conv_dst_shape(k)});
        CudaChecker<ConvolutionBackwardFilter> w(handle.get());
        w.set_param(k.p).set_epsilon(2e-2).set_output_shapes({k.filter}).expect_kernel(kernel());
        w.execs({k.src, conv_dst_shape(k)});
    }
}

TEST_P(CudaConv, BackwardDataPresetLargerInput) {
    Case k{{2, 3, 10, 10}, {4, 3, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1})};
    for (TensorShape grad : {TensorShape{2, 3, 9, 9}, TensorShape{2, 3, 10, 10}}) {
        CudaChecker<ConvolutionBackwardData> c(handle.get());
        c.set_param(k.p).set_output_shapes({grad}).expect_kernel(kernel());
        c.execs({k.filter, conv_dst_shape(k)});
    }
}

TEST_P(CudaConv, NhwcViews) {
    Case k{{2, 4, 6, 7}, {5, 4, 3, 3}, conv_param({1, 2}, {1, 1}, {1, 1})};
    TensorLayout src = TensorLayout({2, 6, 7, 4}, dtype::Float32).dimshuffle({0, 3, 1, 2});
    TensorLayout filter({5, 4, 3, 3}, dtype::Float32);
    CudaChecker<ConvolutionForward> fwd(handle.get());
    fwd.set_param(k.p).expect_kernel("cudnn").exec_layouts({src, filter});
    TensorShape dst = conv_dst_shape(k);
    TensorLayout dst_nhwc =
            TensorLayout({dst[0], dst[2], dst[3], dst[1]}, dtype::Float32).dimshuffle({0, 3, 1, 2});
    CudaChecker<ConvolutionBackwardData> data(handle.get());
    data.set_param(k.p).set_output_shapes({k.src}).exec_layouts({filter, dst_nhwc});
    CudaChecker<ConvolutionBackwardFilter> filt(handle.get());
    filt.set_param(k.p).set_output_shapes({k.filter}).exec_layouts({src, dst_nhwc});
    // A filter broadcast over output channels: cuDNN cannot read it, the staged kernel can.
    fwd.expect_kernel("naive(staged)")
            .exec_layouts({TensorLayout(k.src, dtype::Float32),
                           TensorLayout(k.filter, {0, 9, 3, 1}, dtype::Float32)});
}

TEST_F(Cuda, ConvBiasEveryNonlinearity) {
    using NL = param::ConvBias::NonlineMode;
    for (DType dt : kFloats)
        for (NL nl : {NL::IDENTITY, NL::RELU, NL::SIGMOID, NL::H_SWISH}) {
            param::ConvBias p;
            p.nonlineMode = nl;
            p.stride = {2, 1};
            p.padding = {1, 1};
            p.group = 2;
            CudaChecker<ConvBias> c(handle.get());
            c.set_param(p).expect_kernel("cudnn");
            for (size_t i = 0; i < 4; ++i)
                c.set_dtype(i, dt);
            // Per-channel bias and a residual z, then bias only (z absent), then neither.
            c.execs({{2, 4, 7, 6}, {6, 2, 3, 3}, {1, 6, 1, 1}, {2, 6, 4, 6}});
            c.execs({{2, 4, 7, 6}, {6, 2, 3, 3}, {1, 6, 1, 1}, {}});
            c.execs({{2, 4, 7, 6}, {6, 2, 3, 3}, {}, {}});
        }
}

TEST_F(Cuda, ConvBiasFusesIdentityAndRelu) {
    using NL = param::ConvBias::NonlineMode;
    param::ConvBias p;
    p.padding = {1, 1};
    TensorShape src{2, 8, 9, 9}, filter{16, 8, 3, 3}, channel{1, 16, 1, 1}, dst{2, 16, 9, 9};
    for (NL nl : {NL::IDENTITY, NL::RELU}) {
        p.nonlineMode = nl;
        CudaChecker<ConvBias> c(handle.get());
        c.set_param(p).expect_kernel("cudnn(fused)");
        c.execs({src, filter, channel, {}});
        c.execs({src, filter, channel, dst});
        c.execs({src, filter, {}, dst});  // a zero bias in the workspace
    }
    // ReLU alone is fused (zero bias); identity alone is a plain convolution.
    p.nonlineMode = NL::RELU;
    CudaChecker<ConvBias> relu(handle.get());
    relu.set_param(p).expect_kernel("cudnn(fused)").execs({src, filter, {}, {}});
    p.nonlineMode = NL::IDENTITY;
    CudaChecker<ConvBias> plain(handle.get());
    plain.set_param(p).expect_kernel("cudnn").execs({src, filter, {}, {}});
}

TEST_F(Cuda, ConvBiasUnfusedWhereCudnnCannotFuse) {
    using NL = param::ConvBias::NonlineMode;
    param::ConvBias p;
    p.padding = {1, 1};
    TensorShape src{2, 8, 9, 9}, filter{16, 8, 3, 3}, channel{1, 16, 1, 1}, dst{2, 16, 9, 9};
    // Sigmoid and h-swish have no cuDNN epilogue.
    for (NL nl : {NL::SIGMOID, NL::H_SWISH}) {
        p.nonlineMode = nl;
        CudaChecker<ConvBias> c(handle.get());
        c.set_param(p).expect_kernel("cudnn+elemwise");
        c.execs({src, filter, channel, dst});
        c.execs({src, filter, {}, {}});
    }
    // A bias that is not one value per channel: full, or per position.
    p.nonlineMode = NL::RELU;
    CudaChecker<ConvBias> c(handle.get());
    c.set_param(p).expect_kernel("cudnn+elemwise");
    c.execs({src, filter, dst, {}});
    c.execs({src, filter, {1, 16, 9, 9}, {}});
    c.execs({src, filter, {1, 1, 9, 1}, dst});
}

TEST_F(Cuda, ConvBiasFusedHalfPrecisionAndGroups) {
    // Values only: whether cuDNN fuses these is its choice, the answer must be naive's either way.
    using NL = param::ConvBias::NonlineMode;
    for (DType dt : kFloats)
        for (NL nl : {NL::IDENTITY, NL::RELU}) {
            param::ConvBias p;
            p.nonlineMode = nl;
            p.stride = {2, 1};
            p.padding = {1, 0};
            p.group = 2;
            CudaChecker<ConvBias> c(handle.get());
            c.set_param(p).expect_kernel("cudnn");
            for (size_t i = 0; i < 4; ++i)
                c.set_dtype(i, dt);
            c.execs({{3, 4, 8, 7}, {6, 2, 3, 3}, {1, 6, 1, 1}, {3, 6, 4, 5}});
            c.execs({{3, 4, 8, 7}, {6, 2, 3, 3}, {1, 6, 1, 1}, {}});
            c.execs({{3, 4, 8, 7}, {6, 2, 3, 3}, {}, {3, 6, 4, 5}});
            c.set_noncontiguous(true).expect_kernel("");
            c.execs({{3, 4, 8, 7}, {6, 2, 3, 3}, {1, 6, 1, 1}, {3, 6, 4, 5}});
        }
    // 1-D and 3-D convolutions with a per-channel bias.
    param::ConvBias p1;
    p1.nonlineMode = NL::RELU;
    p1.stride = {2};
    p1.padding = {1};
    p1.dilation = {1};
    CudaChecker<ConvBias>(handle.get()).set_param(p1).execs({{2, 3, 11}, {4, 3, 3}, {1, 4, 1}, {}});
    param::ConvBias p3;
    p3.nonlineMode = NL::RELU;
    p3.stride = {1, 1, 1};
    p3.padding = {1, 1, 1};
    p3.dilation = {1, 1, 1};
    CudaChecker<ConvBias>(handle.get())
            .set_param(p3)
            .execs({{2, 3, 4, 5, 6}, {4, 3, 3, 3, 3}, {1, 4, 1, 1, 1}, {2, 4, 4, 5, 6}});
}

TEST_P(CudaConv, MeasuredAlgorithmsMatchNaive) {
    // On the graph path measuring times the graph API's plans against the legacy algorithms, and
    // either may win.
    BenchmarkKernels on;
    std::vector<std::string> measured{"cudnn(measured)"};
    if (GetParam() == ConvPath::Graph)
        measured.push_back("cudnn-graph(measured):engine");
    for (DType dt : {dtype::Float32, dtype::Float16})
        for (const Case& k : cases()) {
            CudaChecker<ConvolutionForward> f(handle.get());
            f.set_param(k.p).set_dtype(0, dt).set_dtype(1, dt);
            f.expect_kernel_any(measured).execs({k.src, k.filter});
            CudaChecker<ConvolutionBackwardData> d(handle.get());
            d.set_param(k.p).set_dtype(0, dt).set_dtype(1, dt).set_output_shapes({k.src});
            d.expect_kernel_any(measured).execs({k.filter, conv_dst_shape(k)});
            CudaChecker<ConvolutionBackwardFilter> w(handle.get());
            w.set_param(k.p).set_dtype(0, dt).set_dtype(1, dt).set_output_shapes({k.filter});
            // Timing may pick a half-precision filter-gradient algorithm that keeps partial sums
            // of its N*H*W reduction in half: on an H200 one was 5 ulps (0.4%) off naive after
            // 845 terms. ConvolutionBackwardFilterMatchesNaive holds the heuristic's choice to
            // the default half tolerance.
            if (dt == dtype::Float16)
                w.set_epsilon(1e-2);
            w.expect_kernel_any(measured).execs({k.src, conv_dst_shape(k)});
        }
    param::ConvBias p;
    p.nonlineMode = param::ConvBias::NonlineMode::RELU;
    p.padding = {1, 1};
    CudaChecker<ConvBias>(handle.get())
            .set_param(p)
            .expect_kernel("cudnn")
            .execs({{2, 8, 9, 9}, {16, 8, 3, 3}, {1, 16, 1, 1}, {}});
}

TEST_F(Cuda, MeasuredAlgorithmIsCachedPerHandleAndCase) {
    auto& cache = static_cast<cuda::HandleImpl*>(handle.get())->conv_algo_cache();
    Case k{{2, 3, 7, 7}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})};
    // Heuristics measure nothing.
    CudaChecker<ConvolutionForward>(handle.get()).set_param(k.p).execs({k.src, k.filter});
    EXPECT_EQ(cache.size(), 0u);
    BenchmarkKernels on;
    CudaChecker<ConvolutionForward>(handle.get()).set_param(k.p).execs({k.src, k.filter});
    EXPECT_EQ(cache.size(), 1u);
    // Another operator object on the same case measures nothing more.
    CudaChecker<ConvolutionForward>(handle.get())
            .set_param(k.p)
            .expect_kernel_any({"cudnn(measured)", "cudnn-graph(measured):engine"})
            .execs({k.src, k.filter});
    EXPECT_EQ(cache.size(), 1u);
    // Another shape, another direction, another param, another dtype: one entry each.
    CudaChecker<ConvolutionForward>(handle.get()).set_param(k.p).execs({{3, 3, 7, 7}, k.filter});
    CudaChecker<ConvolutionBackwardData>(handle.get())
            .set_param(k.p)
            .set_output_shapes({k.src})
            .execs({k.filter, conv_dst_shape(k)});
    auto strided = k.p;
    strided.stride = {2, 2};
    CudaChecker<ConvolutionForward>(handle.get()).set_param(strided).execs({k.src, k.filter});
    CudaChecker<ConvolutionForward>(handle.get())
            .set_param(k.p)
            .set_dtype(0, dtype::Float16)
            .set_dtype(1, dtype::Float16)
            .execs({k.src, k.filter});
    EXPECT_EQ(cache.size(), 5u);
}

TEST_F(Cuda, ConvGraphRunsCommonCases) {
    // 2-D convolutions of every direction in float32 (TF32 off and on) and float16: cuDNN 9
    // finalizes a graph plan for each on any GPU it supports.
    GraphPath graph(true);
    const Case common[] = {
            {{2, 3, 7, 7}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})},
            {{4, 16, 14, 14}, {24, 16, 3, 3}, conv_param({2, 2}, {1, 1}, {1, 1})},
            {{5, 16, 13, 13}, {32, 16, 1, 1}, conv_param({1, 1}, {0, 0}, {1, 1})},
    };
    for (int tf32 = 0; tf32 < 2; ++tf32) {
        std::optional<AllowTf32> on;
        if (tf32)
            on.emplace();
        for (DType dt : {dtype::Float32, dtype::Float16}) {
            if (tf32 && dt != dtype::Float32)
                continue;
            double eps = tf32 ? 2e-2 : dt == dtype::Float16 ? 1e-2 : 1e-4;
            for (const Case& k : common) {
                CudaChecker<ConvolutionForward> f(handle.get());
                f.set_param(k.p).set_dtype(0, dt).set_dtype(1, dt).set_epsilon(eps);
                f.expect_kernel("cudnn-graph:engine").execs({k.src, k.filter});
                CudaChecker<ConvolutionBackwardData> d(handle.get());
                d.set_param(k.p).set_dtype(0, dt).set_dtype(1, dt).set_epsilon(eps);
                d.set_output_shapes({k.src}).expect_kernel("cudnn-graph:engine");
                d.execs({k.filter, conv_dst_shape(k)});
                CudaChecker<ConvolutionBackwardFilter> w(handle.get());
                w.set_param(k.p).set_dtype(0, dt).set_dtype(1, dt).set_epsilon(eps);
                w.set_output_shapes({k.filter}).expect_kernel("cudnn-graph:engine");
                w.execs({k.src, conv_dst_shape(k)});
            }
        }
    }
}

TEST_F(Cuda, ConvGraphPlanIsCachedPerHandleAndCase) {
    GraphPath graph(true);
    auto& cache = static_cast<cuda::HandleImpl*>(handle.get())->conv_graph_cache();
    Case k{{2, 3, 7, 7}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})};
    CudaChecker<ConvolutionForward>(handle.get()).set_param(k.p).execs({k.src, k.filter});
    EXPECT_EQ(cache.size(), 1u);
    // Another operator object on the same case finds the plan.
    CudaChecker<ConvolutionForward>(handle.get()).set_param(k.p).execs({k.src, k.filter});
    EXPECT_EQ(cache.size(), 1u);
    // Another batch, another direction, TF32: one more each.
    CudaChecker<ConvolutionForward>(handle.get()).set_param(k.p).execs({{3, 3, 7, 7}, k.filter});
    CudaChecker<ConvolutionBackwardData>(handle.get())
            .set_param(k.p)
            .set_output_shapes({k.src})
            .execs({k.filter, conv_dst_shape(k)});
    {
        AllowTf32 on;
        CudaChecker<ConvolutionForward>(handle.get())
                .set_param(k.p)
                .set_epsilon(2e-2)
                .execs({k.src, k.filter});
    }
    EXPECT_EQ(cache.size(), 4u);
    // The legacy path builds no graph plan; measuring times candidates of its own (cached with
    // the measured choice, conv_algo_cache.h).
    {
        GraphPath legacy(false);
        CudaChecker<ConvolutionForward>(handle.get())
                .set_param(k.p)
                .expect_kernel("cudnn:")
                .execs({{4, 3, 7, 7}, k.filter});
    }
    {
        BenchmarkKernels measured;
        CudaChecker<ConvolutionForward>(handle.get())
                .set_param(k.p)
                .expect_kernel_any({"cudnn(measured)", "cudnn-graph(measured):engine"})
                .execs({{5, 3, 7, 7}, k.filter});
    }
    EXPECT_EQ(cache.size(), 4u);
}

namespace {

// A device copy of h placed `offset` bytes into `buf` (which must be large enough).
TensorND place(const DeviceTensor& buf, const HostTensor& h, size_t offset) {
    auto* p = static_cast<std::byte*>(buf.nd().raw_ptr()) + offset;
    NM_TEST_CUDA_CHECK(
            cudaMemcpy(p, h.nd().raw_ptr(), h.layout().span_bytes(), cudaMemcpyHostToDevice));
    return {p, h.layout()};
}

HostTensor ramp(const TensorShape& shape, double scale) {
    std::vector<double> v(shape.total_nr_elems());
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = std::sin(0.37 * static_cast<double>(i)) * scale;
    return HostTensor::from(shape, v);
}

}  // namespace

TEST_F(Cuda, ConvGraphMisalignedPointersRunTheLegacyPlan) {
    // The graph plan was described for 16-byte aligned tensors; a view 4 bytes into a block runs
    // the legacy plan of the same case, with the same answer.
    GraphPath graph(true);
    Case k{{2, 3, 7, 7}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})};
    HostTensor x = ramp(k.src, 1), w = ramp(k.filter, 0.5);
    TensorShape dst = conv_dst_shape(k);
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<ConvolutionForward>();
    ref->param() = k.p;
    HostTensor want = run_op(*ref, {x, w}, {dst})[0];
    auto op = handle->create_operator<ConvolutionForward>();
    op->param() = k.p;
    std::vector<TensorLayout> in_layouts{x.layout(), w.layout()},
            out_layouts{TensorLayout(dst, dtype::Float32)};
    size_t ws = op->get_workspace_in_bytes(in_layouts, out_layouts);
    DeviceTensor bx(TensorLayout({x.layout().total_nr_elems() + 4}, dtype::Float32)),
            bw(TensorLayout({w.layout().total_nr_elems() + 4}, dtype::Float32)),
            by(TensorLayout({dst.total_nr_elems() + 4}, dtype::Float32)),
            bws(TensorLayout({ws + 256}, dtype::Uint8));
    for (size_t offset : {0, 4}) {
        std::vector<TensorND> in{place(bx, x, offset), place(bw, w, offset)};
        std::vector<TensorND> out{
                {static_cast<std::byte*>(by.nd().raw_ptr()) + offset, out_layouts[0]}};
        op->exec(in, out, {static_cast<std::byte*>(bws.nd().raw_ptr()), ws});
        NM_TEST_CUDA_CHECK(cudaDeviceSynchronize());
        HostTensor got(out_layouts[0]);
        NM_TEST_CUDA_CHECK(cudaMemcpy(got.nd().raw_ptr(), out[0].raw_ptr(),
                                      out_layouts[0].span_bytes(), cudaMemcpyDeviceToHost));
        EXPECT_TRUE(tensors_near(got, want, 1e-4)) << "offset " << offset;
        EXPECT_TRUE(last_kernel(*op).starts_with(offset ? "cudnn:" : "cudnn-graph:engine"))
                << "offset " << offset << " ran " << last_kernel(*op);
    }
}

TEST_F(Cuda, DebugSwitchNamesTheConvEngine) {
    const char* env = std::getenv("NEOMEG_DEBUG");
    if (!env || std::string(env) != "1")
        GTEST_SKIP() << "runs under NEOMEG_DEBUG=1 (ctest dnn.cuda.debug)";
    Case k{{2, 3, 7, 7}, {5, 3, 3, 3}, conv_param({1, 1}, {1, 1}, {1, 1})};
    testing::internal::CaptureStderr();
    {
        GraphPath graph(true);
        CudaChecker<ConvolutionForward>(handle.get()).set_param(k.p).execs({k.src, k.filter});
    }
    {
        GraphPath legacy(false);
        CudaChecker<ConvolutionForward>(handle.get()).set_param(k.p).execs({k.src, k.filter});
    }
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("neomeg cuda: ConvolutionForward"), std::string::npos) << err;
    EXPECT_NE(err.find("kernel cudnn-graph:engine"), std::string::npos) << err;
    EXPECT_NE(err.find("kernel cudnn:"), std::string::npos) << err;
}
