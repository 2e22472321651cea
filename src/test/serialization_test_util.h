// Helpers of the model file tests: one-op sample graphs, and running a graph's outputs on given
// input values so that an original and its loaded copy can be compared byte for byte.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph_test_util.h"
#include "neomeg/op/op_defs.h"
#include "neomeg/serialization/model_file.h"

namespace neomeg::serialization::test {

using graph::ComputingGraph;
using graph::VarNode;

template <class E>
EnumValue ev(E e) {
    return EnumValue{static_cast<uint32_t>(e), {}};
}

// An op by name with some fields set.
inline std::shared_ptr<OpDef> make_op(const std::string& name,
                                      const std::vector<ParamField>& fields = {}) {
    auto op = make_op_def(name);
    EXPECT_TRUE(op) << name;
    for (const auto& f : fields)
        op->set_param_field(f.name, f.value);
    return op;
}

// Host bytes of `shape` in `dtype` from `values` (cycled), or random floats in [-1, 1).
inline std::vector<uint8_t> host_values(const dnn::TensorShape& shape, dnn::DType dtype,
                                        const std::vector<float>& values, std::mt19937& rng) {
    size_t n = shape.total_nr_elems();
    std::vector<uint8_t> out(dtype.size(n));
    std::uniform_real_distribution<float> d(-1, 1);
    for (size_t i = 0; i < n; ++i) {
        float x = values.empty() ? d(rng) : values[i % values.size()];
        if (dtype == dnn::dtype::Float32)
            std::memcpy(out.data() + 4 * i, &x, 4);
        else if (dtype == dnn::dtype::Int32) {
            int32_t v = static_cast<int32_t>(x);
            std::memcpy(out.data() + 4 * i, &v, 4);
        } else if (dtype == dnn::dtype::Complex64) {
            float z[2] = {x, values.empty() ? d(rng) : -x};
            std::memcpy(out.data() + 8 * i, z, 8);
        } else if (dtype.size() == 1)
            out[i] = static_cast<uint8_t>(x != 0);
        else
            ADD_FAILURE() << "host_values: dtype " << dtype.name();
    }
    return out;
}

// Runs `outputs` of `g` with the named inputs' host bytes; each output's bytes.
inline std::vector<std::vector<uint8_t>> run_graph(
        const ComputingGraph& g, const std::vector<VarNode*>& outputs,
        const std::map<std::string, std::vector<uint8_t>>& inputs) {
    auto exe = g.compile(outputs);
    for (const auto& slot : exe->inputs())
        exe->set_input(slot.name, DeviceTensor::from_host(inputs.at(slot.name).data(), slot.layout,
                                                          slot.layout.dtype, slot.comp_node));
    exe->execute();
    std::vector<std::vector<uint8_t>> out;
    for (size_t i = 0; i < outputs.size(); ++i) {
        const auto& t = exe->output(i);
        out.emplace_back(t.dtype().size(t.shape().total_nr_elems()));
        if (!out.back().empty())
            t.to_host(out.back().data());
    }
    return out;
}

}  // namespace neomeg::serialization::test
