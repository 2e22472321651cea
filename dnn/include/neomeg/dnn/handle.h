// A Handle is one backend on one device; it creates the operators that run there.
#pragma once

#include <memory>

#include "neomeg/dnn/operator.h"

namespace neomeg::dnn {

enum class Backend { Naive, X86, Cuda };
const char* backend_name(Backend b);

class Handle {
public:
    explicit Handle(Backend backend) : m_backend(backend) {}
    virtual ~Handle() = default;
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;

    // The naive (reference) handle: every operator, on host memory.
    static std::unique_ptr<Handle> make_naive();
    // The x86 handle: oneDNN kernels where registered, the naive kernel of the same operator
    // otherwise; on host memory. Throws NotSupportedError when NeoMeg was built without oneDNN
    // (NEOMEG_WITH_DNNL=OFF), which x86_available() tells beforehand.
    static std::unique_ptr<Handle> make_x86();
    static bool x86_available();
    // The CUDA handle on GPU `device`: operators take device pointers and run asynchronously on
    // `stream` (a cudaStream_t the caller owns; nullptr is the legacy default stream), with
    // workspace in device memory. Operators without a CUDA kernel stage through host memory and
    // run naive (each says so once on stderr). Throws NotSupportedError when NeoMeg was built
    // without CUDA or no such device is present; cuda_available() tells whether any is.
    static std::unique_ptr<Handle> make_cuda(int device, void* stream);
    static bool cuda_available();
    // Whether float32 matrix products and convolutions on CUDA handles may round their inputs to
    // TF32 on tensor cores (PyTorch's allow_tf32); off by default, so float32 means float32.
    // Process-wide; a float16/bfloat16 product's MatrixMul compute_mode is a separate matter.
    static void set_cuda_allow_tf32(bool allow);
    static bool cuda_allow_tf32();
    // Whether CUDA convolutions choose their cuDNN algorithm by measuring every candidate on the
    // first use of a shape (cached per handle, shape and params: MegEngine's fastrun, switched by
    // megengine.config.benchmark_kernel) rather than by cuDNN's heuristics; off by default.
    // Process-wide; read when an operator builds its plan for a shape.
    static void set_cuda_benchmark_kernel(bool on);
    static bool cuda_benchmark_kernel();

    Backend backend() const { return m_backend; }
    const char* name() const { return backend_name(m_backend); }

    // Creates an operator of the given type; throws NotSupportedError naming the handle and the op
    // when this backend has no kernel for it.
    virtual std::unique_ptr<OperatorBase> create_operator(OpType type) = 0;
    bool has_operator(OpType type) const { return can_create(type); }
    // Whether this backend registered a kernel of its own for the op, rather than running the
    // naive one for it (every op has its own on the naive handle). Graph passes ask before
    // rewriting into an op that would otherwise be slower than what it replaces.
    bool has_own_kernel(OpType type) const;
    // The channel block (ChannelBlock's `block`) this backend's convolutions run fastest on, or 0
    // where it prefers plain (N, C, spatial...) tensors: the graph's layout pass asks.
    virtual size_t preferred_channel_block() const { return 0; }

    template <class Op>
    std::unique_ptr<Op> create_operator() {
        return std::unique_ptr<Op>(static_cast<Op*>(create_operator(Op::kType).release()));
    }

protected:
    virtual bool can_create(OpType type) const = 0;

private:
    Backend m_backend;
};

}  // namespace neomeg::dnn
