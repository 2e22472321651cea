// GPU comp nodes. The CPU-side tests always run (names, the "no GPU" answers, copies through
// the CPU path); the device tests run where a CUDA device is present and skip otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "neomeg/core/comp_node.h"
#include "neomeg/core/cuda_env.h"
#include "neomeg/dnn/errors.h"
#include "neomeg/dnn/handle.h"

using namespace neomeg;

namespace {

#define SKIP_WITHOUT_GPU()                    \
    do {                                      \
        if (!is_cuda_available())             \
            GTEST_SKIP() << "no CUDA device"; \
    } while (0)

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<uint8_t>(i * 131 + seed + (i >> 16));
    return v;
}

}  // namespace

TEST(CudaEnv, NamesOfGpuNodesParseBeforeTheDeviceIsLookedUp) {
    // Malformed names are invalid_argument on every machine, with or without a GPU.
    for (const char* bad : {"gpu", "gpuA", "gpu0:", "gpu0:x", "gpu-1", "gpu0:-1", "gpu0:1:2"}) {
        EXPECT_THROW(CompNode::load(bad), std::invalid_argument) << bad;
    }
    if (is_cuda_available())
        return;
    for (const char* name : {"gpu0", "gpu1:3", "gpux", "gpux:2"}) {
        try {
            CompNode::load(name);
            FAIL() << name;
        } catch (const std::runtime_error& e) {
            std::string msg = e.what();
            EXPECT_NE(msg.find("out of valid range [0, 0)"), std::string::npos) << msg;
            EXPECT_NE(msg.find(cuda::unavailable_reason()), std::string::npos) << msg;
        }
    }
}

TEST(CudaEnv, NoGpuAnswers) {
    EXPECT_EQ(is_cuda_available(), get_cuda_device_count() > 0);
    EXPECT_EQ(get_cuda_device_count(), cuda::device_count());
    if (!cuda::built_with_cuda()) {
        EXPECT_EQ(cuda::build_version(), -1);
        EXPECT_EQ(cuda::cudnn_build_version(), -1);
        EXPECT_EQ(cuda::driver_version(), -1);
    } else {
        EXPECT_GE(cuda::build_version(), 12000);  // CUDA 12 or newer
        EXPECT_EQ(cuda::build_version() % 10, 0);
        EXPECT_GE(cuda::cudnn_build_version(), 90000);  // cuDNN 9 or newer
        EXPECT_GE(cuda::driver_version(), 0);
        // The runtime is the toolkit's shared library: the same major version as the headers.
        EXPECT_EQ(cuda::runtime_version() / 1000, cuda::build_version() / 1000);
        EXPECT_NO_THROW(cuda::check_library_versions());
    }
    if (is_cuda_available()) {
        EXPECT_EQ(cuda::unavailable_reason(), "");
        return;
    }
    EXPECT_FALSE(cuda::unavailable_reason().empty());
    if (cuda::built_with_cuda() && cuda::driver_version() == 0) {
        EXPECT_EQ(cuda::unavailable_reason(), "no CUDA driver (libcuda.so) was found");
    }
    EXPECT_THROW(cuda::device_properties(0), std::runtime_error);
    EXPECT_THROW(cuda::device_properties(-1), std::runtime_error);
    // Without a GPU the default device is the CPU.
    EXPECT_EQ(CompNode::load("xpux").to_string(), "cpu0");
}

TEST(CudaEnv, VersionStrings) {
    EXPECT_EQ(cuda::cuda_version_string(13000), "13.0");
    EXPECT_EQ(cuda::cuda_version_string(12080), "12.8");
    EXPECT_EQ(cuda::cuda_version_string(0), "none");
    EXPECT_EQ(cuda::cudnn_version_string(91900), "9.19.0");
    EXPECT_EQ(cuda::cudnn_version_string(90102), "9.1.2");
    EXPECT_EQ(cuda::cudnn_version_string(-1), "none");
}

TEST(CudaEnv, CpuNodesCopyAndWaitWithoutAQueue) {
    auto a = CompNode::load("cpu0"), b = CompNode::load("cpu3:1");
    EXPECT_EQ(a.stream_handle(), nullptr);
    auto src = pattern(4099, 7);
    std::vector<uint8_t> mid(src.size()), out(src.size());
    a.copy_from_host(mid.data(), src.data(), src.size());
    CompNode::copy(b, out.data(), a, mid.data(), src.size());
    EXPECT_EQ(out, src);
    std::vector<uint8_t> back(src.size());
    b.copy_to_host(back.data(), out.data(), out.size());
    EXPECT_EQ(back, src);
    b.wait_for(a);  // nothing is pending on a CPU node
    a.sync();
    CompNode::sync_all();
    auto [total, free] = a.mem_status();
    EXPECT_GT(total, 0u);
    EXPECT_GT(free, 0u);
    EXPECT_LE(free, total);
}

TEST(CudaEnv, KernelsMissingIsNotSupported) {
    if (dnn::Handle::cuda_available())
        GTEST_SKIP() << "CUDA kernels are built";
    EXPECT_THROW(dnn::Handle::make_cuda(0, nullptr), dnn::NotSupportedError);
}

// ---- on a GPU ----

TEST(CudaCompNode, NodesAreStreamsOfTheirDevice) {
    SKIP_WITHOUT_GPU();
    auto g0 = CompNode::load("gpu0"), g01 = CompNode::load("gpu0:1");
    EXPECT_EQ(g0, CompNode::load("gpux"));
    EXPECT_EQ(g01, CompNode::load("gpux:1"));
    EXPECT_EQ(CompNode::load("xpux"), g0);
    EXPECT_EQ(g0.device_type(), CompNode::DeviceType::CUDA);
    EXPECT_EQ(g01.to_string(), "gpu0:1");
    EXPECT_EQ(g01.stream(), 1);
    EXPECT_NE(g0.stream_handle(), nullptr);
    EXPECT_NE(g0.stream_handle(), g01.stream_handle());
    int n = get_cuda_device_count();
    EXPECT_THROW(CompNode::load("gpu" + std::to_string(n)), std::runtime_error);
    auto prop = cuda::device_properties(0);
    EXPECT_GE(prop.major, 7);
    EXPECT_FALSE(prop.name.empty());
    auto [total, free] = g0.mem_status();
    EXPECT_LE(total > prop.total_memory ? total - prop.total_memory : prop.total_memory - total,
              prop.total_memory / 100);  // cudaMemGetInfo and the properties, within 1%
    EXPECT_LE(free, total);
}

TEST(CudaCompNode, HostDeviceRoundTripsEverySize) {
    SKIP_WITHOUT_GPU();
    auto g = CompNode::load("gpu0");
    // 0, small (pageable read), a read through the two staging blocks, and more than one chunk
    // each way (16 MiB chunks).
    for (size_t n : {size_t(0), size_t(1), size_t(4097), size_t(3) << 20, (size_t(40) << 20) + 5}) {
        auto src = pattern(n, static_cast<uint8_t>(n));
        void* d = g.alloc(n);
        g.copy_from_host(d, src.data(), n);
        std::vector<uint8_t> back(n, 0xEE);
        g.copy_to_host(back.data(), d, n);
        EXPECT_EQ(back, src) << n << " bytes";
        g.free(d);
    }
}

TEST(CudaCompNode, HostBufferMayBeReusedAsSoonAsTheCopyReturns) {
    SKIP_WITHOUT_GPU();
    auto g = CompNode::load("gpu0");
    constexpr size_t n = size_t(8) << 20;
    std::vector<void*> dev;
    std::vector<uint8_t> host(n);
    for (uint8_t k = 0; k < 6; ++k) {  // the same host buffer, rewritten after each queued copy
        std::fill(host.begin(), host.end(), k);
        dev.push_back(g.alloc(n));
        g.copy_from_host(dev.back(), host.data(), n);
    }
    for (uint8_t k = 0; k < 6; ++k) {
        std::vector<uint8_t> back(n);
        g.copy_to_host(back.data(), dev[k], n);
        EXPECT_EQ(std::count(back.begin(), back.end(), k), static_cast<ptrdiff_t>(n)) << int(k);
        g.free(dev[k]);
    }
}

TEST(CudaCompNode, CopiesBetweenStreamsWaitForTheProducer) {
    SKIP_WITHOUT_GPU();
    auto a = CompNode::load("gpu0:2"), b = CompNode::load("gpu0:3");
    constexpr size_t n = size_t(64) << 20;  // long enough that an unordered copy would race
    auto src = pattern(n, 3);
    void* da = a.alloc(n);
    void* db = b.alloc(n);
    a.copy_from_host(da, src.data(), n);  // queued on a, not yet done
    CompNode::copy(b, db, a, da, n);      // on b, after a's upload
    a.free(da);                           // a's next block may reuse it: a waits for b's read
    void* reuse = a.alloc(n);
    std::vector<uint8_t> zeros(n, 0);
    a.copy_from_host(reuse, zeros.data(), n);
    std::vector<uint8_t> back(n);
    b.copy_to_host(back.data(), db, n);
    EXPECT_EQ(back, src);
    a.free(reuse);
    b.free(db);
}

TEST(CudaCompNode, AllocatorCachesDeviceMemoryAndEmptiesIt) {
    SKIP_WITHOUT_GPU();
    auto g = CompNode::load("gpu0:4");  // a node of its own: its statistics start at zero
    auto base = g.memory_stats();
    void* p = g.alloc(3 << 20);
    EXPECT_EQ(g.memory_stats().allocated - base.allocated, 3u << 20);
    g.free(p);
    void* q = g.alloc(3 << 20);
    EXPECT_EQ(p, q);  // from the cache
    g.free(q);
    EXPECT_EQ(g.memory_stats().reserved, base.reserved + (3u << 20));
    g.empty_cache();
    EXPECT_EQ(g.memory_stats().reserved, base.reserved);
    EXPECT_GE(g.memory_stats().peak_allocated, 3u << 20);
}

TEST(CudaCompNode, OutOfMemoryNamesTheRequest) {
    SKIP_WITHOUT_GPU();
    auto g = CompNode::load("gpu0:5");
    void* cached = g.alloc(64 << 20);
    g.free(cached);
    auto [total, free] = g.mem_status();
    (void)free;
    size_t request = total + (size_t(1) << 30);
    try {
        g.alloc(request);
        FAIL() << "no OutOfMemoryError";
    } catch (const OutOfMemoryError& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("out of memory on gpu0:5"), std::string::npos) << msg;
        EXPECT_NE(msg.find(std::to_string(request) + " bytes"), std::string::npos) << msg;
        EXPECT_NE(msg.find("bytes free"), std::string::npos) << msg;
    }
    EXPECT_EQ(g.memory_stats().reserved, g.memory_stats().allocated);  // the cache went back
    void* ok = g.alloc(1 << 20);                                       // the device still works
    g.free(ok);
}

TEST(CudaCompNode, HandleComesFromTheKernelLibrary) {
    SKIP_WITHOUT_GPU();
    auto g = CompNode::load("gpu0");
    if (!dnn::Handle::cuda_available()) {
        EXPECT_THROW(g.dnn_handle(), dnn::NotSupportedError);
        return;
    }
    EXPECT_EQ(g.dnn_handle()->backend(), dnn::Backend::Cuda);
    EXPECT_EQ(g.dnn_handle(), g.dnn_handle());
}
