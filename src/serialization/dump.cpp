// serialization::dump: a graph's needed part as a model file (model.fbs).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <system_error>

#include "neomeg/graph/value_infer.h"
#include "neomeg/serialization/model_file.h"
#include "neomeg/serialization/model_generated.h"
#include "param_codec.h"

namespace neomeg::serialization {
namespace {

using dnn::str_cat;
using graph::OperatorNode;
using graph::VarNode;

std::vector<int64_t> dims_of(const dnn::TensorShape& s) {
    return {s.shape.begin(), s.shape.begin() + s.ndim};
}

}  // namespace

bool needs_preset_shapes(const OperatorNode& node) {
    // The loading graph reads a value-shaped op's shapes from its shape input's value (a recorded
    // one would fix a shape that follows the inputs' shapes or the data).
    if (graph::shape_value_input(node.op()))
        return false;
    std::vector<dnn::TensorLayout> in;
    for (const VarNode* v : node.inputs())
        in.push_back(v->layout());
    try {
        auto out = node.op().infer_layouts(node.comp_node(), in, {});
        if (out.size() != node.outputs().size())
            return true;
        for (size_t i = 0; i < out.size(); ++i)
            if (!out[i].eq_shape(node.outputs()[i]->shape()) ||
                out[i].dtype != node.outputs()[i]->dtype())
                return true;
        return false;
    } catch (const dnn::Error&) {
        return true;
    }
}

namespace {

class Writer {
public:
    Writer(const graph::ComputingGraph& g, std::span<const NamedVar> outputs, const DumpOptions& o)
        : m_graph(g), m_outputs(outputs), m_opt(o) {}

    std::vector<uint8_t> run() {
        std::vector<VarNode*> out_vars;
        std::set<std::string> out_names;
        for (const auto& o : m_outputs) {
            if (!o.var || !m_graph.owns(o.var))
                throw ModelError(str_cat("dump: output '", o.name, "' is not a var of the graph"));
            if (o.name.empty() || !out_names.insert(o.name).second)
                throw ModelError(str_cat("dump: output names must be non-empty and distinct, got '",
                                         o.name, "'"));
            out_vars.push_back(o.var);
        }
        if (out_vars.empty())
            throw ModelError("dump: no outputs");
        auto nodes = m_graph.topo_order(out_vars);

        // The vars the outputs need: inputs and constants in creation order, then node outputs.
        std::set<const VarNode*> needed(out_vars.begin(), out_vars.end());
        for (const OperatorNode* n : nodes)
            needed.insert(n->inputs().begin(), n->inputs().end());
        std::vector<VarNode*> inputs, consts;
        for (VarNode* v : m_graph.vars()) {
            if (!needed.count(v))
                continue;
            if (v->kind() == VarNode::Kind::Input)
                inputs.push_back(v);
            else if (v->kind() == VarNode::Kind::Const)
                consts.push_back(v);
        }
        for (VarNode* v : inputs)
            number(v);
        for (VarNode* v : consts)
            number(v);

        auto fb_inputs = write_inputs(inputs);
        std::vector<flatbuffers::Offset<fbs::Constant>> fb_consts;
        for (VarNode* v : consts)
            fb_consts.push_back(write_const(*v));
        std::vector<flatbuffers::Offset<fbs::OpNode>> fb_nodes;
        for (const OperatorNode* n : nodes)
            fb_nodes.push_back(write_node(*n));
        std::vector<flatbuffers::Offset<fbs::Output>> fb_outputs;
        for (const auto& o : m_outputs)
            fb_outputs.push_back(
                    fbs::CreateOutput(m_b, m_b.CreateString(o.name), m_number.at(o.var)));

        auto meta = fbs::CreateMetadata(
                m_b, m_b.CreateString(m_opt.producer_name),
                m_b.CreateString(m_opt.producer_version.empty() ? neomeg_version()
                                                                : m_opt.producer_version),
                m_b.CreateString(m_opt.user_info));
        auto model = fbs::CreateModel(m_b, kFormatVersion, meta, m_b.CreateVector(fb_inputs),
                                      m_b.CreateVector(fb_consts), m_b.CreateVector(fb_nodes),
                                      m_b.CreateVector(fb_outputs));
        fbs::FinishModelBuffer(m_b, model);
        return {m_b.GetBufferPointer(), m_b.GetBufferPointer() + m_b.GetSize()};
    }

private:
    void number(const VarNode* v) { m_number.emplace(v, static_cast<uint32_t>(m_number.size())); }

    std::vector<flatbuffers::Offset<fbs::Input>> write_inputs(const std::vector<VarNode*>& inputs) {
        std::set<std::string> names;
        for (const auto& [name, shape] : m_opt.input_shapes) {
            bool found = false;
            for (const VarNode* v : inputs)
                found |= v->name() == name;
            if (!found)
                throw ModelError(str_cat("dump: input_shapes names '", name,
                                         "', which is not an input the outputs need"));
        }
        std::vector<flatbuffers::Offset<fbs::Input>> out;
        for (const VarNode* v : inputs) {
            if (v->name().empty() || !names.insert(v->name()).second)
                throw ModelError(str_cat("dump: input ", v->str(),
                                         " needs a name of its own (non-empty and distinct)"));
            auto sample = dims_of(v->shape());
            auto declared = sample;
            if (auto it = m_opt.input_shapes.find(v->name()); it != m_opt.input_shapes.end()) {
                declared = it->second;
                bool fits = declared.size() == sample.size();
                for (size_t i = 0; fits && i < declared.size(); ++i)
                    fits = declared[i] == -1 || declared[i] == sample[i];
                if (!fits)
                    throw ModelError(str_cat("dump: declared shape of input '", v->name(),
                                             "' does not fit its shape ", v->shape().to_string()));
            }
            out.push_back(fbs::CreateInput(m_b, m_b.CreateString(v->name()),
                                           m_b.CreateString(v->dtype().full_name()),
                                           m_b.CreateVector(declared), m_b.CreateVector(sample)));
        }
        return out;
    }

    flatbuffers::Offset<fbs::Constant> write_const(const VarNode& v) {
        std::vector<uint8_t> data(v.dtype().size(v.shape().total_nr_elems()));
        if (!data.empty())
            v.value().to_host(data.data());
        auto t = fbs::CreateTensor(m_b, m_b.CreateString(v.dtype().full_name()),
                                   m_b.CreateVector(dims_of(v.shape())), m_b.CreateVector(data));
        return fbs::CreateConstant(m_b, m_b.CreateString(v.name()), t);
    }

    flatbuffers::Offset<fbs::OpNode> write_node(const OperatorNode& n) {
        const OpDef& op = n.op();
        const auto* sig =
                op.kind() == OpKind::Custom ? nullptr : detail::find_op_signature(op.name());
        if (!sig)
            throw ModelError(str_cat("dump: ", op.to_string(),
                                     " is outside the operator registry and cannot be saved"));
        auto params = detail::encode_params(sig->param_set, op.param_fields());
        // The params are a flatbuffer of their own: start them 8-byte aligned for their 8-byte
        // fields (the loader copies them to aligned memory anyway).
        m_b.ForceVectorAlignment(params.size(), 1, 8);
        std::vector<uint32_t> in;
        for (const VarNode* v : n.inputs())
            in.push_back(m_number.at(v));
        std::vector<flatbuffers::Offset<fbs::Shape>> shapes;
        if (needs_preset_shapes(n))
            for (const VarNode* v : n.outputs())
                shapes.push_back(fbs::CreateShape(m_b, m_b.CreateVector(dims_of(v->shape()))));
        std::vector<flatbuffers::Offset<flatbuffers::String>> names;
        bool any_name = false;
        for (const VarNode* v : n.outputs())
            any_name |= !v->name().empty();
        if (m_opt.keep_var_names && any_name)
            for (const VarNode* v : n.outputs())
                names.push_back(m_b.CreateString(v->name()));
        for (const VarNode* v : n.outputs())
            number(v);
        return fbs::CreateOpNode(m_b, m_b.CreateString(op.name()), m_b.CreateString(sig->param_set),
                                 m_b.CreateVector(params), m_b.CreateVector(in),
                                 static_cast<uint32_t>(n.outputs().size()),
                                 m_b.CreateVector(shapes), m_b.CreateVector(names));
    }

    const graph::ComputingGraph& m_graph;
    std::span<const NamedVar> m_outputs;
    const DumpOptions& m_opt;
    flatbuffers::FlatBufferBuilder m_b;
    std::map<const VarNode*, uint32_t> m_number;
};

[[noreturn]] void throw_errno(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

std::vector<uint8_t> dump(const graph::ComputingGraph& graph, std::span<const NamedVar> outputs,
                          const DumpOptions& options) {
    return Writer(graph, outputs, options).run();
}

void dump(const graph::ComputingGraph& graph, std::span<const NamedVar> outputs, std::ostream& out,
          const DumpOptions& options) {
    auto bytes = dump(graph, outputs, options);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out)
        throw std::system_error(std::make_error_code(std::errc::io_error),
                                "dump: stream write failed");
}

void dump_file(const graph::ComputingGraph& graph, std::span<const NamedVar> outputs,
               const std::string& path, const DumpOptions& options) {
    auto bytes = dump(graph, outputs, options);
    std::random_device rd;
    std::string tmp = str_cat(path, ".tmp.", ::getpid(), ".", rd());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        throw_errno("dump_file: cannot create " + tmp);
    size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            errno = err;
            throw_errno("dump_file: cannot write " + tmp);
        }
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        int err = errno;
        ::unlink(tmp.c_str());
        errno = err;
        throw_errno("dump_file: cannot sync " + tmp);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        int err = errno;
        ::unlink(tmp.c_str());
        errno = err;
        throw_errno("dump_file: cannot rename " + tmp + " to " + path);
    }
}

const char* neomeg_version() {
    return NEOMEG_VERSION_STRING;
}

}  // namespace neomeg::serialization
