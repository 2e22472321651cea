#include "src/x86/handle.h"

#include <pthread.h>

#include <atomic>

#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#endif

namespace neomeg::dnn {

std::unique_ptr<Handle> Handle::make_x86() {
    return std::make_unique<x86::HandleImpl>();
}

bool Handle::x86_available() {
    return true;
}

namespace x86 {
namespace {

std::atomic<unsigned> g_fork_generation{0};

// GNU OpenMP, which Debian's oneDNN runs on, does not survive fork: a child that enters a parallel
// region of more than one thread waits forever for pool threads that stayed in the parent. A
// forked child (a DataLoader worker) therefore runs oneDNN on one thread, and the plans made
// before the fork, whose primitives fixed their thread count, are made again.
void after_fork_in_child() {
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
    omp_set_num_threads(1);
#endif
    g_fork_generation.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

unsigned fork_generation() {
    return g_fork_generation.load(std::memory_order_relaxed);
}

HandleImpl::HandleImpl()
    : Handle(Backend::X86), m_engine(dnnl::engine::kind::cpu, 0), m_stream(m_engine) {
    static const bool registered = pthread_atfork(nullptr, nullptr, after_fork_in_child) == 0;
    (void)registered;
}

std::unique_ptr<OperatorBase> HandleImpl::create_operator(OpType type) {
    // Every op reports under NEOMEG_DEBUG; without it only the ops left to naive kernels are
    // watched (for the float32 warning), and an x86 kernel's own naive fallback warns itself.
    if (auto factory = OperatorRegistry::of(Backend::X86).find(type)) {
        auto op = factory(this);
        if (debug_enabled())
            op->set_exec_observer(&m_reporter);
        return op;
    }
    auto op = create_naive_operator(type);
    op->set_exec_observer(&m_reporter);
    return op;
}

std::unique_ptr<OperatorBase> HandleImpl::create_naive_operator(OpType type) {
    auto factory = OperatorRegistry::of(Backend::Naive).find(type);
    if (!factory)
        throw NotSupportedError(
                str_cat("operator ", op_type_name(type), " is not implemented on the x86 handle"));
    return factory(this);
}

bool HandleImpl::can_create(OpType type) const {
    return OperatorRegistry::of(Backend::X86).find(type) ||
           OperatorRegistry::of(Backend::Naive).find(type);
}

}  // namespace x86
}  // namespace neomeg::dnn
