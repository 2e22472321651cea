// NcclCommunicator behind the DeviceCommunicator interface, and the factory that
// open_nccl_communicator finds in this library.
#include <cstring>

#include "neomeg/distributed/device_communicator.h"
#include "neomeg/distributed/nccl_communicator.h"

namespace neomeg::distributed {

namespace {

class NcclDeviceCommunicator final : public DeviceCommunicator {
public:
    NcclDeviceCommunicator(Store& store, const std::string& prefix, int rank, int size, int device,
                           std::chrono::milliseconds timeout)
        : m_comm(store, prefix, rank, size, device, timeout) {}

    int rank() const override { return m_comm.rank(); }
    int size() const override { return m_comm.size(); }
    int device() const override { return m_comm.device(); }

    void all_reduce(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op,
                    void* stream) override {
        m_comm.all_reduce(in, out, count, dtype, op, s(stream));
    }
    void reduce(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op, int root,
                void* stream) override {
        m_comm.reduce(in, out, count, dtype, op, root, s(stream));
    }
    void broadcast(const void* in, void* out, size_t count, dnn::DType dtype, int root,
                   void* stream) override {
        m_comm.broadcast(in, out, count, dtype, root, s(stream));
    }
    void all_gather(const void* in, void* out, size_t count, dnn::DType dtype,
                    void* stream) override {
        m_comm.all_gather(in, out, count, dtype, s(stream));
    }
    void reduce_scatter(const void* in, void* out, size_t count, dnn::DType dtype, ReduceOp op,
                        void* stream) override {
        m_comm.reduce_scatter(in, out, count, dtype, op, s(stream));
    }
    void all_to_all(const void* in, void* out, size_t count, dnn::DType dtype,
                    void* stream) override {
        m_comm.all_to_all(in, out, count, dtype, s(stream));
    }
    void send(const void* buf, size_t count, dnn::DType dtype, int dst, void* stream) override {
        m_comm.send(buf, count, dtype, dst, s(stream));
    }
    void recv(void* buf, size_t count, dnn::DType dtype, int src, void* stream) override {
        m_comm.recv(buf, count, dtype, src, s(stream));
    }
    void send_recv(std::span<const PointToPoint> ops, void* stream) override {
        m_comm.send_recv(ops, s(stream));
    }
    void synchronize(void* stream) override { m_comm.synchronize(s(stream)); }

private:
    static NcclCommunicator::Stream s(void* stream) {
        return static_cast<NcclCommunicator::Stream>(stream);
    }
    NcclCommunicator m_comm;
};

void copy_message(const char* what, char* error, size_t error_size) {
    if (error_size) {
        std::strncpy(error, what, error_size - 1);
        error[error_size - 1] = '\0';
    }
}

}  // namespace

}  // namespace neomeg::distributed

extern "C" __attribute__((visibility("default"))) neomeg::distributed::DeviceCommunicator*
neomeg_create_nccl_communicator(neomeg::distributed::Store* store, const char* prefix, int rank,
                                int size, int device, long long timeout_ms, char* error,
                                size_t error_size, int* is_timeout) {
    using namespace neomeg::distributed;
    *is_timeout = 0;
    try {
        return new NcclDeviceCommunicator(*store, prefix, rank, size, device,
                                          std::chrono::milliseconds(timeout_ms));
    } catch (const StoreTimeout& e) {
        *is_timeout = 1;
        copy_message(e.what(), error, error_size);
    } catch (const std::exception& e) {
        copy_message(e.what(), error, error_size);
    }
    return nullptr;
}
