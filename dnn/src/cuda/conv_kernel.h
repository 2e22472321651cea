// The frame of the cuDNN convolution operators: plans cached per (layouts, params) in the operator
// object, the last few kept, as an eager operator object sees one shape or two. The switches that
// change a plan (TF32, measured algorithms, the graph API) are part of its key.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "src/cuda/conv_graph.h"
#include "src/cuda/conv_plan.h"
#include "src/cuda/kernel.h"

namespace neomeg::dnn::cuda {

template <class Op>
class ConvKernel : public CudaKernel<Op> {
public:
    using CudaKernel<Op>::CudaKernel;

protected:
    static constexpr size_t kMaxPlans = 8;

    // The plan for these layouts under the current params (nullptr: cuDNN declines).
    ConvPlan* plan_for(std::span<const TensorLayout> in, std::span<const TensorLayout> out) {
        bool tf32 = Handle::cuda_allow_tf32(), bench = Handle::cuda_benchmark_kernel(),
             graph = conv_graph_enabled();
        for (auto& [key, plan] : m_plans)
            if (matches(key, in, out, tf32, bench, graph))
                return plan.get();
        Key key{{in.begin(), in.end()},
                {out.begin(), out.end()},
                this->m_param,
                tf32,
                bench,
                graph};
        auto plan = build(in, out);
        if (m_plans.size() == kMaxPlans)
            m_plans.erase(m_plans.begin());
        m_plans.emplace_back(std::move(key), std::move(plan));
        return m_plans.back().second.get();
    }

    virtual std::unique_ptr<ConvPlan> build(std::span<const TensorLayout> in,
                                            std::span<const TensorLayout> out) = 0;

    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout> out) override {
        return plan_for(in, out) != nullptr;
    }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout> out) override {
        return plan_for(in, out)->workspace;
    }

private:
    struct Key {
        std::vector<TensorLayout> in, out;
        typename Op::Param param;
        bool tf32, bench, graph;
    };
    bool matches(const Key& k, std::span<const TensorLayout> in, std::span<const TensorLayout> out,
                 bool tf32, bool bench, bool graph) const {
        if (k.in.size() != in.size() || k.out.size() != out.size() || !(k.param == this->m_param) ||
            k.tf32 != tf32 || k.bench != bench || k.graph != graph)
            return false;
        for (size_t i = 0; i < in.size(); ++i)
            if (!k.in[i].eq_layout(in[i]))
                return false;
        for (size_t i = 0; i < out.size(); ++i)
            if (!k.out[i].eq_layout(out[i]))
                return false;
        return true;
    }
    std::vector<std::pair<Key, std::unique_ptr<ConvPlan>>> m_plans;
};

}  // namespace neomeg::dnn::cuda
