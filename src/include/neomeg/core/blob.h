// Device memory owned by one allocation on a comp node; freed to the node's caching allocator
// with the last reference (hold it in a shared_ptr to share it). Eager tensors and a graph's
// constants and outputs keep their storage in blobs.
#pragma once

#include <cstddef>

#include "neomeg/core/comp_node.h"

namespace neomeg {

class Blob {
public:
    Blob(CompNode cn, size_t size);
    ~Blob();
    Blob(const Blob&) = delete;
    Blob& operator=(const Blob&) = delete;

    CompNode comp_node() const { return m_cn; }
    std::byte* ptr() const { return m_ptr; }
    size_t size() const { return m_size; }

private:
    CompNode m_cn;
    std::byte* m_ptr;
    size_t m_size;
};

}  // namespace neomeg
