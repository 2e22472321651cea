// The naive backend: every operator, written for clarity, on host memory. It is the reference
// that every faster kernel is tested against (dnn/test/common/checker.h).
#pragma once

#include "neomeg/dnn/handle.h"
#include "src/common/registry.h"

namespace neomeg::dnn::naive {

class HandleImpl final : public Handle {
public:
    HandleImpl() : Handle(Backend::Naive) {}
    std::unique_ptr<OperatorBase> create_operator(OpType type) override;

protected:
    bool can_create(OpType type) const override;
};

}  // namespace neomeg::dnn::naive

// In a naive kernel file: NM_REGISTER_NAIVE(Elemwise, ElemwiseImpl);
#define NM_REGISTER_NAIVE(Op, Impl) NM_REGISTER_OPERATOR(Naive, Op, Impl)
