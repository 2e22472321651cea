// Whether every tensor of some groups (inputs, outputs, ...) is contiguous: the x86 row loops of
// LayerNorm, BatchNorm and Dropout walk dense memory and leave strided tensors to naive.
#pragma once

#include "neomeg/dnn/layout.h"

namespace neomeg::dnn::x86 {

inline bool contiguous(const TensorLayout& layout) {
    return layout.is_contiguous();
}

inline bool contiguous(const TensorND& tensor) {
    return tensor.layout.is_contiguous();
}

// Each group is a range of TensorLayout or TensorND (a span, an array, a vector).
template <class... Groups>
bool all_contiguous(const Groups&... groups) {
    auto dense = [](const auto& group) {
        for (const auto& t : group)
            if (!contiguous(t))
                return false;
        return true;
    };
    return (dense(groups) && ...);
}

}  // namespace neomeg::dnn::x86
