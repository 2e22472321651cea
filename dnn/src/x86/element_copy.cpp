#include "src/x86/element_copy.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace neomeg::dnn::x86 {
namespace {

// The element offset of logical index idx in a plain or blocked descriptor: oneDNN's own rule
// (memory_desc_wrapper::off_v): the inner blocks, innermost first, then the outer strides.
int64_t offset_of(const dnnl_memory_desc_t& md, const int64_t* idx) {
    const auto& b = md.format_desc.blocking;
    int64_t pos[DNNL_MAX_NDIMS];
    for (int d = 0; d < md.ndims; ++d)
        pos[d] = idx[d] + md.padded_offsets[d];
    int64_t off = md.offset0, step = 1;
    for (int i = b.inner_nblks - 1; i >= 0; --i) {
        const int d = static_cast<int>(b.inner_idxs[i]);
        off += pos[d] % b.inner_blks[i] * step;
        pos[d] /= b.inner_blks[i];
        step *= b.inner_blks[i];
    }
    for (int d = 0; d < md.ndims; ++d)
        off += pos[d] * b.strides[d];
    return off;
}

bool addressable(const dnnl_memory_desc_t& md) {
    return md.format_kind == dnnl_blocked && md.extra.flags == 0;
}

}  // namespace

std::optional<ElementCopy> ElementCopy::plan(const dnnl::memory::desc& from,
                                             const dnnl::memory::desc& to, size_t max_bytes) {
    const dnnl_memory_desc_t &f = from.data, &t = to.data;
    if (!addressable(f) || !addressable(t) || f.data_type != t.data_type || f.ndims != t.ndims ||
        from.get_size() > max_bytes || to.get_size() > max_bytes)
        return std::nullopt;
    for (int d = 0; d < f.ndims; ++d)
        if (f.dims[d] != t.dims[d])
            return std::nullopt;
    ElementCopy c;
    c.m_elem = dnnl::memory::data_type_size(static_cast<dnnl::memory::data_type>(f.data_type));
    int64_t n = 1;
    bool padded = false;
    for (int d = 0; d < t.ndims; ++d) {
        n *= t.dims[d];
        padded = padded || t.padded_dims[d] != t.dims[d];
    }
    c.m_zero_bytes = padded ? to.get_size() : 0;
    c.m_from.reserve(static_cast<size_t>(n));
    c.m_to.reserve(static_cast<size_t>(n));
    int64_t idx[DNNL_MAX_NDIMS] = {};
    for (int64_t i = 0; i < n; ++i) {
        c.m_from.push_back(static_cast<uint32_t>(offset_of(f, idx)));
        c.m_to.push_back(static_cast<uint32_t>(offset_of(t, idx)));
        for (int d = f.ndims - 1; d >= 0; --d) {
            if (++idx[d] < f.dims[d])
                break;
            idx[d] = 0;
        }
    }
    // Writes in `to`'s memory order.
    std::vector<size_t> order(c.m_to.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return c.m_to[a] < c.m_to[b]; });
    std::vector<uint32_t> fo(order.size()), to_off(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
        fo[i] = c.m_from[order[i]];
        to_off[i] = c.m_to[order[i]];
    }
    c.m_from = std::move(fo);
    c.m_to = std::move(to_off);
    return c;
}

namespace {

template <class T>
void gather(const std::vector<uint32_t>& from_off, const std::vector<uint32_t>& to_off,
            const void* from, void* to) {
    const auto* f = static_cast<const T*>(from);
    auto* t = static_cast<T*>(to);
    for (size_t i = 0; i < to_off.size(); ++i)
        t[to_off[i]] = f[from_off[i]];
}

}  // namespace

void ElementCopy::run(const void* from, void* to) const {
    if (m_zero_bytes)
        std::memset(to, 0, m_zero_bytes);
    switch (m_elem) {
        case 4:
            return gather<uint32_t>(m_from, m_to, from, to);
        case 2:
            return gather<uint16_t>(m_from, m_to, from, to);
        case 1:
            return gather<uint8_t>(m_from, m_to, from, to);
        default:
            for (size_t i = 0; i < m_to.size(); ++i)
                std::memcpy(static_cast<std::byte*>(to) + m_to[i] * m_elem,
                            static_cast<const std::byte*>(from) + m_from[i] * m_elem, m_elem);
    }
}

}  // namespace neomeg::dnn::x86
