// Helpers of the graph tests: float tensors to and from the host, ops with their params, and a
// reference that runs a graph's ops one by one on the naive kernels.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "neomeg/graph/graph.h"
#include "neomeg/op/defs/elemwise.h"
#include "neomeg/op/defs/reduce.h"
#include "neomeg/op/defs/views.h"
#include "neomeg/op/op_def.h"
#include "neomeg/op/view_params.h"

namespace neomeg::graph::test {

inline CompNode cpu() {
    return CompNode::load("cpu0");
}

// A node on the naive kernels, whatever the default backend. NEOMEG_BACKEND is read when a node
// is first loaded; no other test loads cpu11.
inline CompNode naive_cpu() {
    static CompNode cn = [] {
        const char* old = std::getenv("NEOMEG_BACKEND");
        std::string saved = old ? old : "";
        ::setenv("NEOMEG_BACKEND", "naive", 1);
        CompNode n = CompNode::load("cpu11");
        if (old)
            ::setenv("NEOMEG_BACKEND", saved.c_str(), 1);
        else
            ::unsetenv("NEOMEG_BACKEND");
        return n;
    }();
    return cn;
}

inline DeviceTensor tensor(const std::vector<float>& v, const dnn::TensorShape& shape,
                           CompNode cn = cpu()) {
    EXPECT_EQ(v.size(), shape.total_nr_elems());
    return DeviceTensor::from_host(v.data(), shape, dnn::dtype::Float32, cn);
}

inline std::vector<float> floats(const DeviceTensor& t) {
    std::vector<float> v(t.shape().total_nr_elems());
    t.to_host(v.data());
    return v;
}

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float lo = -1, float hi = 1) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v)
        x = d(rng);
    return v;
}

inline ops::Elemwise elemwise(dnn::param::Elemwise::Mode mode) {
    dnn::param::Elemwise p;
    p.mode = mode;
    return ops::Elemwise(p);
}
using Mode = dnn::param::Elemwise::Mode;

inline ops::Reduce reduce(dnn::param::Reduce::Mode mode, int32_t axis) {
    dnn::param::Reduce p;
    p.mode = mode;
    p.axis = axis;
    return ops::Reduce(p);
}

inline ops::Reshape reshape(std::vector<int32_t> shape) {
    param::Reshape p;
    p.shape = std::move(shape);
    return ops::Reshape(p);
}

// The ops `outputs` need, run one by one on naive_cpu(), each output in storage of its own: no
// planning, no passes, the reference kernels. `inputs` gives each input var's values.
inline std::vector<std::vector<float>> reference_eval(
        const ComputingGraph& g, const std::vector<VarNode*>& outputs,
        const std::map<const VarNode*, std::vector<float>>& inputs) {
    CompNode ncn = naive_cpu();
    std::map<const VarNode*, DeviceTensor> values;
    auto value_of = [&](const VarNode* v) -> DeviceTensor {
        if (auto it = values.find(v); it != values.end())
            return it->second;
        if (v->kind() == VarNode::Kind::Input)
            return values[v] = tensor(inputs.at(v), v->shape(), ncn);
        return values[v] = tensor(floats(v->value()), v->shape(), ncn);  // a constant
    };
    for (OperatorNode* node : g.topo_order(outputs)) {
        auto op = node->op().clone();
        std::vector<DeviceTensor> in;
        std::vector<dnn::TensorLayout> in_layouts;
        std::vector<dnn::TensorND> in_nd, out_nd;
        for (VarNode* v : node->inputs()) {
            in.push_back(value_of(v));
            in_layouts.push_back(in.back().layout());
            in_nd.push_back(in.back().as_nd());
        }
        std::vector<dnn::TensorShape> preset;
        if (node->inputs().empty())
            for (VarNode* v : node->outputs())
                preset.push_back(v->shape());
        auto out_layouts = op->infer_layouts(ncn, in_layouts, preset);
        std::vector<DeviceTensor> out;
        for (const auto& l : out_layouts) {
            out.push_back(DeviceTensor::empty(l, l.dtype, ncn));
            out_nd.push_back(out.back().as_nd());
        }
        size_t ws = op->workspace_in_bytes(ncn, in_layouts, out_layouts);
        Blob blob(ncn, ws);
        op->exec(ncn, in_nd, out_nd, {blob.ptr(), ws});
        for (size_t i = 0; i < out.size(); ++i)
            values[node->outputs()[i]] = out[i];
    }
    std::vector<std::vector<float>> result;
    for (VarNode* v : outputs)
        result.push_back(floats(value_of(v)));
    return result;
}

inline void expect_near(const std::vector<float>& got, const std::vector<float>& want,
                        float tol = 1e-4f) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
}

// Compiles `outputs` with every pass but a second layout propagation (the layouts already in
// the graph are those under test), runs it on `inputs` and checks each output against `want`.
inline void expect_compiled_near(ComputingGraph& g, const std::vector<VarNode*>& outputs,
                                 const std::map<const VarNode*, std::vector<float>>& inputs,
                                 const std::vector<std::vector<float>>& want, float tol = 1e-4f) {
    CompileOptions o;
    o.propagate_layouts = false;
    auto exe = g.compile(outputs, o);
    for (auto& [v, values] : inputs)
        exe->set_input(v->name(), tensor(values, v->shape()));
    exe->execute();
    for (size_t i = 0; i < outputs.size(); ++i) {
        SCOPED_TRACE(testing::Message() << "output " << i);
        expect_near(floats(exe->output(i)), want[i], tol);
    }
}

}  // namespace neomeg::graph::test
