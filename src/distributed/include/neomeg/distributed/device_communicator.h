// Collectives on GPU buffers, seen through an interface that needs neither CUDA nor NCCL: the
// Python binding gets NCCL's communicator (neomeg_distributed_nccl) by loading that library
// when a process group first communicates on a GPU, so that CPU-only processes never load NCCL.
// `stream` is the comp node's cudaStream_t (CompNode::stream_handle()): each collective is
// queued there, after the work that produced its inputs and before the work that reads its
// outputs. See docs/architecture.md, "Distributed".
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "neomeg/distributed/communicator.h"

namespace neomeg::distributed {

class DeviceCommunicator {
public:
    virtual ~DeviceCommunicator() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual int device() const = 0;

    // As NcclCommunicator's (nccl_communicator.h).
    virtual void all_reduce(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op,
                            void* stream) = 0;
    virtual void reduce(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op,
                        int root, void* stream) = 0;
    virtual void broadcast(const void* in, void* out, size_t count, dnn::DType dtype, int root,
                           void* stream) = 0;
    virtual void all_gather(const void* in, void* out, size_t count, dnn::DType dtype,
                            void* stream) = 0;
    virtual void reduce_scatter(const void* in, void* out, size_t count, dnn::DType dtype,
                                ReduceOp op, void* stream) = 0;
    virtual void all_to_all(const void* in, void* out, size_t count, dnn::DType dtype,
                            void* stream) = 0;
    virtual void send(const void* buf, size_t count, dnn::DType dtype, int dst, void* stream) = 0;
    virtual void recv(void* buf, size_t count, dnn::DType dtype, int src, void* stream) = 0;
    virtual void send_recv(std::span<const PointToPoint> ops, void* stream) = 0;
    virtual void synchronize(void* stream) = 0;
};

// The file name of the library that provides NCCL's DeviceCommunicator.
inline constexpr const char* kNcclLibraryName = "libneomeg_distributed_nccl.so";

// Loads the NCCL library (from the directory of this library first, then the loader's path) and
// constructs its communicator: a rendezvous of every rank of the group, as NcclCommunicator's.
// CommError when the library cannot be loaded (a build without CUDA, NCCL missing) or NCCL
// fails; StoreTimeout when a peer never arrives.
std::unique_ptr<DeviceCommunicator> open_nccl_communicator(Store& store, const std::string& prefix,
                                                           int rank, int size, int device,
                                                           std::chrono::milliseconds timeout);

// "" when the NCCL library loads and exports its factory (no GPU needed), else the reason that
// open_nccl_communicator would raise; loads the library on the first call, as that does.
std::string nccl_load_error();

}  // namespace neomeg::distributed

// What the NCCL library exports for open_nccl_communicator: a new communicator, or nullptr with
// the error's message in `error` (`is_timeout` set for a StoreTimeout).
extern "C" neomeg::distributed::DeviceCommunicator* neomeg_create_nccl_communicator(
        neomeg::distributed::Store* store, const char* prefix, int rank, int size, int device,
        long long timeout_ms, char* error, size_t error_size, int* is_timeout);
