#include "src/x86/handle.h"

namespace neomeg::dnn {

std::unique_ptr<Handle> Handle::make_x86() {
    return std::make_unique<x86::HandleImpl>();
}

bool Handle::x86_available() {
    return true;
}

namespace x86 {

HandleImpl::HandleImpl()
    : Handle(Backend::X86), m_engine(dnnl::engine::kind::cpu, 0), m_stream(m_engine) {}

std::unique_ptr<OperatorBase> HandleImpl::create_operator(OpType type) {
    if (auto factory = OperatorRegistry::of(Backend::X86).find(type))
        return factory(this);
    return create_naive_operator(type);
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
