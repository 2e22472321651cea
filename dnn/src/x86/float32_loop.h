// The frame of the x86 vision loops (ROIAlign, ROIPooling, Remap, WarpPerspective and their
// gradients): a call whose float tensors are all float32 runs run() and reports "loop"; any
// other runs naive, which converts other dtypes per element (index tensors are int32 by the
// operators' rules).
#pragma once

#include <span>

#include "src/x86/loop_kernel.h"

namespace neomeg::dnn::x86 {

template <class Op>
class Float32Loop : public LoopKernel<Op> {
public:
    using LoopKernel<Op>::LoopKernel;

protected:
    virtual void run(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                     Workspace ws) = 0;

    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace ws) final {
        for (auto ts : {inputs, outputs})
            for (const TensorND& t : ts)
                if (t.layout.dtype.is_float() && t.layout.dtype != dtype::Float32) {
                    this->run_naive(inputs, outputs, ws);
                    return;
                }
        this->m_last = "loop";
        run(inputs, outputs, ws);
    }
};

}  // namespace neomeg::dnn::x86
