// NEOMEG_DEBUG=1 on the CUDA handle: a line per op on stderr naming what ran ("cudnn:<algo>",
// "cublas", "cuda", "naive(staged)"), printed when the op is launched, not when the GPU finishes
// it. Staged ops also warn once without the switch (staged.cpp).
#pragma once

#include "neomeg/dnn/operator.h"

namespace neomeg::dnn::cuda {

class ExecReporter final : public ExecObserver {
public:
    void ran(const OperatorBase& op, std::span<const TensorND> inputs,
             std::span<const TensorND> outputs) override;
};

}  // namespace neomeg::dnn::cuda
