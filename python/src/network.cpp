// _imperative_rt.network: the C++ half of megengine.utils.network. A Graph wraps a
// graph::ComputingGraph whose vars Python names by index: load() fills one from a model file
// (NeoMeg's or MegEngine 1.13's, through the same loader as GraphInference), describe() lists the
// nodes some outputs need for Python's OpNode/VarNode objects, and Python builds a fresh Graph
// from those objects (input, constant, insert: ComputingGraph::insert's layout rules check every
// edit) to read the inferred shapes back, optimize it and dump it with the model file's writer.
// Nothing here writes bytes of its own: src/serialization reads and writes the format.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>

#include "dtype_convert.h"
#include "neomeg/graph/executable.h"
#include "neomeg/graph/graph.h"
#include "neomeg/graph/passes.h"
#include "neomeg/serialization/model_file.h"

namespace py = pybind11;

namespace neomeg::python {
namespace {

using graph::VarNode;

py::tuple dims_tuple(const dnn::TensorShape& s) {
    py::tuple t(s.ndim);
    for (size_t i = 0; i < s.ndim; ++i)
        t[i] = s.shape[i];
    return t;
}

// A constant's value as numpy (bfloat16 widened to float32).
py::array to_numpy(const DeviceTensor& v) {
    std::vector<py::ssize_t> dims(v.shape().ndim);
    for (size_t i = 0; i < dims.size(); ++i)
        dims[i] = static_cast<py::ssize_t>(v.shape()[i]);
    size_t n = v.shape().total_nr_elems();
    if (v.dtype() == dnn::dtype::BFloat16) {
        std::vector<uint16_t> raw(n);
        if (n)
            v.to_host(raw.data());
        py::array_t<float> out(dims);
        for (size_t i = 0; i < n; ++i) {
            uint32_t bits = static_cast<uint32_t>(raw[i]) << 16;
            std::memcpy(out.mutable_data() + i, &bits, sizeof bits);
        }
        return out;
    }
    py::array out(dtype_to_numpy(v.dtype()), dims);
    if (n)
        v.to_host(out.mutable_data());
    return out;
}

// A numpy array (MegEngine's narrowing: float64 -> float32, int64 -> int32) as a host tensor.
DeviceTensor from_numpy(const py::array& value) {
    dnn::DType dt = dtype_from_numpy(value.dtype());
    auto arr = py::array::ensure(value, py::array::c_style | py::array::forcecast);
    if (!arr.dtype().is(dtype_to_numpy(dt)))
        // astype, not ascontiguousarray: that one makes a 0-d array 1-d.
        arr = arr.attr("astype")(dtype_to_numpy(dt), py::arg("order") = "C");
    std::vector<size_t> dims(arr.shape(), arr.shape() + arr.ndim());
    return DeviceTensor::from_host(arr.data(), dnn::TensorShape(dims), dt, CompNode::load("cpu0"));
}

class Graph {
public:
    Graph() : m_graph(std::make_unique<graph::ComputingGraph>()), m_cn(CompNode::load("cpu0")) {}

    static Graph load(const py::object& src) {
        serialization::LoadedGraph lg;
        if (py::isinstance<py::bytes>(src) || py::isinstance<py::bytearray>(src) ||
            py::isinstance<py::memoryview>(src)) {
            py::buffer_info buf = py::buffer(src).request();
            std::span<const uint8_t> bytes(static_cast<const uint8_t*>(buf.ptr),
                                           static_cast<size_t>(buf.size * buf.itemsize));
            lg = serialization::load(bytes);
        } else {
            auto path = py::module_::import("os").attr("fspath")(src).cast<std::string>();
            py::gil_scoped_release release;
            lg = serialization::load_file(path);
        }
        Graph g;
        g.m_graph = std::move(lg.graph);
        for (const auto& in : lg.inputs)
            g.m_declared[in.var] = in.declared_shape;
        g.m_outputs.reserve(lg.outputs.size());
        for (const auto& o : lg.outputs)
            g.m_outputs.emplace_back(o.name, g.index_of(o.var));
        const auto& md = lg.metadata;
        g.m_metadata = {{"format_version", std::to_string(md.format_version)},
                        {"producer_name", md.producer_name},
                        {"producer_version", md.producer_version},
                        {"user_info", md.user_info}};
        return g;
    }

    size_t input(const std::string& name, const std::vector<size_t>& shape,
                 const py::object& dtype) {
        return index_of(m_graph->input(name, dnn::TensorShape(shape), dtype_from_py(dtype), m_cn));
    }

    size_t constant(const DeviceTensor& value, const std::string& name) {
        return index_of(m_graph->constant(value, name));
    }

    std::vector<size_t> insert(const OpDef& op, const std::vector<size_t>& inputs,
                               const std::optional<std::vector<std::vector<size_t>>>& shapes) {
        std::vector<VarNode*> in;
        for (size_t i : inputs)
            in.push_back(at(i));
        graph::InsertOptions opt;
        opt.comp_node = m_cn;
        if (shapes)
            for (const auto& s : *shapes)
                opt.output_shapes.emplace_back(s);
        std::vector<size_t> out;
        for (VarNode* v : m_graph->insert(op, in, opt))
            out.push_back(index_of(v));
        return out;
    }

    void set_name(size_t i, const std::string& name) { at(i)->set_name(name); }

    // (name, shape, dtype name, shape is dynamic) of var `i`.
    py::tuple var(size_t i) {
        const VarNode* v = at(i);
        return py::make_tuple(v->name(), dims_tuple(v->shape()), v->dtype().full_name(),
                              v->shape_dynamic());
    }

    // What `outputs` need, for Python's objects: {"inputs": [(index, declared shape or None)],
    // "consts": [(index, value)], "oprs": [(op, input indices, output indices, preset shapes
    // or None)]}, inputs and constants in creation (file) order, operators in topological order.
    py::dict describe(const std::vector<size_t>& outputs) {
        std::vector<VarNode*> outs;
        for (size_t i : outputs)
            outs.push_back(at(i));
        auto nodes = m_graph->topo_order(outs);
        std::map<size_t, VarNode*> sources;  // by id: creation order
        auto note = [&](VarNode* v) {
            if (v->kind() != VarNode::Kind::Computed)
                sources.emplace(v->id(), v);
        };
        for (VarNode* v : outs)
            note(v);
        py::list oprs;
        for (graph::OperatorNode* n : nodes) {
            std::vector<size_t> in, out;
            for (VarNode* v : n->inputs()) {
                note(v);
                in.push_back(index_of(v));
            }
            for (VarNode* v : n->outputs())
                out.push_back(index_of(v));
            py::object presets = py::none();
            if (serialization::needs_preset_shapes(*n)) {
                py::list shapes;
                for (VarNode* v : n->outputs())
                    shapes.append(dims_tuple(v->shape()));
                presets = shapes;
            }
            oprs.append(py::make_tuple(py::cast(n->op().clone()), in, out, presets));
        }
        py::list inputs, consts;
        for (auto [id, v] : sources) {
            if (v->kind() == VarNode::Kind::Input) {
                auto d = m_declared.find(v);
                inputs.append(py::make_tuple(
                        index_of(v), d == m_declared.end() ? py::object(py::none())
                                                           : py::object(py::cast(d->second))));
            } else {
                consts.append(py::make_tuple(index_of(v), v->value()));
            }
        }
        py::dict d;
        d["inputs"] = inputs;
        d["consts"] = consts;
        d["oprs"] = oprs;
        return d;
    }

    // trace.dump's optimize_for_inference passes on this graph; returns the outputs' new indices.
    std::vector<size_t> optimize(const std::vector<size_t>& outputs, bool fuse_conv_bias) {
        std::vector<VarNode*> outs;
        for (size_t i : outputs)
            outs.push_back(at(i));
        graph::fold_constants(*m_graph, outs);
        graph::eliminate_common_subexpressions(*m_graph, outs);
        graph::fold_batch_norm(*m_graph, outs);
        if (fuse_conv_bias)
            graph::fuse_conv_bias(*m_graph, outs);
        graph::eliminate_dead_code(*m_graph, outs);
        m_index.clear();
        m_vars.clear();
        std::vector<size_t> result;
        for (VarNode* v : outs)
            result.push_back(index_of(v));
        return result;
    }

    py::bytes dump(const std::vector<std::pair<std::string, size_t>>& outputs,
                   const std::string& user_info, bool keep_var_names,
                   const std::map<std::string, std::vector<int64_t>>& input_shapes) {
        std::vector<serialization::NamedVar> named;
        for (const auto& [name, i] : outputs)
            named.push_back({name, at(i)});
        serialization::DumpOptions opt;
        opt.user_info = user_info;
        opt.keep_var_names = keep_var_names;
        opt.input_shapes = input_shapes;
        std::vector<uint8_t> bytes = serialization::dump(*m_graph, named, opt);
        return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }

    // The values of `outputs` (VarNode.numpy()): what they need compiled and run once. The
    // graph's inputs have no values here, so outputs that need one are a ValueError naming them.
    std::vector<py::array> run(const std::vector<size_t>& outputs) {
        std::vector<VarNode*> outs;
        for (size_t i : outputs)
            outs.push_back(at(i));
        auto exe = m_graph->compile(outs);
        if (!exe->inputs().empty()) {
            std::string names;
            for (const auto& in : exe->inputs())
                names += (names.empty() ? "" : ", ") + in.name;
            throw py::value_error("the value depends on the input(s) " + names +
                                  ", which have no value in the network; dump it and run it "
                                  "with the inputs fed (GraphInference) instead");
        }
        {
            py::gil_scoped_release release;
            exe->execute();
        }
        std::vector<py::array> values;
        for (size_t i = 0; i < outs.size(); ++i)
            values.push_back(to_numpy(exe->output(i)));
        return values;
    }

    const std::vector<std::pair<std::string, size_t>>& outputs() const { return m_outputs; }
    const std::map<std::string, std::string>& metadata() const { return m_metadata; }

private:
    size_t index_of(VarNode* v) {
        auto [it, fresh] = m_index.emplace(v, m_vars.size());
        if (fresh)
            m_vars.push_back(v);
        return it->second;
    }
    VarNode* at(size_t i) const {
        if (i >= m_vars.size())
            throw py::index_error("network graph: no var " + std::to_string(i));
        return m_vars[i];
    }

    std::unique_ptr<graph::ComputingGraph> m_graph;
    CompNode m_cn;
    std::vector<VarNode*> m_vars;
    std::unordered_map<const VarNode*, size_t> m_index;
    std::map<const VarNode*, std::vector<int64_t>> m_declared;
    std::vector<std::pair<std::string, size_t>> m_outputs;
    std::map<std::string, std::string> m_metadata;
};

}  // namespace

void init_network(py::module_& m) {
    auto n = m.def_submodule("network", "The graph behind megengine.utils.network.Network.");
    py::class_<DeviceTensor>(n, "Value", "A constant's value, held once (not copied per build).")
            .def(py::init(&from_numpy), py::arg("array"))
            .def("numpy", &to_numpy)
            .def_property_readonly("shape",
                                   [](const DeviceTensor& v) { return dims_tuple(v.shape()); })
            .def_property_readonly("dtype",
                                   [](const DeviceTensor& v) { return v.dtype().full_name(); });
    py::class_<Graph>(n, "Graph", "A computing graph whose vars are numbered for Python.")
            .def(py::init<>())
            .def_static("load", &Graph::load, py::arg("model"),
                        "Loads a model file (path or bytes): NeoMeg's or MegEngine 1.13's.")
            .def("input", &Graph::input, py::arg("name"), py::arg("shape"), py::arg("dtype"))
            .def("constant", &Graph::constant, py::arg("value"), py::arg("name"))
            .def("insert", &Graph::insert, py::arg("op"), py::arg("inputs"),
                 py::arg("shapes") = py::none())
            .def("set_name", &Graph::set_name, py::arg("index"), py::arg("name"))
            .def("var", &Graph::var, py::arg("index"))
            .def("describe", &Graph::describe, py::arg("outputs"))
            .def("optimize", &Graph::optimize, py::arg("outputs"), py::arg("fuse_conv_bias"))
            .def("dump", &Graph::dump, py::arg("outputs"), py::arg("user_info"),
                 py::arg("keep_var_names"), py::arg("input_shapes"))
            .def("run", &Graph::run, py::arg("outputs"),
                 "The values of vars `outputs`, which must need no input.")
            .def_property_readonly("outputs", &Graph::outputs)
            .def_property_readonly("metadata", &Graph::metadata);
}

}  // namespace neomeg::python
