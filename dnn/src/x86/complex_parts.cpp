// CreateComplex and ComplexPart on x86: copies between a complex64 tensor's float32 part views
// (src/common/complex_view.h) and the float32 parts, by relayout_copy (rows, tiles or strided,
// threaded over large tensors).
#include "neomeg/dnn/operators/elemwise.h"
#include "src/common/complex_view.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/relayout_copy.h"

namespace neomeg::dnn::x86 {
namespace {

class CreateComplexImpl final : public LoopKernel<CreateComplex> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND& dst = outputs[0];
        for (int part = 0; part < 2; ++part) {
            const TensorND& src = inputs[part];
            m_last = relayout_copy(TensorND(src.raw_ptr(), src.layout.broadcast(dst.layout)),
                                   complex_part_view(dst, part));
        }
    }
};

class ComplexPartImpl final : public LoopKernel<ComplexPart> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        int part = m_param.part == Param::Part::REAL ? 0 : 1;
        m_last = relayout_copy(complex_part_view(inputs[0], part), outputs[0]);
    }
};

}  // namespace
NM_REGISTER_X86(CreateComplex, CreateComplexImpl);
NM_REGISTER_X86(ComplexPart, ComplexPartImpl);
}  // namespace neomeg::dnn::x86
