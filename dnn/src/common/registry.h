// Per-backend table of operator factories. Each kernel file registers its implementation with
// NM_REGISTER_OPERATOR, so adding a kernel touches no central list.
#pragma once

#include <memory>
#include <vector>

#include "neomeg/dnn/handle.h"

namespace neomeg::dnn {

class OperatorRegistry {
public:
    using Factory = std::unique_ptr<OperatorBase> (*)(Handle*);

    // Empty, with room for every OpType (kOpTypeLimit, in handle.cpp: this header, which every
    // kernel file reads, does not depend on the list of every operator).
    OperatorRegistry();
    static OperatorRegistry& of(Backend backend);
    // Returns true so that registration can initialise a namespace-scope constant.
    bool add(OpType type, Factory factory);
    Factory find(OpType type) const { return m_factories[static_cast<size_t>(type)]; }

private:
    std::vector<Factory> m_factories;
};

}  // namespace neomeg::dnn

#define NM_REGISTER_OPERATOR_CAT2(a, b) a##b
#define NM_REGISTER_OPERATOR_CAT(a, b) NM_REGISTER_OPERATOR_CAT2(a, b)
// NM_REGISTER_OPERATOR(Naive, ConvolutionForward, ConvolutionForwardImpl)
#define NM_REGISTER_OPERATOR(backend, Op, Impl)                                             \
    [[maybe_unused]] static const bool NM_REGISTER_OPERATOR_CAT(nm_registered_, __LINE__) = \
            ::neomeg::dnn::OperatorRegistry::of(::neomeg::dnn::Backend::backend)            \
                    .add(Op::kType,                                                         \
                         [](::neomeg::dnn::Handle* h)                                       \
                                 -> std::unique_ptr<::neomeg::dnn::OperatorBase> {          \
                             return std::make_unique<Impl>(h);                              \
                         })
