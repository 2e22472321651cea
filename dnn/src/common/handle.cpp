#include "neomeg/dnn/handle.h"

#include <atomic>

#include "neomeg/dnn/op_types.h"
#include "src/common/registry.h"

namespace neomeg::dnn {

const char* backend_name(Backend b) {
    switch (b) {
        case Backend::Naive:
            return "naive";
        case Backend::X86:
            return "x86";
        case Backend::Cuda:
            return "cuda";
    }
    return "unknown";
}

OperatorRegistry::OperatorRegistry() : m_factories(kOpTypeLimit) {}

OperatorRegistry& OperatorRegistry::of(Backend backend) {
    // Function-local statics: registration from other files' static initialisers is then safe.
    static OperatorRegistry registries[3];
    return registries[static_cast<size_t>(backend)];
}

#ifndef NEOMEG_WITH_DNNL
// Without oneDNN there is no x86 kernel yet; dnn/src/x86 is not compiled.
std::unique_ptr<Handle> Handle::make_x86() {
    throw NotSupportedError(
            "the x86 backend needs oneDNN; NeoMeg was built with NEOMEG_WITH_DNNL=OFF");
}

bool Handle::x86_available() {
    return false;
}
#endif

bool Handle::has_own_kernel(OpType type) const {
    return OperatorRegistry::of(m_backend).find(type) != nullptr;
}

#ifndef NEOMEG_WITH_CUDA
// Without CUDA, dnn/src/cuda is not compiled.
std::unique_ptr<Handle> Handle::make_cuda(int, void*) {
    throw NotSupportedError(
            "the CUDA backend is not built; NeoMeg was built with NEOMEG_WITH_CUDA=OFF");
}

bool Handle::cuda_available() {
    return false;
}
#endif

namespace {
std::atomic<bool> g_cuda_allow_tf32{false};
std::atomic<bool> g_cuda_benchmark_kernel{false};
}  // namespace

void Handle::set_cuda_allow_tf32(bool allow) {
    g_cuda_allow_tf32.store(allow, std::memory_order_relaxed);
}

bool Handle::cuda_allow_tf32() {
    return g_cuda_allow_tf32.load(std::memory_order_relaxed);
}

void Handle::set_cuda_benchmark_kernel(bool on) {
    g_cuda_benchmark_kernel.store(on, std::memory_order_relaxed);
}

bool Handle::cuda_benchmark_kernel() {
    return g_cuda_benchmark_kernel.load(std::memory_order_relaxed);
}

bool OperatorRegistry::add(OpType type, Factory factory) {
    auto& slot = m_factories[static_cast<size_t>(type)];
    if (slot)
        throw Error(str_cat("operator ", op_type_name(type), " registered twice for one backend"));
    slot = factory;
    return true;
}

}  // namespace neomeg::dnn
