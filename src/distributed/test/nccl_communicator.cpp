// NcclCommunicator: ranks are threads of this process, one GPU each, sharing a MemoryStore.
// Tests that need GPUs skip where CUDA sees fewer than they need ("no GPU" on CPU machines);
// argument checks run everywhere.
#include "neomeg/distributed/nccl_communicator.h"

#include "neomeg/distributed/device_communicator.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace neomeg;
using namespace neomeg::distributed;
using namespace std::chrono_literals;

namespace {

#define NM_NEED_GPUS(n)                                                                    \
    do {                                                                                   \
        if (int found = cuda_device_count(); found < (n))                                  \
            GTEST_SKIP() << (found == 0 ? std::string("no GPU")                            \
                                        : "needs " + std::to_string(n) + " GPUs, found " + \
                                                  std::to_string(found));                  \
    } while (0)

// A device buffer holding `host`; copied back by `read`.
template <class T>
struct DeviceBuffer {
    T* ptr = nullptr;
    size_t n = 0;
    explicit DeviceBuffer(size_t count) : n(count) {
        EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&ptr), sizeof(T) * n), cudaSuccess);
    }
    explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
        cudaMemcpy(ptr, host.data(), sizeof(T) * n, cudaMemcpyHostToDevice);
    }
    ~DeviceBuffer() { cudaFree(ptr); }
    std::vector<T> read() const {
        std::vector<T> host(n);
        cudaMemcpy(host.data(), ptr, sizeof(T) * n, cudaMemcpyDeviceToHost);
        return host;
    }
};

// Runs body(comm) on `size` threads, rank r on GPU r; rethrows the first failure.
void run_ranks(int size, const std::function<void(NcclCommunicator&)>& body) {
    static int g_prefix = 0;
    MemoryStore store;
    std::string prefix = "nccl" + std::to_string(g_prefix++);
    prefix.append("/");
    std::vector<std::exception_ptr> errors(size);
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r)
        threads.emplace_back([&, r] {
            try {
                cudaSetDevice(r);
                NcclCommunicator comm(store, prefix, r, size, r, 30s);
                body(comm);
            } catch (...) {
                errors[r] = std::current_exception();
            }
        });
    for (auto& t : threads)
        t.join();
    for (auto& e : errors)
        if (e)
            std::rethrow_exception(e);
}

std::vector<float> input(int r, size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<float>(static_cast<int>((i * 7 + r * 3) % 11) - 5);
    return v;
}

}  // namespace

TEST(NcclCommunicator, BadArgumentsAreRejectedBeforeAnyGpuWork) {
    MemoryStore store;
    EXPECT_THROW(NcclCommunicator(store, "bad/", 2, 2, 0, 1s), std::invalid_argument);
    EXPECT_THROW(NcclCommunicator(store, "bad/", 0, 1, 0, 0s), std::invalid_argument);
    // A device this process does not see: the message says how many it sees.
    int devices = cuda_device_count();
    try {
        NcclCommunicator(store, "bad/", 0, 1, devices, 1s);
        FAIL() << "expected invalid_argument";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("no GPU " + std::to_string(devices)),
                  std::string::npos)
                << e.what();
    }
}

TEST(NcclCommunicator, OneRankAllReduceAndBroadcastCopy) {
    NM_NEED_GPUS(1);
    run_ranks(1, [](NcclCommunicator& comm) {
        auto host = input(0, 1000);
        DeviceBuffer<float> in(host), out(host.size());
        comm.all_reduce(in.ptr, out.ptr, host.size(), dnn::dtype::Float32, ReduceOp::Sum, nullptr);
        comm.synchronize(nullptr);
        EXPECT_EQ(out.read(), host);
        DeviceBuffer<float> b(host.size());
        comm.broadcast(in.ptr, b.ptr, host.size(), dnn::dtype::Float32, 0, nullptr);
        comm.synchronize(nullptr);
        EXPECT_EQ(b.read(), host);
    });
}

TEST(NcclCommunicator, TwoRanksCollectivesMatchTheHostComputation) {
    NM_NEED_GPUS(2);
    const size_t n = 1024;
    run_ranks(2, [&](NcclCommunicator& comm) {
        int r = comm.rank();
        cudaStream_t stream;
        ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
        DeviceBuffer<float> in(input(r, n)), sum(n), max(n), gathered(2 * n), part(n / 2);
        comm.all_reduce(in.ptr, sum.ptr, n, dnn::dtype::Float32, ReduceOp::Sum, stream);
        comm.all_reduce(in.ptr, max.ptr, n, dnn::dtype::Float32, ReduceOp::Max, stream);
        comm.all_gather(in.ptr, gathered.ptr, n, dnn::dtype::Float32, stream);
        comm.reduce_scatter(in.ptr, part.ptr, n / 2, dnn::dtype::Float32, ReduceOp::Sum, stream);
        comm.synchronize(stream);
        auto a = input(0, n), b = input(1, n);
        auto s = sum.read(), m = max.read(), g = gathered.read(), p = part.read();
        for (size_t i = 0; i < n; ++i) {
            ASSERT_EQ(s[i], a[i] + b[i]);
            ASSERT_EQ(m[i], std::max(a[i], b[i]));
            ASSERT_EQ(g[i], a[i]);
            ASSERT_EQ(g[n + i], b[i]);
        }
        for (size_t i = 0; i < n / 2; ++i)
            ASSERT_EQ(p[i], a[r * n / 2 + i] + b[r * n / 2 + i]);
        cudaStreamDestroy(stream);
    });
}

TEST(NcclCommunicator, SendRecvGroupRejectsBadPeersBeforeItStarts) {
    NM_NEED_GPUS(1);
    run_ranks(1, [](NcclCommunicator& comm) {
        DeviceBuffer<float> x(4);
        using K = PointToPoint::Kind;
        std::vector<PointToPoint> self = {{K::Send, x.ptr, 4, dnn::dtype::Float32, 0, 0}};
        EXPECT_THROW(comm.send_recv(self, nullptr), std::invalid_argument);
        std::vector<PointToPoint> outside = {{K::Recv, x.ptr, 4, dnn::dtype::Float32, 1, 0}};
        EXPECT_THROW(comm.send_recv(outside, nullptr), std::invalid_argument);
        // An empty group: ncclGroupStart and ncclGroupEnd alone; the communicator still works.
        comm.send_recv({}, nullptr);
        DeviceBuffer<float> in(input(0, 4)), out(4);
        comm.all_reduce(in.ptr, out.ptr, 4, dnn::dtype::Float32, ReduceOp::Sum, nullptr);
        comm.synchronize(nullptr);
        EXPECT_EQ(out.read(), input(0, 4));
    });
}

TEST(NcclCommunicator, TwoRanksExchangeBothWaysInOneGroup) {
    NM_NEED_GPUS(2);
    // Each rank sends to the other before receiving, which ncclGroupStart/ncclGroupEnd lets
    // NCCL run together; 4M floats are more than NCCL's buffers hold, so that unordered
    // blocking transfers would deadlock. int16 travels as bytes.
    const size_t n = size_t{1} << 22;
    run_ranks(2, [&](NcclCommunicator& comm) {
        int r = comm.rank(), peer = 1 - r;
        cudaStream_t stream;
        ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
        std::vector<int16_t> small = {static_cast<int16_t>(r), static_cast<int16_t>(-r - 1)};
        DeviceBuffer<float> out(input(r, n)), in(n);
        DeviceBuffer<int16_t> out_small(small), in_small(2);
        using K = PointToPoint::Kind;
        std::vector<PointToPoint> ops = {
                {K::Send, out.ptr, n, dnn::dtype::Float32, peer, 0},
                {K::Send, out_small.ptr, 2, dnn::dtype::Int16, peer, 1},
                {K::Recv, in.ptr, n, dnn::dtype::Float32, peer, 0},
                {K::Recv, in_small.ptr, 2, dnn::dtype::Int16, peer, 1},
        };
        comm.send_recv(ops, stream);
        comm.synchronize(stream);
        EXPECT_EQ(in.read(), input(peer, n));
        EXPECT_EQ(in_small.read(), (std::vector<int16_t>{static_cast<int16_t>(peer),
                                                         static_cast<int16_t>(-peer - 1)}));
        cudaStreamDestroy(stream);
    });
}

// open_nccl_communicator loads this library at run time, as megengine.distributed does.
TEST(DeviceCommunicator, WithoutAGpuOpeningFailsWithNcclsReasonNotALoadError) {
    if (cuda_device_count() > 0)
        GTEST_SKIP() << "a GPU is present (DeviceCommunicator.OneRankAllReduce runs)";
    EXPECT_EQ(nccl_load_error(), "");  // what megengine.distributed checks without a GPU
    MemoryStore store;
    try {
        open_nccl_communicator(store, "nogpu/", 0, 1, 0, 2s);
        FAIL() << "opened an NCCL communicator without a GPU";
    } catch (const CommError& e) {
        std::string what = e.what();
        EXPECT_EQ(what.find("cannot load"), std::string::npos) << what;  // the library loaded
        EXPECT_FALSE(what.empty());
    }
}

TEST(DeviceCommunicator, OneRankAllReduceOnTheGivenStream) {
    NM_NEED_GPUS(1);
    MemoryStore store;
    auto comm = open_nccl_communicator(store, "onegpu/", 0, 1, 0, 10s);
    EXPECT_EQ(comm->size(), 1);
    EXPECT_EQ(comm->device(), 0);
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    auto host = input(0, 1000);
    DeviceBuffer<float> in(host), out(host.size());
    comm->all_reduce(in.ptr, out.ptr, host.size(), dnn::dtype::Float32, ReduceOp::Sum, stream);
    comm->synchronize(stream);
    EXPECT_EQ(out.read(), host);
    cudaStreamDestroy(stream);
}
