#include "neomeg/dnn/handle.h"

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

bool OperatorRegistry::add(OpType type, Factory factory) {
    auto& slot = m_factories[static_cast<size_t>(type)];
    if (slot)
        throw Error(str_cat("operator ", op_type_name(type), " registered twice for one backend"));
    slot = factory;
    return true;
}

}  // namespace neomeg::dnn
