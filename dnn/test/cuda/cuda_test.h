// Shared by the CUDA suites: a fixture that skips with one line where no GPU is present (every
// CUDA test compiles and links in CI all the same), device copies of HostTensors, and
// CudaChecker, which runs an operator on the CUDA handle with device tensors and compares it with
// the naive kernel on contiguous host copies of the same random inputs (Checker's settings).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "common/checker_settings.h"
#include "src/x86/kernel_report.h"

namespace neomeg::dnn::test {

#define NM_TEST_CUDA_CHECK(expr)                                                               \
    do {                                                                                       \
        cudaError_t nm_err_ = (expr);                                                          \
        if (nm_err_ != cudaSuccess)                                                            \
            throw std::runtime_error(std::string(#expr) + ": " + cudaGetErrorString(nm_err_)); \
    } while (0)

class Cuda : public ::testing::Test {
protected:
    void SetUp() override {
        if (!Handle::cuda_available())
            GTEST_SKIP() << "no CUDA device";
        NM_TEST_CUDA_CHECK(cudaSetDevice(0));
        // A stream of its own, so that the tests see the handle honour it.
        NM_TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        handle = Handle::make_cuda(0, stream);
    }
    void TearDown() override {
        handle.reset();
        if (stream)
            cudaStreamDestroy(stream);
    }
    cudaStream_t stream = nullptr;
    std::unique_ptr<Handle> handle;
};

// Device memory covering a layout's span, addressed like a HostTensor of the same layout.
class DeviceTensor {
public:
    explicit DeviceTensor(const TensorLayout& layout) : m_layout(layout) {
        auto [lo, hi] = layout.span_elems();
        m_lo_bytes = static_cast<ptrdiff_t>(layout.dtype.size()) * lo;
        m_bytes = layout.dtype.size(static_cast<size_t>(hi - lo));
        NM_TEST_CUDA_CHECK(cudaMalloc(&m_base, std::max<size_t>(m_bytes, 1)));
        NM_TEST_CUDA_CHECK(cudaMemset(m_base, 0, std::max<size_t>(m_bytes, 1)));
        // The legacy stream's memset is not ordered with the handle's non-blocking stream.
        NM_TEST_CUDA_CHECK(cudaDeviceSynchronize());
    }
    // A device copy of a host tensor (its whole span, gaps included).
    static DeviceTensor from(const HostTensor& h) {
        DeviceTensor d(h.layout());
        if (d.m_bytes)
            NM_TEST_CUDA_CHECK(cudaMemcpy(d.m_base,
                                          static_cast<std::byte*>(h.nd().raw_ptr()) + d.m_lo_bytes,
                                          d.m_bytes, cudaMemcpyHostToDevice));
        // A pageable copy may still be in flight when cudaMemcpy returns.
        NM_TEST_CUDA_CHECK(cudaDeviceSynchronize());
        return d;
    }
    DeviceTensor(DeviceTensor&& o) noexcept
        : m_layout(o.m_layout), m_base(o.m_base), m_lo_bytes(o.m_lo_bytes), m_bytes(o.m_bytes) {
        o.m_base = nullptr;
    }
    DeviceTensor(const DeviceTensor&) = delete;
    DeviceTensor& operator=(const DeviceTensor&) = delete;
    DeviceTensor& operator=(DeviceTensor&&) = delete;
    ~DeviceTensor() {
        if (m_base)
            cudaFree(m_base);
    }

    TensorND nd() const { return {static_cast<std::byte*>(m_base) - m_lo_bytes, m_layout}; }
    // A host copy (after the device is idle).
    HostTensor to_host() const {
        NM_TEST_CUDA_CHECK(cudaDeviceSynchronize());
        HostTensor h(m_layout);
        if (m_bytes)
            NM_TEST_CUDA_CHECK(cudaMemcpy(static_cast<std::byte*>(h.nd().raw_ptr()) + m_lo_bytes,
                                          m_base, m_bytes, cudaMemcpyDeviceToHost));
        return h;
    }

private:
    TensorLayout m_layout;
    void* m_base = nullptr;
    ptrdiff_t m_lo_bytes = 0;
    size_t m_bytes = 0;
};

// "cublas", "cudnn", "cudnn:<algorithm>", "cuda", "naive(staged)": what a CUDA operator ran last.
inline std::string last_kernel(const OperatorBase& op) {
    auto* report = dynamic_cast<const x86::KernelReport*>(&op);
    return report ? report->last_kernel() : "no kernel report";
}

// Runs op on device copies of `inputs`, writing outputs of the given layouts; returns the host
// copies of the outputs.
std::vector<HostTensor> run_on_device(OperatorBase& op, const std::vector<HostTensor>& inputs,
                                      const std::vector<TensorLayout>& out_layouts);

// As Checker (the same settings, common/checker_settings.h), with the CUDA handle as the target:
// device copies of the inputs, outputs in padded layouts where set_noncontiguous, and
// expect_kernel to say which kernel must have run.
template <class Op>
class CudaChecker : public CheckerSettings<CudaChecker<Op>, Op> {
public:
    explicit CudaChecker(Handle* cuda, uint32_t seed = 42)
        : CheckerSettings<CudaChecker<Op>, Op>(seed), m_cuda(cuda) {}

    // The kernel every run must report (a prefix: "cudnn" matches "cudnn:..."); empty: any.
    CudaChecker& expect_kernel(std::string prefix) {
        m_expect_kernel.clear();
        if (!prefix.empty())
            m_expect_kernel.push_back(std::move(prefix));
        return *this;
    }
    // Any one of these prefixes.
    CudaChecker& expect_kernel_any(std::vector<std::string> prefixes) {
        m_expect_kernel = std::move(prefixes);
        return *this;
    }

    CudaChecker& exec_layouts(const std::vector<TensorLayout>& layouts) {
        std::vector<HostTensor> target_in, ref_in;
        this->make_inputs(layouts, target_in, ref_in);
        auto ref_op = this->reference_op();
        auto want = run_op(*ref_op, ref_in, this->m_out_shapes);
        auto op = m_cuda->create_operator<Op>();
        op->param() = this->m_param;
        std::vector<TensorLayout> out_layouts;
        for (auto& w : want)
            out_layouts.push_back(this->m_noncontig ? padded_layout(w.layout()) : w.layout());
        auto got = run_on_device(*op, target_in, out_layouts);
        EXPECT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size() && i < want.size(); ++i)
            EXPECT_TRUE(tensors_near(got[i], want[i], this->epsilon_for(want[i].dtype())))
                    << "output " << i << " of " << op->param_str() << " on cuda ("
                    << last_kernel(*op) << "), inputs " << this->describe(layouts);
        if (!m_expect_kernel.empty()) {
            std::string ran = last_kernel(*op), expected;
            bool found = false;
            for (const auto& k : m_expect_kernel) {
                found = found || ran.starts_with(k);
                expected += (expected.empty() ? "" : " or ") + k;
            }
            EXPECT_TRUE(found) << op->param_str() << " ran " << ran << ", expected " << expected
                               << "; inputs " << this->describe(layouts);
        }
        return *this;
    }

private:
    Handle* m_cuda;
    std::vector<std::string> m_expect_kernel;
};

}  // namespace neomeg::dnn::test
