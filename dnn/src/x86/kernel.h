// The frame of an x86 oneDNN kernel: per (layouts, params) it plans once (primitive descriptor,
// primitive, reorders, workspace offsets) and reuses that plan on every later call with the same
// key, because the eager runtime keeps one operator object per op and calls it again and again;
// where the kernel declines a case (a dtype, a rank, an empty tensor oneDNN does not take), it
// delegates to the naive kernel of the same operator, so no case gets a wrong answer or an error
// naive would not give.
#pragma once

#include <array>
#include <memory>
#include <utility>
#include <vector>

#include "src/x86/dnnl_util.h"
#include "src/x86/handle.h"
#include "src/x86/kernel_report.h"
#include "src/x86/lowp_plan.h"

namespace neomeg::dnn::x86 {

// The most tensors an operator with an x86 kernel takes: LSTMBackward's seven inputs and six
// outputs (do_exec's arrays hold them).
inline constexpr size_t kNumTensors = 13;

// The layouts of one call and the params it ran with.
template <class Param>
struct PlanKey {
    std::array<TensorLayout, kNumTensors> layouts;
    Param param;

    // Compares in place: building a key per call would copy the params, whose vectors (a
    // convolution's stride, padding, dilation) allocate.
    bool matches(std::span<const TensorLayout> inputs, std::span<const TensorLayout> outputs,
                 const Param& p) const {
        for (size_t i = 0; i < inputs.size(); ++i)
            if (!layouts[i].eq_layout(inputs[i]))
                return false;
        for (size_t i = 0; i < outputs.size(); ++i)
            if (!layouts[inputs.size() + i].eq_layout(outputs[i]))
                return false;
        return param == p;
    }
};

template <class Op>
class DnnlKernel : public Op, public KernelReport {
public:
    using Param = typename Op::Param;
    using Op::Op;

    size_t get_workspace_in_bytes(std::span<const TensorLayout> inputs,
                                  std::span<const TensorLayout> outputs) final {
        if (Plan* plan = plan_for(inputs, outputs))
            return plan->workspace_in_bytes();
        return naive().get_workspace_in_bytes(inputs, outputs);
    }

    const char* last_kernel() const final { return m_last; }

protected:
    // The plan for these layouts under the current params, or nullptr to delegate to naive.
    // Called once per key; oneDNN errors (an unimplemented case) count as declining.
    virtual std::unique_ptr<Plan> make_plan(std::span<const TensorLayout> inputs,
                                            std::span<const TensorLayout> outputs) = 0;

    // Whether a 16-bit float call that make_plan declines (oneDNN has no kernel for its dtype on
    // this CPU) runs make_plan's float32 plan between conversions (lowp_plan.h) before naive.
    virtual bool lowp_in_float32() const { return false; }
    // Whether such a call may hold float32 tensors beside the 16-bit ones (is_lowp_call).
    virtual bool lowp_float32_operands() const { return false; }

    HandleImpl& x86_handle() const { return *static_cast<HandleImpl*>(this->handle()); }

    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace workspace) final {
        NM_THROW_IF(inputs.size() + outputs.size() > kNumTensors, ParamError, this->name(),
                    ": more tensors than x86::kNumTensors");
        std::array<TensorLayout, kNumTensors> layouts;
        std::array<TensorND, kNumTensors> tensors;
        for (size_t i = 0; i < inputs.size(); ++i) {
            layouts[i] = inputs[i].layout;
            tensors[i] = inputs[i];
        }
        for (size_t i = 0; i < outputs.size(); ++i) {
            layouts[inputs.size() + i] = outputs[i].layout;
            tensors[inputs.size() + i] = outputs[i];
        }
        std::span<const TensorLayout> all(layouts);
        if (Plan* plan = plan_for(all.first(inputs.size()), all.subspan(inputs.size()))) {
            plan->run(tensors, workspace, x86_handle().stream());
            m_last = plan->name();
        } else {
            naive().exec_unchecked(inputs, outputs, workspace);
            m_last = "naive";
            note_naive_run(*this, inputs, outputs);
        }
    }

private:
    // An operator object serves one op of a model and sees a shape or two (the last, smaller
    // batch), so a short list searched linearly beats hashing layouts; the bound keeps primitives
    // (and their JIT code) from piling up when shapes keep changing.
    static constexpr size_t kMaxPlans = 16;

    Plan* plan_for(std::span<const TensorLayout> inputs, std::span<const TensorLayout> outputs) {
        if (m_generation != fork_generation()) {
            m_plans.clear();
            m_generation = fork_generation();
        }
        if (m_hit < m_plans.size() && m_plans[m_hit].first.matches(inputs, outputs, this->m_param))
            return m_plans[m_hit].second.get();
        for (size_t i = 0; i < m_plans.size(); ++i) {
            if (m_plans[i].first.matches(inputs, outputs, this->m_param)) {
                m_hit = i;
                return m_plans[i].second.get();
            }
        }
        PlanKey<Param> key;
        for (size_t i = 0; i < inputs.size(); ++i)
            key.layouts[i] = inputs[i];
        for (size_t i = 0; i < outputs.size(); ++i)
            key.layouts[inputs.size() + i] = outputs[i];
        key.param = this->m_param;
        std::unique_ptr<Plan> plan;
        try {
            plan = make_plan(inputs, outputs);
        } catch (const dnnl::error&) {
            plan = nullptr;
        }
        if (!plan && lowp_in_float32() && is_lowp_call(inputs, outputs, lowp_float32_operands())) {
            try {
                plan = plan_in_float32(inputs, outputs,
                                       [this](auto i, auto o) { return make_plan(i, o); });
            } catch (const dnnl::error&) {
                plan = nullptr;
            }
        }
        if (m_plans.size() == kMaxPlans)
            m_plans.erase(m_plans.begin());
        m_plans.emplace_back(std::move(key), std::move(plan));
        m_hit = m_plans.size() - 1;
        return m_plans.back().second.get();
    }

    Op& naive() {
        if (!m_naive)
            m_naive = x86_handle().template create_naive_operator<Op>();
        // Compared first: assigning a convolution's params copies (allocates) its vectors.
        if (!(m_naive->param() == this->m_param))
            m_naive->param() = this->m_param;
        return *m_naive;
    }

    std::vector<std::pair<PlanKey<Param>, std::unique_ptr<Plan>>> m_plans;
    size_t m_hit = 0;
    unsigned m_generation = fork_generation();
    std::unique_ptr<Op> m_naive;
    const char* m_last = "";
};

}  // namespace neomeg::dnn::x86
