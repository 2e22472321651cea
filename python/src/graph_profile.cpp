#include "graph_profile.h"

#include <pybind11/stl.h>

#include <string>
#include <type_traits>
#include <variant>

#include "neomeg/graph/operator_node.h"
#include "neomeg/graph/var_node.h"
#include "neomeg/op/op_def.h"

namespace neomeg::python {
namespace {

py::object param_value(const ParamValue& value) {
    return std::visit(
            [](const auto& v) -> py::object {
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, EnumValue>)
                    return py::str(v.name);
                else if constexpr (std::is_same_v<T, dnn::DTypeEnum>)
                    return py::str(dnn::DType(v).name());
                else
                    return py::cast(v);
            },
            value);
}

py::dict var_info(const graph::VarNode* v) {
    py::dict d;
    d["id"] = v->id();
    d["name"] = v->name();
    py::list shape;
    for (size_t i = 0; i < v->shape().ndim; ++i)
        shape.append(v->shape()[i]);
    d["shape"] = shape;
    d["dtype"] = v->dtype().name();
    return d;
}

}  // namespace

py::list last_run_profile(const graph::Executable& exe) {
    py::list steps;
    for (const graph::Executable::StepTime& t : exe.last_run_profile()) {
        const graph::OperatorNode* node = t.node;
        py::dict params;
        for (const ParamField& f : node->op().param_fields())
            params[py::str(f.name)] = param_value(f.value);
        py::list inputs, outputs;
        for (const graph::VarNode* v : node->inputs())
            inputs.append(var_info(v));
        for (const graph::VarNode* v : node->outputs())
            outputs.append(var_info(v));
        py::dict step;
        step["id"] = node->id();
        step["type"] = node->op().name();
        step["name"] = node->op().to_string();
        step["params"] = params;
        step["comp_node"] = node->comp_node().to_string();
        step["inputs"] = inputs;
        step["outputs"] = outputs;
        step["start"] = t.start_s;
        step["end"] = t.end_s;
        steps.append(step);
    }
    return steps;
}

}  // namespace neomeg::python
