#include "neomeg/core/blob.h"

namespace neomeg {

Blob::Blob(CompNode cn, size_t size)
    : m_cn(cn), m_ptr(static_cast<std::byte*>(cn.alloc(size))), m_size(size) {}

Blob::~Blob() {
    m_cn.free(m_ptr);
}

}  // namespace neomeg
