// A small reorder between two of oneDNN's layouts of one dtype (plain and blocked: a depthwise
// filter gradient's Goihw16g into the caller's goihw) as a copy of elements by offsets planned
// once. oneDNN's reorder primitive spends about half a microsecond a call on its argument map and
// execution context around a copy of a few hundred floats (a twentieth of a batch-1 depthwise
// filter gradient); the copy moves bits, as the reorder does between equal dtypes.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace neomeg::dnn::x86 {

class ElementCopy {
public:
    // The copy from `from` to `to` (same dims), or nullopt where they differ in dtype, either is
    // not a plain or blocked layout or carries extra data (a compensation), or either holds more
    // than max_bytes.
    static std::optional<ElementCopy> plan(const dnnl::memory::desc& from,
                                           const dnnl::memory::desc& to, size_t max_bytes);

    // Writes every element of `to` from `from`; the padding of a padded blocked `to` (channels
    // past the dims, up to a whole block) gets zeros, as oneDNN's reorder gives it.
    void run(const void* from, void* to) const;

private:
    std::vector<uint32_t> m_from, m_to;  // element offsets, in `to`'s order
    size_t m_elem = 0;                   // bytes an element
    size_t m_zero_bytes = 0;             // `to`'s size where it has padding to zero, else 0
};

}  // namespace neomeg::dnn::x86
