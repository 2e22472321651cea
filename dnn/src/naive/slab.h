// Concat and Split move the same slabs in opposite directions; one walk serves both so that the
// two references cannot drift apart.
#pragma once

#include <cstdint>

#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {

enum class SlabDirection { into_whole, out_of_whole };

// Copies between each part and its slab of `whole` along `axis` (negative counts from the end):
// the parts, in order, tile `whole` along that axis.
template <class Parts>
void copy_slabs(const Parts& parts, const TensorND& whole, int32_t axis, SlabDirection dir) {
    auto ndim = static_cast<int32_t>(whole.layout.ndim);
    auto ax = static_cast<size_t>(axis < 0 ? axis + ndim : axis);
    size_t start = 0;
    for (const TensorND& part : parts) {
        for_each_index(part.layout, [&](const auto& idx) {
            auto widx = idx;
            widx[ax] += start;
            ptrdiff_t p = offset_of(part.layout, idx.data());
            ptrdiff_t w = offset_of(whole.layout, widx.data());
            if (dir == SlabDirection::into_whole)
                store_scalar(whole, w, load_scalar(part, p));
            else
                store_scalar(part, p, load_scalar(whole, w));
        });
        start += part.layout.shape[ax];
    }
}

}  // namespace neomeg::dnn::naive
