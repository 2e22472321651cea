// mge::load: a MegEngine FBS_V2 model file into a NeoMeg graph. The file's structure is checked
// by the flatbuffers verifier, then every id, shape, dtype and byte count here before use. The
// operators that feed the graph (inputs and weights) are read here; every other operator goes
// through its conversion (mge_oprs_*.cpp), whose NeoMeg ops the graph's layout rules check.
#include "mge_import.h"

#include <cstring>
#include <set>

#include "mge_convert.h"
#include "utf8.h"

namespace neomeg::serialization::mge {
namespace {

using dnn::str_cat;
using graph::VarNode;

// No tensor in a model has more bytes than this (as load.cpp's cap).
constexpr size_t kMaxTensorBytes = size_t(1) << 48;
// The FBS_V2 model versions this build reads (MegEngine 1.13 writes 2).
constexpr uint32_t kMaxModelVersion = 2;
// Integer constants up to this many elements keep a host copy for the conversions (indices,
// target shapes).
constexpr size_t kMaxKnownInts = 64;

bool has_tag(std::span<const uint8_t> bytes, size_t at, const char (&tag)[5]) {
    return bytes.size() >= at + 4 && std::memcmp(bytes.data() + at, tag, 4) == 0;
}

// Every string the import uses (operator types, input, output and constant names) is text.
std::string_view text(const flatbuffers::String* s) {
    std::string_view v = s ? s->string_view() : std::string_view{};
    if (!valid_utf8(v))
        throw ModelError("MegEngine model file holds a name that is not valid UTF-8");
    return v;
}

struct TensorMeta {
    dnn::TensorShape shape;
    dnn::DType dtype;
};

TensorMeta tensor_meta(const fbs::Tensor& t, const std::string& what) {
    if (!t.dtype())
        throw ModelError(str_cat(what, " has no dtype"));
    TensorMeta m;
    m.dtype = dtype_of(*t.dtype(), what);
    if (t.format_type() != fbs::TensorFormat::NONE &&
        t.format_type() != fbs::TensorFormat::DefaultTensorFormat)
        throw ModelError(str_cat(what, " has tensor format ",
                                 fbs::EnumNameTensorFormat(t.format_type()),
                                 "; NeoMeg imports the default (contiguous) format only"));
    const auto* dims = t.shape();
    size_t n = dims ? dims->size() : 0;
    if (n > dnn::TensorShape::MAX_NDIM)
        throw ModelError(
                str_cat(what, " has ", n, " dimensions, more than ", dnn::TensorShape::MAX_NDIM));
    m.shape.ndim = n;
    size_t bytes = m.dtype.size();
    for (size_t i = 0; i < n; ++i) {
        m.shape.shape[i] = dims->Get(static_cast<flatbuffers::uoffset_t>(i));
        if (__builtin_mul_overflow(bytes, m.shape.shape[i], &bytes) || bytes > kMaxTensorBytes)
            throw ModelError(str_cat(what, " is too large"));
    }
    return m;
}

const fbs::Model* verified_model(std::span<const uint8_t> bytes) {
    if (detect(bytes) != FileKind::FbsV2)
        throw ModelError("not a MegEngine FBS_V2 model file (no mgv2 identifier)");
    uint32_t size = flatbuffers::ReadScalar<uint32_t>(bytes.data());
    if (size > bytes.size() - sizeof(uint32_t))
        throw ModelError(str_cat("MegEngine model file is truncated: it declares ", size,
                                 " bytes after its size prefix, the file has ",
                                 bytes.size() - sizeof(uint32_t)));
    flatbuffers::Verifier v(bytes.data(), size + sizeof(uint32_t));
    if (!fbs::VerifySizePrefixedModelBuffer(v))
        throw ModelError(
                "MegEngine model file is truncated or corrupted (flatbuffers verification "
                "failed)");
    const auto* m = fbs::GetSizePrefixedModel(bytes.data());
    if (m->model_version() > kMaxModelVersion)
        throw ModelVersionError(str_cat("MegEngine model version ", m->model_version(),
                                        " is newer than this NeoMeg reads (up to ",
                                        kMaxModelVersion, ")"));
    return m;
}

Metadata metadata_of(const fbs::Model* m) {
    Metadata md;
    md.format_version = m->model_version();
    md.producer_name = "MegEngine";
    // MegBrain's version number (major * 10000 + minor * 100 + patch; 101300 in MegEngine
    // 1.13). The file's user_info is a Python pickle, not text: it is not passed on.
    md.producer_version = str_cat("MGB_VERSION ", m->mge_version());
    return md;
}

class Importer {
public:
    Importer(const fbs::Model* m, const LoadOptions& o)
        : m_model(m), m_opt(o), m_cn(o.comp_node.valid() ? o.comp_node : CompNode::load("cpu0")) {}

    LoadedGraph run() {
        LoadedGraph out;
        out.graph = std::make_unique<graph::ComputingGraph>();
        out.metadata = metadata_of(m_model);
        Converter conv(*out.graph, m_cn);
        m_conv = &conv;
        m_out = &out;
        const auto* oprs = m_model->oprs();
        if (!oprs || oprs->size() == 0)
            throw ModelError("MegEngine model file has no operators");
        for (flatbuffers::uoffset_t i = 0; i < oprs->size(); ++i)
            read_opr(i, *oprs->Get(i));
        for (const auto& [name, shape] : m_opt.input_shapes)
            NM_THROW_IF(!m_input_names.count(name), ParamError,
                        "load: the model has no input named '", name, "'");
        read_outputs(out);
        return out;
    }

private:
    void read_opr(size_t index, const fbs::Operator& op) {
        std::string type(text(op.type()));
        std::string what = str_cat("MegEngine operator ", index, " (", type, ")");
        std::vector<VarNode*> inputs;
        if (const auto* in = op.inputs())
            for (uint32_t id : *in) {
                if (id >= m_vars.size())
                    throw ModelError(str_cat(what, ": input var ", id,
                                             " is not defined before it (", m_vars.size(),
                                             " vars so far)"));
                inputs.push_back(m_vars[id]);
            }
        std::vector<VarNode*> outs;
        try {
            if (type == "Host2DeviceCopy")
                outs = {read_input(op, what)};
            else if (type == "ImmutableTensor" || type == "SharedDeviceTensor" ||
                     type == "MultipleDeviceTensorHolder" ||
                     type == "SharedDeviceTensorWithFormat" ||
                     type == "MultipleDeviceTensorWithFormatHolder")
                outs = read_constants(op, what);
            else {
                const auto& table = conversions();
                auto it = table.find(type);
                if (it == table.end())
                    throw ModelError(str_cat(what, ": NeoMeg has no conversion for MegEngine's ",
                                             type.empty() ? "(unnamed)" : type,
                                             " operator (supported: docs/cpp-inference.md)"));
                outs = it->second(*m_conv, op, inputs);
            }
        } catch (const ModelError& e) {
            if (std::string_view(e.what()).starts_with("MegEngine operator"))
                throw;
            throw ModelError(str_cat(what, ": ", e.what()));
        } catch (const dnn::Error& e) {
            throw ModelError(str_cat(what, ": ", e.what()));
        }
        size_t n_out = op.outputs() ? op.outputs()->size() : 0;
        if (outs.size() != n_out)
            throw ModelError(str_cat(what, ": the file numbers ", n_out,
                                     " outputs, the conversion gives ", outs.size()));
        for (size_t i = 0; i < n_out; ++i) {
            uint32_t id = op.outputs()->Get(static_cast<flatbuffers::uoffset_t>(i));
            if (id != m_vars.size())
                throw ModelError(str_cat(what, ": output ", i, " has id ", id, ", expected ",
                                         m_vars.size()));
            // MegEngine's var name (a parameter's "conv1.weight"), where the conversion made the
            // var: a var it passed through keeps its own name. Only megengine.utils.network
            // shows them; outputs are named by the file's output list.
            const auto* middle = m_model->middle_tensors();
            if (outs[i]->name().empty() && middle && id < middle->size() && middle->Get(id) &&
                middle->Get(id)->name())
                outs[i]->set_name(std::string(text(middle->Get(id)->name())));
            m_vars.push_back(outs[i]);
        }
    }

    const fbs::Tensor& only_tensor(const fbs::Operator& op, size_t i, const std::string& what) {
        const auto* ts = op.tensors();
        if (!ts || ts->size() <= i)
            throw ModelError(str_cat(what, " has no tensor ", i));
        return *ts->Get(static_cast<flatbuffers::uoffset_t>(i));
    }

    VarNode* read_input(const fbs::Operator& op, const std::string& what) {
        const auto& t = only_tensor(op, 0, what);
        std::string name(text(t.name()));
        if (name.empty() || !m_input_names.insert(name).second)
            throw ModelError(str_cat(what, ": input name '", name, "' is empty or repeated"));
        TensorMeta m = tensor_meta(t, str_cat("input '", name, "'"));
        // A MegEngine graph takes any input shape its operators accept (its shapes are
        // inferred again on each run): every dimension is free, the dumped one the default.
        std::vector<int64_t> declared(m.shape.ndim, -1);
        if (auto it = m_opt.input_shapes.find(name); it != m_opt.input_shapes.end()) {
            NM_THROW_IF(it->second.ndim != m.shape.ndim, ParamError, "load: shape ",
                        it->second.to_string(), " for input '", name, "' does not have its ",
                        m.shape.ndim, " dimensions");
            m.shape = it->second;
        }
        VarNode* v = m_out->graph->input(name, m.shape, m.dtype, m_cn);
        m_out->inputs.push_back({name, v, std::move(declared)});
        return v;
    }

    std::vector<VarNode*> read_constants(const fbs::Operator& op, const std::string& what) {
        std::vector<VarNode*> outs;
        size_t n = op.tensors() ? op.tensors()->size() : 0;
        if (n == 0)
            throw ModelError(str_cat(what, " holds no tensor"));
        for (size_t i = 0; i < n; ++i) {
            const auto& t = only_tensor(op, i, what);
            std::string twhat = str_cat(what, ": tensor ", i);
            TensorMeta m = tensor_meta(t, twhat);
            size_t bytes = m.dtype.size(m.shape.total_nr_elems());
            size_t have = t.data() ? t.data()->size() : 0;
            if (have != bytes)
                throw ModelError(str_cat(twhat, " of shape ", m.shape.to_string(), " ",
                                         m.dtype.name(), " needs ", bytes, " bytes, the file has ",
                                         have));
            DeviceTensor value;
            auto* shared = m_opt.shared_constants.get();
            size_t k = m_num_constants++;
            if (shared && k < shared->size()) {
                value = (*shared)[k];
                NM_THROW_IF(!value.valid() || !value.shape().eq_shape(m.shape) ||
                                    value.dtype() != m.dtype || value.comp_node() != m_cn,
                            ParamError, "load: shared constant ", k,
                            " does not match the file's (another model, or another comp node)");
            } else {
                value = bytes ? DeviceTensor::from_host(t.data()->data(), m.shape, m.dtype, m_cn)
                              : DeviceTensor::empty(m.shape, m.dtype, m_cn);
                if (shared)
                    shared->push_back(value);
            }
            VarNode* v = m_out->graph->constant(std::move(value), std::string(text(t.name())));
            remember_ints(v, m, t.data());
            outs.push_back(v);
        }
        return outs;
    }

    // Small integer constants are indices and shapes the conversions read.
    void remember_ints(VarNode* v, const TensorMeta& m, const flatbuffers::Vector<uint8_t>* data) {
        size_t n = m.shape.total_nr_elems();
        if (!data || n > kMaxKnownInts || m.dtype.category() != dnn::DTypeCategory::Int)
            return;
        std::vector<int64_t> ints(n);
        const uint8_t* p = data->data();
        for (size_t i = 0; i < n; ++i) {
            if (m.dtype == dnn::dtype::Int32) {
                int32_t x;
                std::memcpy(&x, p + 4 * i, 4);
                ints[i] = x;
            } else if (m.dtype == dnn::dtype::Int16) {
                int16_t x;
                std::memcpy(&x, p + 2 * i, 2);
                ints[i] = x;
            } else if (m.dtype == dnn::dtype::Int8) {
                ints[i] = static_cast<int8_t>(p[i]);
            } else {
                ints[i] = p[i];
            }
        }
        m_conv->remember(v, std::move(ints));
    }

    void read_outputs(LoadedGraph& out) {
        const auto* outputs = m_model->output_vars_idx();
        if (!outputs || outputs->size() == 0)
            throw ModelError("MegEngine model file has no outputs");
        const auto* middle = m_model->middle_tensors();
        std::map<uint32_t, VarNode*> by_original_id;
        std::vector<NamedVar> named;
        for (flatbuffers::uoffset_t i = 0; i < outputs->size(); ++i) {
            const auto* o = outputs->Get(i);
            if (o->compact_id() >= m_vars.size())
                throw ModelError(str_cat("output ", i, " refers to var ", o->compact_id(), " of ",
                                         m_vars.size()));
            VarNode* v = m_vars[o->compact_id()];
            std::string name = str_cat("unnamed", i);
            if (middle && o->compact_id() < middle->size() && middle->Get(o->compact_id()) &&
                middle->Get(o->compact_id())->name())
                name = std::string(text(middle->Get(o->compact_id())->name()));
            named.push_back({name, v});
            by_original_id[o->original_id()] = v;
        }
        // Aliases (dump's alias_name_map) rename and reorder the outputs, as MegEngine's loader.
        if (const auto* alias = m_model->output_alias(); alias && alias->size() > 0) {
            named.clear();
            for (const auto* a : *alias) {
                auto it = by_original_id.find(a->id());
                if (it == by_original_id.end())
                    throw ModelError(
                            str_cat("output alias '", text(a->name()), "' refers to no output"));
                named.push_back({std::string(text(a->name())), it->second});
            }
        }
        std::set<std::string> names;
        for (auto& n : named) {
            if (n.name.empty() || !names.insert(n.name).second)
                throw ModelError(str_cat("output name '", n.name, "' is empty or repeated"));
            out.outputs.push_back(std::move(n));
        }
    }

    const fbs::Model* m_model;
    const LoadOptions& m_opt;
    CompNode m_cn;
    Converter* m_conv = nullptr;
    LoadedGraph* m_out = nullptr;
    std::vector<VarNode*> m_vars;  // by MegEngine's var id
    std::set<std::string> m_input_names;
    size_t m_num_constants = 0;
};

}  // namespace

FileKind detect(std::span<const uint8_t> bytes) {
    // FBS_V2 is size-prefixed: 4 bytes of size, 4 of root offset, then the identifier.
    if (has_tag(bytes, 8, "mgv2"))
        return FileKind::FbsV2;
    // dump_format="FBS" begins with this magic, followed by an "mgb1" flatbuffer.
    if (has_tag(bytes, 0, "MGBC"))
        return FileKind::FbsV1;
    if (has_tag(bytes, 0, "mgbs") || has_tag(bytes, 0, "MGBS"))
        return FileKind::Legacy;
    return FileKind::NotMegEngine;
}

LoadedGraph load(std::span<const uint8_t> bytes, const LoadOptions& options) {
    switch (detect(bytes)) {
        case FileKind::FbsV1:
            throw ModelError(
                    "MegEngine model file in the older FBS format (dump_format=\"FBS\"): NeoMeg "
                    "reads MegEngine's default format; dump it again without dump_format (or "
                    "with dump_format=\"FBS_V2\")");
        case FileKind::Legacy:
            throw ModelError(
                    "MegEngine model file in a legacy binary format: NeoMeg reads the FBS_V2 "
                    "format that MegEngine 1.13's trace.dump writes by default");
        default:
            break;
    }
    return Importer(verified_model(bytes), options).run();
}

Metadata read_metadata(std::span<const uint8_t> bytes) {
    return metadata_of(verified_model(bytes));
}

}  // namespace neomeg::serialization::mge
