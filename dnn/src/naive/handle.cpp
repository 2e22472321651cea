#include "src/naive/handle.h"

namespace neomeg::dnn {

std::unique_ptr<Handle> Handle::make_naive() {
    return std::make_unique<naive::HandleImpl>();
}

namespace naive {

std::unique_ptr<OperatorBase> HandleImpl::create_operator(OpType type) {
    auto factory = OperatorRegistry::of(Backend::Naive).find(type);
    if (!factory)
        throw NotSupportedError(str_cat("operator ", op_type_name(type),
                                        " is not implemented on the naive handle"));
    return factory(this);
}

bool HandleImpl::can_create(OpType type) const {
    return OperatorRegistry::of(Backend::Naive).find(type) != nullptr;
}

}  // namespace naive
}  // namespace neomeg::dnn
