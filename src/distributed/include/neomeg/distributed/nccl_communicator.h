// Collective communication between processes on GPU buffers, through NCCL (built when
// NEOMEG_WITH_CUDA is on). It speaks the CUDA runtime's terms, device pointers and streams, so
// that the CUDA comp nodes can call it with their own stream: each collective is enqueued on
// `stream` and the call returns; synchronize() waits for the stream with the group's timeout.
// See docs/architecture.md, "Distributed".
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "neomeg/distributed/communicator.h"

struct CUstream_st;  // what cudaStream_t points to: no CUDA header for the comp nodes' users

namespace neomeg::distributed {

// The CUDA devices this process sees; 0 when there is no driver or no device.
int cuda_device_count();

// One rank's NCCL communicator in a group, on one CUDA device. Every rank of the group
// constructs it together (the constructor is the rendezvous: rank 0's NCCL id goes through
// `store` under `prefix`) and then calls the same collectives in the same order. Counts are in
// elements of `dtype`; sum, max and min take every NeoMeg dtype but int16 (NCCL has none), bool
// reducing as "or" for sum and max and "and" for min; data movement takes every dtype. Errors
// and timeouts are CommError; after one the communicator is aborted and unusable.
class NcclCommunicator {
public:
    using Stream = CUstream_st*;  // cudaStream_t; nullptr is the device's default stream

    NcclCommunicator(Store& store, const std::string& prefix, int rank, int size, int device,
                     std::chrono::milliseconds timeout);
    ~NcclCommunicator();
    NcclCommunicator(const NcclCommunicator&) = delete;
    NcclCommunicator& operator=(const NcclCommunicator&) = delete;

    int rank() const { return m_rank; }
    int size() const { return m_size; }
    int device() const { return m_device; }

    void all_reduce(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op,
                    Stream stream);
    // `out` is written on `root` only (it may be null elsewhere).
    void reduce(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op, int root,
                Stream stream);
    // `in` is read on `root`; `out` is written on every rank (in == out is allowed).
    void broadcast(const void* in, void* out, size_t count, dnn::DType dtype, int root,
                   Stream stream);
    // `out` holds size() * count elements, rank r's part at r * count.
    void all_gather(const void* in, void* out, size_t count, dnn::DType dtype, Stream stream);
    // `in` holds size() * count elements; rank r gets the reduction of every rank's part r.
    void reduce_scatter(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op,
                        Stream stream);
    // `in` and `out` hold size() * count elements: part r of `in` goes to rank r, and part r
    // of `out` comes from rank r.
    void all_to_all(const void* in, void* out, size_t count, dnn::DType dtype, Stream stream);
    // Point-to-point: a send matches the next recv from this rank on the peer.
    void send(const void* buf, size_t count, dnn::DType dtype, int dst, Stream stream);
    void recv(void* buf, size_t count, dnn::DType dtype, int src, Stream stream);
    // The transfers of `ops` between ncclGroupStart and ncclGroupEnd, all on `stream`: NCCL
    // runs them together, so two ranks that each send to the other first do not deadlock.
    // Tags are ignored (a send matches the peer's next recv from this rank). Bad peers are
    // rejected (std::invalid_argument) before the group starts.
    void send_recv(std::span<const PointToPoint> ops, Stream stream);
    // Blocks until the work enqueued on `stream` is done; CommError when NCCL or CUDA reports
    // an error, or after the timeout (a peer died or never called the same collective).
    void synchronize(Stream stream);

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    int m_rank;
    int m_size;
    int m_device;
};

}  // namespace neomeg::distributed
