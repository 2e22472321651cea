// A tensor view: a pointer and the layout that says how to read it, and optionally the identity of
// the storage it lies in (storage.h: lets a kernel keep what it derived from an input's values
// between calls). It owns nothing.
#pragma once

#include <cstddef>

#include "neomeg/dnn/errors.h"
#include "neomeg/dnn/layout.h"
#include "neomeg/dnn/storage.h"

namespace neomeg::dnn {

class TensorND {
public:
    TensorND() = default;
    TensorND(void* raw_ptr, const TensorLayout& layout) : m_ptr(raw_ptr), layout(layout) {}
    TensorND(void* raw_ptr, const TensorLayout& layout, const StorageId* storage)
        : m_ptr(raw_ptr), layout(layout), storage(storage) {}

    void* raw_ptr() const { return m_ptr; }
    // Typed pointer to the first element; throws DTypeError if T is not the layout's dtype.
    template <class T>
    T* ptr() const {
        NM_THROW_IF(DTypeTrait<T>::dtype != layout.dtype, DTypeError, "tensor of dtype ",
                    layout.dtype.name(), " accessed as ", DTypeTrait<T>::name);
        return static_cast<T*>(m_ptr);
    }

private:
    void* m_ptr = nullptr;

public:
    TensorLayout layout;
    // The storage the view lies in, while the tensor is in use; nullptr when the caller does not
    // say (its values are then never cached from).
    const StorageId* storage = nullptr;
};

// Scratch memory handed to an operator; it asked for `size` through get_workspace_in_bytes.
struct Workspace {
    std::byte* ptr = nullptr;
    size_t size = 0;
};

}  // namespace neomeg::dnn
