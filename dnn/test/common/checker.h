// Checker: runs an operator on a target handle and on the naive reference with the same random
// inputs and compares the outputs within a per-dtype tolerance.
//
//   Checker<Elemwise> c(handle);           // target handle (naive compares naive with itself,
//   c.set_param(p).set_dtype(0, dtype::Float16)    which still checks strided/broadcast inputs
//    .execs({{2, 3}, {1, 3}});                     against their contiguous copies)
//
// Inputs are random in [lo, hi) per input (set_range); exec_layouts gives inputs non-contiguous
// or broadcast layouts on the target side, while the reference always sees contiguous copies.
// set_noncontiguous(true) pads every input's rows on the target side. The settings are
// CheckerSettings' (common/checker_settings.h), which CudaChecker shares.
#pragma once

#include "common/checker_settings.h"

namespace neomeg::dnn::test {

template <class Op>
class Checker : public CheckerSettings<Checker<Op>, Op> {
public:
    explicit Checker(Handle* target, uint32_t seed = 42)
        : CheckerSettings<Checker<Op>, Op>(seed), m_target(target) {}

    // Runs with exactly these input layouts on the target side.
    Checker& exec_layouts(const std::vector<TensorLayout>& layouts) {
        std::vector<HostTensor> target_in, ref_in;
        this->make_inputs(layouts, target_in, ref_in);
        auto target_op = m_target->create_operator<Op>();
        target_op->param() = this->m_param;
        auto ref_op = this->reference_op();
        auto got = run_op(*target_op, target_in, this->m_out_shapes);
        auto want = run_op(*ref_op, ref_in, this->m_out_shapes);
        compare(got, want, *target_op, layouts, "");
        if (this->m_noncontig) {
            // The same run writing into padded output views: kernels must honour output strides
            // and leave the padding alone.
            auto padded = run_op_into_padded(*target_op, target_in, want);
            compare(padded, want, *target_op, layouts, " (padded output)");
        }
        return *this;
    }

private:
    void compare(const std::vector<HostTensor>& got, const std::vector<HostTensor>& want,
                 const OperatorBase& op, const std::vector<TensorLayout>& layouts,
                 const char* what) const {
        EXPECT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size() && i < want.size(); ++i)
            EXPECT_TRUE(tensors_near(got[i], want[i], this->epsilon_for(want[i].dtype())))
                    << "output " << i << what << " of " << op.param_str() << " on "
                    << m_target->name() << ", inputs " << this->describe(layouts);
    }

    static std::vector<HostTensor> run_op_into_padded(OperatorBase& op,
                                                      const std::vector<HostTensor>& inputs,
                                                      const std::vector<HostTensor>& like) {
        std::vector<TensorLayout> in_layouts, out_layouts;
        std::vector<TensorND> in_nds, out_nds;
        for (auto& t : inputs) {
            in_layouts.push_back(t.layout());
            in_nds.push_back(t.nd());
        }
        std::vector<HostTensor> outs;
        for (auto& w : like) {
            outs.emplace_back(padded_layout(w.layout()));
            out_layouts.push_back(outs.back().layout());
        }
        for (auto& o : outs)
            out_nds.push_back(o.nd());
        std::vector<std::byte> ws(op.get_workspace_in_bytes(in_layouts, out_layouts));
        op.exec(in_nds, out_nds, {ws.data(), ws.size()});
        return outs;
    }

    Handle* m_target;
};

}  // namespace neomeg::dnn::test
