// neomeg::inference::Model on serialization::load and ComputingGraph::compile.
#include "neomeg/inference/model.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <system_error>

#include "neomeg/serialization/model_file.h"

namespace neomeg::inference {
namespace {

using dnn::str_cat;

std::vector<int64_t> dims_of(const dnn::TensorShape& s) {
    return {s.shape.begin(), s.shape.begin() + s.ndim};
}

std::string shape_str(std::span<const int64_t> s) {
    std::string out = "{";
    for (size_t i = 0; i < s.size(); ++i)
        out += (i ? "," : "") + std::to_string(s[i]);
    return out + "}";
}

}  // namespace

// ---- HostTensor ----

HostTensor::HostTensor(std::string dtype, std::vector<int64_t> shape, std::vector<std::byte> bytes)
    : m_dtype(std::move(dtype)), m_shape(std::move(shape)), m_bytes(std::move(bytes)) {
    dnn::DType dt;
    try {
        dt = dnn::DType::from_name(m_dtype);
    } catch (const dnn::DTypeError& e) {
        throw std::invalid_argument(e.what());
    }
    size_t n = 1;
    for (int64_t d : m_shape) {
        if (d < 0)
            throw std::invalid_argument("HostTensor: negative dimension in " + shape_str(m_shape));
        n *= static_cast<size_t>(d);
    }
    if (m_bytes.size() != dt.size(n))
        throw std::invalid_argument(str_cat("HostTensor: ", shape_str(m_shape), " ", m_dtype,
                                            " needs ", dt.size(n), " bytes, got ", m_bytes.size()));
}

size_t HostTensor::num_elements() const {
    size_t n = 1;
    for (int64_t d : m_shape)
        n *= static_cast<size_t>(d);
    return n;
}

size_t HostTensor::element_size() const {
    return dnn::DType::from_name(m_dtype).size();
}

void HostTensor::check_element_type(int type) const {
    static const std::map<std::string, int, std::less<>> kTypes{
            {"float32", 0}, {"int8", 1}, {"uint8", 2},   {"int16", 3},
            {"int32", 4},   {"bool", 5}, {"float16", 6}, {"bfloat16", 6}};
    // a quantized tensor's elements are its storage's (int8 for QuantizedS8(...))
    auto it = kTypes.find(dnn::DType::from_name(m_dtype).storage().name());
    if (it == kTypes.end() || it->second != type)
        throw std::invalid_argument("HostTensor::data<T>: T is not the element type of " + m_dtype);
}

std::vector<double> HostTensor::to_doubles() const {
    // Through the kernel library's own conversion, so float16/bfloat16 round the same way.
    dnn::DType dt = dnn::DType::from_name(m_dtype);
    std::vector<double> out(num_elements());
    const std::byte* p = m_bytes.data();
    for (size_t i = 0; i < out.size(); ++i) {
        const std::byte* e = p + i * dt.size();
        switch (dt.storage().enumv()) {  // a quantized tensor's stored integers
#define NM_CB(en, ct, nm)                                    \
    case dnn::DTypeEnum::en: {                               \
        dnn::ct v;                                           \
        std::memcpy(static_cast<void*>(&v), e, sizeof v);    \
        out[i] = static_cast<double>(static_cast<float>(v)); \
        break;                                               \
    }
            NM_FOREACH_DTYPE(NM_CB)
#undef NM_CB
            default:  // storage() is a plain dtype, or complex64
                throw std::invalid_argument("HostTensor::to_doubles: " + m_dtype +
                                            " elements are not real numbers");
        }
    }
    return out;
}

// ---- Model ----

struct Model::Impl {
    using Shapes = std::map<std::string, dnn::TensorShape, std::less<>>;
    // A graph loaded and compiled for some input shapes.
    struct Built {
        Shapes shapes;
        serialization::LoadedGraph graph;
        std::unique_ptr<graph::Executable> exe;
        std::vector<TensorInfo> outputs;
    };
    // Executables for the input shapes used before the current ones (most recent last), so
    // that alternating batch sizes do not reload each time; each holds its own arena.
    static constexpr size_t kKeptShapes = 3;

    std::shared_ptr<const std::vector<uint8_t>> bytes;
    // The weights, copied from the file once and shared by clones and rebuilds.
    std::shared_ptr<std::vector<DeviceTensor>> constants =
            std::make_shared<std::vector<DeviceTensor>>();
    CompNode cn;
    Built cur;
    std::vector<Built> kept;
    std::vector<TensorInfo> inputs;
    Shapes shapes;                                            // current input shapes
    std::map<std::string, DeviceTensor, std::less<>> values;  // inputs set
    bool ran = false;
    std::string producer;

    static bool same(const Shapes& a, const Shapes& b) {
        return a.size() == b.size() &&
               std::equal(a.begin(), a.end(), b.begin(), [](auto& x, auto& y) {
                   return x.first == y.first && x.second.eq_shape(y.second);
               });
    }

    // Makes `cur` the graph for the current input shapes: one kept from before, or (re)loaded
    // and compiled (memory planned again for these shapes).
    void build() {
        ran = false;
        if (cur.exe && same(cur.shapes, shapes))
            return;
        if (cur.exe) {
            kept.push_back(std::move(cur));
            if (kept.size() > kKeptShapes)
                kept.erase(kept.begin());
        }
        cur = Built{};
        for (auto it = kept.begin(); it != kept.end(); ++it)
            if (same(it->shapes, shapes)) {
                cur = std::move(*it);
                kept.erase(it);
                return;
            }
        serialization::LoadOptions lo;
        lo.comp_node = cn;
        lo.shared_constants = constants;
        for (const auto& [name, shape] : shapes)
            lo.input_shapes[name] = shape;
        Built b;
        b.shapes = shapes;
        b.graph = serialization::load(*bytes, lo);
        b.exe = b.graph.graph->compile(b.graph.output_vars());
        for (const auto& o : b.graph.outputs)
            b.outputs.push_back({o.name, o.var->dtype().full_name(), dims_of(o.var->shape())});
        cur = std::move(b);
    }

    // A model on these file bytes (kept: a clone or a new input shape reloads from them).
    static Model make(std::shared_ptr<const std::vector<uint8_t>> bytes, const Options& options);

    const serialization::LoadedInput& find_input(std::string_view name) const {
        for (const auto& in : cur.graph.inputs)
            if (in.name == name)
                return in;
        throw std::out_of_range(str_cat("the model has no input named '", name, "'"));
    }
};

Model::Model(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load(const std::string& path, const Options& options) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw std::system_error(errno, std::generic_category(), "Model::load: cannot open " + path);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    if (in.bad())
        throw std::system_error(errno, std::generic_category(), "Model::load: cannot read " + path);
    return Impl::make(std::make_shared<const std::vector<uint8_t>>(std::move(bytes)), options);
}

Model Model::load(std::span<const uint8_t> bytes, const Options& options) {
    return Impl::make(std::make_shared<const std::vector<uint8_t>>(bytes.begin(), bytes.end()),
                      options);
}

Model Model::Impl::make(std::shared_ptr<const std::vector<uint8_t>> bytes, const Options& options) {
    auto impl = std::make_unique<Impl>();
    impl->bytes = std::move(bytes);
    try {
        impl->cn = CompNode::load(options.device);
    } catch (const std::exception& e) {
        throw std::invalid_argument(
                str_cat("Model::load: device '", options.device, "': ", e.what()));
    }
    impl->build();
    for (const auto& in : impl->cur.graph.inputs) {
        impl->inputs.push_back({in.name, in.var->dtype().full_name(), in.declared_shape});
        impl->shapes[in.name] = in.var->shape();
    }
    impl->cur.shapes = impl->shapes;
    const auto& md = impl->cur.graph.metadata;
    impl->producer = md.producer_version.empty() ? md.producer_name
                                                 : md.producer_name + " " + md.producer_version;
    return Model(std::move(impl));
}

Model Model::clone() const {
    auto impl = std::make_unique<Impl>();
    impl->bytes = m_impl->bytes;
    impl->constants = m_impl->constants;
    impl->cn = m_impl->cn;
    impl->shapes = m_impl->shapes;
    impl->build();
    impl->inputs = m_impl->inputs;
    impl->producer = m_impl->producer;
    return Model(std::move(impl));
}

const std::vector<TensorInfo>& Model::inputs() const {
    return m_impl->inputs;
}
const std::vector<TensorInfo>& Model::outputs() const {
    return m_impl->cur.outputs;
}

std::vector<std::string> Model::input_names() const {
    std::vector<std::string> out;
    for (const auto& i : m_impl->inputs)
        out.push_back(i.name);
    return out;
}

std::vector<std::string> Model::output_names() const {
    std::vector<std::string> out;
    for (const auto& o : m_impl->cur.outputs)
        out.push_back(o.name);
    return out;
}

TensorInfo Model::input(std::string_view name) const {
    const auto& in = m_impl->find_input(name);
    return {in.name, in.var->dtype().full_name(), dims_of(in.var->shape())};
}

void Model::set_input(std::string_view name, const void* data, std::span<const int64_t> shape) {
    const auto& in = m_impl->find_input(name);
    const auto& declared = in.declared_shape;
    bool fits = shape.size() == declared.size();
    for (size_t i = 0; fits && i < shape.size(); ++i)
        fits = shape[i] >= 0 && (declared[i] == -1 || declared[i] == shape[i]);
    if (!fits || shape.size() > dnn::TensorShape::MAX_NDIM)
        throw std::invalid_argument(str_cat("Model::set_input: shape ", shape_str(shape), " for '",
                                            name, "' does not fit its declared shape ",
                                            shape_str(declared)));
    dnn::TensorShape s;
    s.ndim = shape.size();
    for (size_t i = 0; i < shape.size(); ++i)
        s.shape[i] = static_cast<size_t>(shape[i]);
    std::string key(name);
    if (!s.eq_shape(m_impl->shapes.at(key))) {
        auto old = m_impl->shapes;
        m_impl->shapes[key] = s;
        try {
            m_impl->build();
        } catch (...) {
            m_impl->shapes = std::move(old);
            m_impl->build();
            throw;
        }
        // Inputs set before with shapes that still fit stay set.
        for (auto it = m_impl->values.begin(); it != m_impl->values.end();)
            it = it->second.shape().eq_shape(m_impl->shapes.at(it->first))
                         ? std::next(it)
                         : m_impl->values.erase(it);
    }
    dnn::DType dtype = m_impl->find_input(name).var->dtype();
    m_impl->values[key] = DeviceTensor::from_host(data, s, dtype, m_impl->cn);
}

void Model::set_input(std::string_view name, const HostTensor& value) {
    std::string want = m_impl->find_input(name).var->dtype().full_name();
    if (value.dtype() != want)
        throw std::invalid_argument(
                str_cat("Model::set_input: '", name, "' is ", want, ", got ", value.dtype()));
    set_input(name, value.bytes().data(), value.shape());
}

void Model::run() {
    auto& exe = *m_impl->cur.exe;
    for (const auto& slot : exe.inputs()) {
        auto it = m_impl->values.find(slot.name);
        if (it == m_impl->values.end())
            throw std::invalid_argument(str_cat("Model::run: input '", slot.name, "' is not set"));
        exe.set_input(slot.name, it->second);
    }
    exe.execute();
    m_impl->ran = true;
}

HostTensor Model::output(std::string_view name) const {
    if (!m_impl->ran)
        throw std::logic_error("Model::output: run() has not run since the model was (re)built");
    const auto& outs = m_impl->cur.graph.outputs;
    for (size_t i = 0; i < outs.size(); ++i)
        if (outs[i].name == name) {
            const DeviceTensor& t = m_impl->cur.exe->output(i);
            std::vector<std::byte> bytes(t.dtype().size(t.shape().total_nr_elems()));
            if (!bytes.empty())
                t.to_host(bytes.data());
            return HostTensor(t.dtype().full_name(), dims_of(t.shape()), std::move(bytes));
        }
    throw std::out_of_range(str_cat("the model has no output named '", name, "'"));
}

const std::string& Model::user_info() const {
    return m_impl->cur.graph.metadata.user_info;
}
const std::string& Model::producer() const {
    return m_impl->producer;
}
uint32_t Model::format_version() const {
    return m_impl->cur.graph.metadata.format_version;
}

}  // namespace neomeg::inference
