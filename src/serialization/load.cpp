// serialization::load: a model file back into a ComputingGraph. Nothing in the bytes is trusted:
// the flatbuffers verifier checks the structure, then every name, index, shape and byte count is
// checked here before use, and each node goes through ComputingGraph::insert, whose layout rules
// check the op against its inputs.
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <system_error>

#include "mge_import.h"
#include "neomeg/op/op_defs.h"
#include "neomeg/serialization/model_file.h"
#include "neomeg/serialization/model_generated.h"
#include "param_codec.h"
#include "utf8.h"

namespace neomeg::serialization {
namespace {

using dnn::str_cat;
using graph::VarNode;

// No tensor in a model has more bytes than this (2^48: far beyond any real model, and far from
// overflowing size_t in the sums that follow).
constexpr size_t kMaxTensorBytes = size_t(1) << 48;

// Every string in a model (names, dtypes, metadata) is text: one that is not UTF-8 is damage,
// and would break every caller that shows it (Python's str, error messages).
std::string_view sv(const flatbuffers::String* s) {
    if (!s)
        return {};
    std::string_view v = s->string_view();
    if (!valid_utf8(v))
        throw ModelError("model file holds a string that is not valid UTF-8");
    return v;
}

dnn::DType dtype_of(const flatbuffers::String* s, const std::string& what) {
    try {
        return dnn::DType::from_name(sv(s));
    } catch (const dnn::DTypeError&) {
        throw ModelError(str_cat(what, " has unknown dtype '", sv(s), "'"));
    }
}

// Element i of a [long] vector. The verifier checks a vector's alignment for its 4-byte length
// only, so a hostile file can place 8-byte elements off their alignment: read them bytewise.
int64_t dim_at(const flatbuffers::Vector<int64_t>* dims, size_t i) {
    int64_t d;
    std::memcpy(&d, dims->Data() + i * sizeof(int64_t), sizeof d);
    return flatbuffers::EndianScalar(d);
}

// A shape of dims >= 0 (or -1 where `allow_dynamic`) whose bytes in `dtype` stay below the cap.
dnn::TensorShape shape_of(const flatbuffers::Vector<int64_t>* dims, dnn::DType dtype,
                          const std::string& what, bool allow_dynamic = false) {
    dnn::TensorShape s;
    size_t n = dims ? dims->size() : 0;
    if (n > dnn::TensorShape::MAX_NDIM)
        throw ModelError(
                str_cat(what, " has ", n, " dimensions, more than ", dnn::TensorShape::MAX_NDIM));
    s.ndim = n;
    size_t bytes = dtype.size();
    for (size_t i = 0; i < n; ++i) {
        int64_t d = dim_at(dims, i);
        if (d == -1 && allow_dynamic) {
            s.shape[i] = 0;
            continue;
        }
        if (d < 0)
            throw ModelError(str_cat(what, " has dimension ", i, " = ", d));
        s.shape[i] = static_cast<size_t>(d);
        if (__builtin_mul_overflow(bytes, s.shape[i], &bytes) || bytes > kMaxTensorBytes)
            throw ModelError(str_cat(what, " is too large"));
    }
    return s;
}

std::vector<int64_t> dims_vector(const flatbuffers::Vector<int64_t>* dims) {
    std::vector<int64_t> out(dims ? dims->size() : 0);
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = dim_at(dims, i);
    return out;
}

const fbs::Model* verified_root(std::span<const uint8_t> bytes) {
    if (bytes.size() < 8 || !flatbuffers::BufferHasIdentifier(bytes.data(), fbs::ModelIdentifier()))
        throw ModelError(
                "not a NeoMeg model file (no NMEG identifier) nor a MegEngine one (no mgv2)");
    flatbuffers::Verifier v(bytes.data(), bytes.size());
    if (!fbs::VerifyModelBuffer(v))
        throw ModelError("model file is truncated or corrupted (flatbuffers verification failed)");
    const auto* m = fbs::GetModel(bytes.data());
    if (m->format_version() == 0 || m->format_version() > kFormatVersion)
        throw ModelVersionError(str_cat("model file format version ", m->format_version(),
                                        (m->format_version() == 0 ? " is unknown" : " is newer"),
                                        "; this NeoMeg (", neomeg_version(),
                                        ") reads versions 1 to ", kFormatVersion));
    return m;
}

Metadata metadata_of(const fbs::Model* m) {
    Metadata md;
    md.format_version = m->format_version();
    if (const auto* meta = m->metadata()) {
        md.producer_name = sv(meta->producer_name());
        md.producer_version = sv(meta->producer_version());
        md.user_info = sv(meta->user_info());
    }
    return md;
}

class Reader {
public:
    Reader(const fbs::Model* m, const LoadOptions& o) : m_model(m), m_opt(o) {
        m_cn = o.comp_node.valid() ? o.comp_node : CompNode::load("cpu0");
    }

    LoadedGraph run() {
        LoadedGraph out;
        out.graph = std::make_unique<graph::ComputingGraph>();
        m_graph = out.graph.get();
        out.metadata = metadata_of(m_model);
        read_inputs(out);
        read_constants();
        if (const auto* nodes = m_model->nodes())
            for (flatbuffers::uoffset_t i = 0; i < nodes->size(); ++i)
                read_node(i, *nodes->Get(i));
        std::set<std::string> names;
        if (const auto* outputs = m_model->outputs())
            for (const auto* o : *outputs) {
                std::string name(sv(o->name()));
                if (name.empty() || !names.insert(name).second)
                    throw ModelError(str_cat("output name '", name, "' is empty or repeated"));
                if (o->var() >= m_vars.size())
                    throw ModelError(str_cat("output '", name, "' refers to var ", o->var(), " of ",
                                             m_vars.size()));
                out.outputs.push_back({name, m_vars[o->var()]});
            }
        if (out.outputs.empty())
            throw ModelError("model file has no outputs");
        return out;
    }

private:
    void read_inputs(LoadedGraph& out) {
        std::set<std::string> names;
        const auto* inputs = m_model->inputs();
        for (flatbuffers::uoffset_t i = 0; inputs && i < inputs->size(); ++i) {
            const auto* in = inputs->Get(i);
            std::string name(sv(in->name()));
            std::string what = str_cat("input '", name, "'");
            if (name.empty() || !names.insert(name).second)
                throw ModelError(
                        str_cat("input ", i, " has an empty or repeated name '", name, "'"));
            dnn::DType dtype = dtype_of(in->dtype(), what);
            auto declared = dims_vector(in->shape());
            shape_of(in->shape(), dtype, what, /*allow_dynamic=*/true);
            dnn::TensorShape shape = shape_of(in->sample_shape(), dtype, what);
            if (shape.ndim != declared.size())
                throw ModelError(str_cat(what, ": declared and sample shapes differ in rank"));
            for (size_t d = 0; d < declared.size(); ++d)
                if (declared[d] != -1 && static_cast<size_t>(declared[d]) != shape.shape[d])
                    throw ModelError(str_cat(what, ": sample shape ", shape.to_string(),
                                             " does not fit the declared one"));
            if (auto it = m_opt.input_shapes.find(name); it != m_opt.input_shapes.end()) {
                const auto& want = it->second;
                bool fits = want.ndim == declared.size();
                for (size_t d = 0; fits && d < declared.size(); ++d)
                    fits = declared[d] == -1 || static_cast<size_t>(declared[d]) == want.shape[d];
                NM_THROW_IF(!fits, ParamError, "load: shape ", want.to_string(), " for ", what,
                            " does not fit its declared shape (-1 marks a free dimension)");
                shape = want;
            }
            VarNode* v = m_graph->input(name, shape, dtype, m_cn);
            m_vars.push_back(v);
            out.inputs.push_back({name, v, std::move(declared)});
        }
        for (const auto& [name, shape] : m_opt.input_shapes)
            NM_THROW_IF(!names.count(name), ParamError, "load: the model has no input named '",
                        name, "'");
    }

    void read_constants() {
        const auto* consts = m_model->constants();
        for (flatbuffers::uoffset_t i = 0; consts && i < consts->size(); ++i) {
            const auto* c = consts->Get(i);
            std::string what = str_cat("constant ", i, " '", sv(c->name()), "'");
            const auto* t = c->value();
            dnn::DType dtype = dtype_of(t->dtype(), what);
            dnn::TensorShape shape = shape_of(t->shape(), dtype, what);
            size_t bytes = dtype.size(shape.total_nr_elems());
            size_t have = t->data() ? t->data()->size() : 0;
            if (have != bytes)
                throw ModelError(str_cat(what, " of shape ", shape.to_string(), " ", dtype.name(),
                                         " needs ", bytes, " bytes, the file has ", have));
            DeviceTensor value;
            auto* shared = m_opt.shared_constants.get();
            if (shared && i < shared->size()) {
                value = (*shared)[i];
                NM_THROW_IF(!value.valid() || !value.shape().eq_shape(shape) ||
                                    value.dtype() != dtype || value.comp_node() != m_cn,
                            ParamError, "load: shared constant ", i,
                            " does not match the file's (another model, or another comp node)");
            } else {
                value = bytes ? DeviceTensor::from_host(t->data()->data(), shape, dtype, m_cn)
                              : DeviceTensor::empty(shape, dtype, m_cn);
                if (shared)
                    shared->push_back(value);
            }
            m_vars.push_back(m_graph->constant(std::move(value), std::string(sv(c->name()))));
        }
    }

    void read_node(size_t index, const fbs::OpNode& node) {
        std::string type(sv(node.type()));
        std::string what = str_cat("node ", index, " (", type, ")");
        const auto* sig = detail::find_op_signature(type);
        if (!sig)
            throw ModelError(str_cat(what, ": unknown operator '", type,
                                     "'; the model needs a NeoMeg that has it"));
        if (sv(node.param_set()) != sig->param_set)
            throw ModelError(str_cat(what, ": param set '", sv(node.param_set()),
                                     "' is not the operator's (", sig->param_set, ")"));
        auto op = make_op_def(type);
        const auto* params = node.params();
        try {
            auto fields = detail::decode_params(sig->param_set, params ? params->data() : nullptr,
                                                params ? params->size() : 0);
            for (const auto& f : fields)
                op->set_param_field(f.name, f.value);
        } catch (const ModelError& e) {
            throw ModelError(str_cat(what, ": ", e.what()));
        } catch (const dnn::Error& e) {
            throw ModelError(str_cat(what, ": ", e.what()));
        }

        std::vector<VarNode*> inputs;
        if (const auto* in = node.inputs())
            for (uint32_t v : *in) {
                if (v >= m_vars.size())
                    throw ModelError(str_cat(what, ": input var ", v, " is not defined before it (",
                                             m_vars.size(), " vars so far)"));
                inputs.push_back(m_vars[v]);
            }
        size_t n_in = inputs.size(), fixed = static_cast<size_t>(sig->num_inputs);
        if (sig->variadic_inputs ? n_in < fixed : n_in != fixed)
            throw ModelError(str_cat(what, ": ", n_in, " inputs, the operator takes ",
                                     sig->variadic_inputs ? "at least " : "", fixed));

        graph::InsertOptions opt;
        opt.comp_node = m_cn;
        const auto* shapes = node.output_shapes();
        if (shapes && shapes->size() != 0) {
            if (shapes->size() != node.num_outputs())
                throw ModelError(str_cat(what, ": ", shapes->size(), " output shapes for ",
                                         node.num_outputs(), " outputs"));
            for (flatbuffers::uoffset_t i = 0; i < shapes->size(); ++i)
                // The dtype only bounds the size here; the layout rule fixes the real one.
                opt.output_shapes.push_back(shape_of(shapes->Get(i)->dims(), dnn::dtype::Int8,
                                                     str_cat(what, ": output shape ", i)));
        }
        const std::vector<VarNode*>* outs = nullptr;
        try {
            outs = &m_graph->insert(*op, inputs, opt);
        } catch (const dnn::Error& e) {
            throw ModelError(str_cat(what, ": ", e.what()));
        }
        if (outs->size() != node.num_outputs())
            throw ModelError(str_cat(what, ": the file says ", node.num_outputs(),
                                     " outputs, the operator gives ", outs->size()));
        const auto* names = node.output_names();
        if (names && names->size() != 0 && names->size() != outs->size())
            throw ModelError(str_cat(what, ": ", names->size(), " output names for ", outs->size(),
                                     " outputs"));
        for (size_t i = 0; i < outs->size(); ++i) {
            if (names && names->size() != 0)
                (*outs)[i]->set_name(
                        std::string(sv(names->Get(static_cast<flatbuffers::uoffset_t>(i)))));
            m_vars.push_back((*outs)[i]);
        }
    }

    const fbs::Model* m_model;
    const LoadOptions& m_opt;
    CompNode m_cn;
    graph::ComputingGraph* m_graph = nullptr;
    std::vector<VarNode*> m_vars;
};

// flatbuffers reads scalars in place: a buffer at an odd address is copied to an aligned one.
template <class F>
auto on_aligned(std::span<const uint8_t> bytes, F&& f) {
    if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint64_t) == 0)
        return f(bytes);
    std::vector<uint64_t> aligned((bytes.size() + 7) / 8);
    std::memcpy(aligned.data(), bytes.data(), bytes.size());
    return f(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(aligned.data()),
                                      bytes.size()));
}

}  // namespace

std::vector<graph::VarNode*> LoadedGraph::output_vars() const {
    std::vector<graph::VarNode*> out;
    for (const auto& o : outputs)
        out.push_back(o.var);
    return out;
}

LoadedGraph load(std::span<const uint8_t> bytes, const LoadOptions& options) {
    return on_aligned(bytes, [&](std::span<const uint8_t> b) {
        // The format by its first bytes: MegEngine's own files (trace.dump of MegEngine 1.13)
        // go to the importer, which builds the same kind of graph from NeoMeg's operators.
        if (mge::detect(b) != mge::FileKind::NotMegEngine)
            return mge::load(b, options);
        return Reader(verified_root(b), options).run();
    });
}

LoadedGraph load_file(const std::string& path, const LoadOptions& options) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw std::system_error(errno, std::generic_category(), "load_file: cannot open " + path);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    if (in.bad())
        throw std::system_error(errno, std::generic_category(), "load_file: cannot read " + path);
    return load(bytes, options);
}

Metadata read_metadata(std::span<const uint8_t> bytes) {
    return on_aligned(bytes, [](std::span<const uint8_t> b) {
        if (mge::detect(b) == mge::FileKind::FbsV2)
            return mge::read_metadata(b);
        return metadata_of(verified_root(b));
    });
}

}  // namespace neomeg::serialization
