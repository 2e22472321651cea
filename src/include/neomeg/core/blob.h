// Device memory owned by one allocation on a comp node; freed to the node's caching allocator
// with the last reference (hold it in a shared_ptr to share it). Eager tensors and a graph's
// constants and outputs keep their storage in blobs. A blob's StorageId (a never-reused id and a
// write version) goes with the tensors the kernels see, so that a kernel may keep what it derived
// from a blob's values (x86's reordered weights) until the blob is written again or freed.
#pragma once

#include <cstddef>

#include "neomeg/core/comp_node.h"
#include "neomeg/dnn/storage.h"

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
    const dnn::StorageId& storage() const { return m_storage; }
    // Whoever writes into a blob that may have been read already (its first contents excepted)
    // calls this after the write: eager tensors never do (every op writes fresh storage), a
    // compiled graph's arena is rewritten by every step.
    void note_write() { m_storage.note_write(); }

private:
    CompNode m_cn;
    std::byte* m_ptr;
    size_t m_size;
    dnn::StorageId m_storage;
};

}  // namespace neomeg
