// NcclCommunicator: NCCL's communicator in its non-blocking mode, so that initialization and
// every wait can be bounded by the group's timeout (a blocking NCCL call would hang forever on
// a peer that died) and aborted.
#include "neomeg/distributed/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <thread>

#include "rendezvous.h"

namespace neomeg::distributed {

namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t nccl_dtype(dnn::DType dtype, bool reducing) {
    switch (dtype.enumv()) {
        case dnn::DTypeEnum::Float32:
            return ncclFloat32;
        case dnn::DTypeEnum::Float16:
            return ncclFloat16;
        case dnn::DTypeEnum::BFloat16:
            return ncclBfloat16;
        case dnn::DTypeEnum::Int8:
            return ncclInt8;
        case dnn::DTypeEnum::Uint8:
        case dnn::DTypeEnum::Bool:
            return ncclUint8;
        case dnn::DTypeEnum::Int32:
            return ncclInt32;
        case dnn::DTypeEnum::Int16:
            if (!reducing)
                return ncclUint8;  // moved as bytes: the caller scales the count
            break;
        default:
            break;
    }
    throw std::invalid_argument(std::string("distributed (NCCL): cannot reduce ") + dtype.name() +
                                " tensors (NCCL has no such type)");
}

// Elements of `dtype` as elements of nccl_dtype(dtype, false).
size_t moved_count(size_t count, dnn::DType dtype) {
    return dtype.enumv() == dnn::DTypeEnum::Int16 ? dtype.size(count) : count;
}

ncclRedOp_t nccl_op(ReduceOp op, dnn::DType dtype) {
    if (dtype.is_bool())  // 0/1 bytes: "or" is max, "and" is min
        return op == ReduceOp::Min ? ncclMin : ncclMax;
    switch (op) {
        case ReduceOp::Sum:
            return ncclSum;
        case ReduceOp::Max:
            return ncclMax;
        case ReduceOp::Min:
            return ncclMin;
    }
    throw std::invalid_argument("unknown ReduceOp");
}

}  // namespace

int cuda_device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();  // clears the sticky "no driver" error for later callers
        return 0;
    }
    return n;
}

struct NcclCommunicator::Impl {
    ncclComm_t comm = nullptr;
    std::chrono::milliseconds timeout{};
    bool aborted = false;
    std::string where;  // "rank r of n on GPU d", for errors

    [[noreturn]] void fail(const std::string& what, const std::string& why) {
        if (comm && !aborted) {
            ncclCommAbort(comm);
            aborted = true;
        }
        throw CommError("distributed (NCCL) " + what + " failed on " + where + ": " + why);
    }

    std::string nccl_reason(ncclResult_t r) {
        std::string why = ncclGetErrorString(r);
        if (const char* last = comm ? ncclGetLastError(comm) : nullptr; last && *last)
            why += std::string(" (") + last + ")";
        return why;
    }

    // Waits while the non-blocking communicator is busy with the last call, up to the timeout
    // (or the rendezvous's deadline).
    void settle(ncclResult_t r, const std::string& what) {
        settle(r, what, Clock::now() + timeout);
    }
    void settle(ncclResult_t r, const std::string& what, Clock::time_point deadline) {
        if (aborted)
            throw CommError("distributed (NCCL) " + what + " on " + where +
                            ": the communicator was aborted by an earlier error");
        while (r == ncclInProgress) {
            if (Clock::now() > deadline)
                fail(what, "timed out (a peer died or never joined)");
            std::this_thread::sleep_for(std::chrono::microseconds(50));
            ncclResult_t state = ncclSuccess;
            if (ncclCommGetAsyncError(comm, &state) != ncclSuccess)
                fail(what, "ncclCommGetAsyncError failed");
            r = state;
        }
        if (r != ncclSuccess)
            fail(what, nccl_reason(r));
    }
};

NcclCommunicator::NcclCommunicator(Store& store, const std::string& prefix, int rank, int size,
                                   int device, std::chrono::milliseconds timeout)
    : m_impl(std::make_unique<Impl>()), m_rank(rank), m_size(size), m_device(device) {
    if (size < 1 || rank < 0 || rank >= size)
        throw std::invalid_argument("distributed (NCCL): rank " + std::to_string(rank) +
                                    " is not in a group of size " + std::to_string(size));
    if (timeout.count() <= 0)
        throw std::invalid_argument("distributed (NCCL): the timeout must be positive");
    int devices = cuda_device_count();
    if (device < 0 || device >= devices)
        throw std::invalid_argument("distributed (NCCL): no GPU " + std::to_string(device) +
                                    ": this process sees " + std::to_string(devices) +
                                    (devices == 1 ? " GPU" : " GPUs") +
                                    (devices ? "" : " (no GPU is present, or no CUDA driver)"));
    m_impl->timeout = timeout;
    m_impl->where = "rank " + std::to_string(rank) + " of " + std::to_string(size) + " on GPU " +
                    std::to_string(device);
    if (cudaSetDevice(device) != cudaSuccess)
        m_impl->fail("init",
                     std::string("cudaSetDevice: ") + cudaGetErrorString(cudaGetLastError()));
    // As the Gloo communicator's: every rank there first, and one deadline for the whole
    // rendezvous (NCCL's bootstrap would otherwise wait for a missing rank on its own).
    auto deadline = Clock::now() + timeout;
    await_ranks(store, prefix, rank, size, deadline, timeout);
    ncclUniqueId id;
    const std::string key = prefix + "nccl_id";
    if (rank == 0) {
        if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
            m_impl->fail("init", m_impl->nccl_reason(r));
        store.set(key, std::vector<char>(id.internal, id.internal + sizeof(id.internal)));
    } else {
        auto bytes = store.get(key, rendezvous::time_left(deadline));
        if (bytes.size() != sizeof(id.internal))
            m_impl->fail("init", "the rendezvous store holds a malformed NCCL id");
        std::memcpy(id.internal, bytes.data(), bytes.size());
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&m_impl->comm, size, id, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress)
        m_impl->fail("init", m_impl->nccl_reason(r));
    m_impl->settle(r, "init", deadline);
}

NcclCommunicator::~NcclCommunicator() {
    if (!m_impl->comm || m_impl->aborted)
        return;
    // Finalizing waits for the peers; one that died would make it wait forever, so it is
    // bounded by the timeout and the communicator aborted after it.
    cudaSetDevice(m_device);
    try {
        m_impl->settle(ncclCommFinalize(m_impl->comm), "finalize");
    } catch (const CommError&) {
        return;  // aborted
    }
    ncclCommDestroy(m_impl->comm);
}

#define NM_NCCL_ENQUEUE(what, call) \
    do {                            \
        cudaSetDevice(m_device);    \
        m_impl->settle(call, what); \
    } while (0)

void NcclCommunicator::all_reduce(const void* in, void* out, size_t count, dnn::DType dtype,
                                  ReduceOp op, Stream stream) {
    if (count == 0)
        return;
    NM_NCCL_ENQUEUE("all_reduce", ncclAllReduce(in, out, count, nccl_dtype(dtype, true),
                                                nccl_op(op, dtype), m_impl->comm, stream));
}

void NcclCommunicator::reduce(const void* in, void* out, size_t count, dnn::DType dtype,
                              ReduceOp op, int root, Stream stream) {
    if (root < 0 || root >= m_size)
        throw std::invalid_argument("distributed (NCCL) reduce: root " + std::to_string(root) +
                                    " is not in a group of size " + std::to_string(m_size));
    if (count == 0)
        return;
    NM_NCCL_ENQUEUE("reduce", ncclReduce(in, out, count, nccl_dtype(dtype, true),
                                         nccl_op(op, dtype), root, m_impl->comm, stream));
}

void NcclCommunicator::broadcast(const void* in, void* out, size_t count, dnn::DType dtype,
                                 int root, Stream stream) {
    if (root < 0 || root >= m_size)
        throw std::invalid_argument("distributed (NCCL) broadcast: root " + std::to_string(root) +
                                    " is not in a group of size " + std::to_string(m_size));
    if (count == 0)
        return;
    NM_NCCL_ENQUEUE("broadcast",
                    ncclBroadcast(in, out, moved_count(count, dtype), nccl_dtype(dtype, false),
                                  root, m_impl->comm, stream));
}

void NcclCommunicator::all_gather(const void* in, void* out, size_t count, dnn::DType dtype,
                                  Stream stream) {
    if (count == 0)
        return;
    NM_NCCL_ENQUEUE("all_gather", ncclAllGather(in, out, moved_count(count, dtype),
                                                nccl_dtype(dtype, false), m_impl->comm, stream));
}

void NcclCommunicator::reduce_scatter(const void* in, void* out, size_t count, dnn::DType dtype,
                                      ReduceOp op, Stream stream) {
    if (count == 0)
        return;
    NM_NCCL_ENQUEUE("reduce_scatter", ncclReduceScatter(in, out, count, nccl_dtype(dtype, true),
                                                        nccl_op(op, dtype), m_impl->comm, stream));
}

void NcclCommunicator::all_to_all(const void* in, void* out, size_t count, dnn::DType dtype,
                                  Stream stream) {
    if (count == 0)
        return;
    size_t n = moved_count(count, dtype);
    size_t bytes = dtype.size(count);
    auto dt = nccl_dtype(dtype, false);
    cudaSetDevice(m_device);
    m_impl->settle(ncclGroupStart(), "all_to_all");
    for (int r = 0; r < m_size; ++r) {
        m_impl->settle(ncclSend(static_cast<const std::byte*>(in) + bytes * r, n, dt, r,
                                m_impl->comm, stream),
                       "all_to_all");
        m_impl->settle(
                ncclRecv(static_cast<std::byte*>(out) + bytes * r, n, dt, r, m_impl->comm, stream),
                "all_to_all");
    }
    m_impl->settle(ncclGroupEnd(), "all_to_all");
}

void NcclCommunicator::send(const void* buf, size_t count, dnn::DType dtype, int dst,
                            Stream stream) {
    if (dst < 0 || dst >= m_size || dst == m_rank)
        throw std::invalid_argument("distributed (NCCL) send: rank " + std::to_string(dst) +
                                    " is not a peer in a group of size " + std::to_string(m_size));
    NM_NCCL_ENQUEUE("send", ncclSend(buf, moved_count(count, dtype), nccl_dtype(dtype, false), dst,
                                     m_impl->comm, stream));
}

void NcclCommunicator::recv(void* buf, size_t count, dnn::DType dtype, int src, Stream stream) {
    if (src < 0 || src >= m_size || src == m_rank)
        throw std::invalid_argument("distributed (NCCL) recv: rank " + std::to_string(src) +
                                    " is not a peer in a group of size " + std::to_string(m_size));
    NM_NCCL_ENQUEUE("recv", ncclRecv(buf, moved_count(count, dtype), nccl_dtype(dtype, false), src,
                                     m_impl->comm, stream));
}

void NcclCommunicator::send_recv(std::span<const PointToPoint> ops, Stream stream) {
    for (const auto& op : ops) {
        bool send = op.kind == PointToPoint::Kind::Send;
        if (op.peer < 0 || op.peer >= m_size || op.peer == m_rank)
            throw std::invalid_argument(
                    std::string("distributed (NCCL) ") + (send ? "send" : "recv") + ": rank " +
                    std::to_string(op.peer) + " is not a peer in a group of size " +
                    std::to_string(m_size));
    }
    cudaSetDevice(m_device);
    m_impl->settle(ncclGroupStart(), "send_recv");
    for (const auto& op : ops) {
        if (op.count == 0)
            continue;
        size_t n = moved_count(op.count, op.dtype);
        auto dt = nccl_dtype(op.dtype, false);
        if (op.kind == PointToPoint::Kind::Send)
            m_impl->settle(ncclSend(op.buf, n, dt, op.peer, m_impl->comm, stream), "send_recv");
        else
            m_impl->settle(ncclRecv(op.buf, n, dt, op.peer, m_impl->comm, stream), "send_recv");
    }
    m_impl->settle(ncclGroupEnd(), "send_recv");
}

void NcclCommunicator::synchronize(Stream stream) {
    cudaSetDevice(m_device);
    auto deadline = Clock::now() + m_impl->timeout;
    for (;;) {
        cudaError_t e = cudaStreamQuery(stream);
        if (e == cudaSuccess)
            return;
        if (e != cudaErrorNotReady)
            m_impl->fail("synchronize", std::string("CUDA: ") + cudaGetErrorString(e));
        ncclResult_t state = ncclSuccess;
        ncclCommGetAsyncError(m_impl->comm, &state);
        if (state != ncclSuccess && state != ncclInProgress)
            m_impl->fail("synchronize", m_impl->nccl_reason(state));
        if (Clock::now() > deadline)
            m_impl->fail("synchronize", "timed out (a peer died or never called the collective)");
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
}

}  // namespace neomeg::distributed
