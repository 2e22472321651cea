#include "src/cuda/conv_graph_spec.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace neomeg::dnn::cuda {
namespace {

std::optional<GraphTensorSpec> tensor_spec(int64_t uid, const TensorLayout& l) {
    auto type = cudnn_type(l.dtype);
    auto d = cudnn_dims(l);
    if (!type || !d || l.is_empty())
        return std::nullopt;
    GraphTensorSpec t;
    t.uid = uid;
    t.type = *type;
    t.dims.assign(d->dims.begin(), d->dims.end());
    t.strides.assign(d->strides.begin(), d->strides.end());
    // A size-1 axis gets the stride a packed tensor would give it (cudnn_dims gives 1): the
    // engines infer the memory format (NCHW or NHWC) from the strides, and a channel stride of 1
    // on a one-channel NCHW tensor would read as NHWC.
    for (size_t i = t.dims.size(); i-- > 0;)
        if (t.dims[i] == 1)
            t.strides[i] = i + 1 == t.dims.size() ? 1 : t.strides[i + 1] * t.dims[i + 1];
    return t;
}

std::vector<int64_t> spatial(const std::vector<int32_t>& v, int64_t pad_1d) {
    std::vector<int64_t> r;
    if (v.size() == 1)
        r.push_back(pad_1d);  // the 1-D convolution's H axis of size 1
    r.insert(r.end(), v.begin(), v.end());
    return r;
}

void append(std::string& k, const char* name, const std::vector<int64_t>& v) {
    k += name;
    k += '[';
    for (int64_t e : v)
        k += str_cat(e, ',');
    k += ']';
}

void append(std::string& k, const GraphTensorSpec& t) {
    k += str_cat(" t", t.uid, ':', static_cast<int>(t.type), '@', t.alignment);
    append(k, "d", t.dims);
    append(k, "s", t.strides);
}

}  // namespace

std::optional<GraphConvSpec> graph_conv_spec(ConvKind kind, const ConvArgs& args,
                                             const TensorLayout& x, const TensorLayout& w,
                                             const TensorLayout& y, bool allow_tf32) {
    if (x.dtype != w.dtype || x.dtype != y.dtype || !w.is_contiguous())
        return std::nullopt;
    auto tx = tensor_spec(kGraphUidX, x), tw = tensor_spec(kGraphUidW, w),
         ty = tensor_spec(kGraphUidY, y);
    if (!tx || !tw || !ty || tx->dims.size() != tw->dims.size() ||
        tx->dims.size() != ty->dims.size())
        return std::nullopt;
    size_t nspatial = tx->dims.size() - 2;
    GraphConvSpec s;
    s.kind = kind;
    s.x = std::move(*tx);
    s.w = std::move(*tw);
    s.y = std::move(*ty);
    s.mode = args.flip ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION;
    s.pre_pad = spatial(args.padding, 0);
    s.post_pad = s.pre_pad;
    s.stride = spatial(args.stride, 1);
    s.dilation = spatial(args.dilation, 1);
    if (s.pre_pad.size() != nspatial || s.stride.size() != nspatial ||
        s.dilation.size() != nspatial)
        return std::nullopt;
    // Groups are the ratio of x's channels to w's (the graph API has no group count).
    if (args.group == 0 || s.w.dims[1] * static_cast<int64_t>(args.group) != s.x.dims[1])
        return std::nullopt;
    s.allow_tf32 = allow_tf32 && s.x.type == CUDNN_DATA_FLOAT;
    return s;
}

std::string graph_cache_key(const GraphConvSpec& s) {
    std::string k = str_cat("dir", static_cast<int>(s.kind), " mode", static_cast<int>(s.mode),
                            " comp", static_cast<int>(s.compute), s.allow_tf32 ? " tf32" : "");
    for (const auto* t : {&s.x, &s.w, &s.y})
        append(k, *t);
    append(k, " pre", s.pre_pad);
    append(k, " post", s.post_pad);
    append(k, " stride", s.stride);
    append(k, " dil", s.dilation);
    return k;
}

bool graph_engine_allowed(const GraphConvSpec& s,
                          std::span<const cudnnBackendNumericalNote_t> notes,
                          std::span<const cudnnBackendBehaviorNote_t> behavior) {
    if (std::find(behavior.begin(), behavior.end(), CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) !=
        behavior.end())
        return false;
    auto has = [&](cudnnBackendNumericalNote_t n) {
        return std::find(notes.begin(), notes.end(), n) != notes.end();
    };
    if (has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS))
        return false;
    // Half precision accumulates in float here, as on the legacy path and in naive.
    if (has(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION))
        return false;
    if (s.x.type == CUDNN_DATA_FLOAT && !s.allow_tf32 && has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE))
        return false;
    return true;
}

const char* graph_kernel_name(int64_t engine, bool measured) {
    static std::mutex mutex;
    static std::map<std::pair<int64_t, bool>, std::string> names;
    std::lock_guard lock(mutex);
    auto [it, fresh] = names.try_emplace({engine, measured});
    if (fresh)
        it->second =
                str_cat(measured ? "cudnn-graph(measured):engine" : "cudnn-graph:engine", engine);
    return it->second.c_str();
}

bool graph_pointers_aligned(std::span<const void* const> pointers) {
    return std::all_of(pointers.begin(), pointers.end(), [](const void* p) {
        return reinterpret_cast<uintptr_t>(p) % kGraphAlignment == 0;
    });
}

}  // namespace neomeg::dnn::cuda
