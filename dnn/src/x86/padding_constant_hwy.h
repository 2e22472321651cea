// Padding's CONSTANT mode into a contiguous dst in one pass of vector stores (Highway, the
// instruction set chosen at run time): src's rows in order, each preceded by the border that lies
// between it and the row before (in dst, the back border of one row and the front border of the
// next, or whole border rows and planes, are one run), the border after the last row at the end.
// Every dst byte is written once; a row of 28 floats is four vector moves, not a memcpy call.
#pragma once

#include <array>
#include <cstddef>

#include "neomeg/dnn/layout.h"

namespace neomeg::dnn::x86 {

struct ConstantPadRows {
    const std::byte* src = nullptr;
    std::byte* dst = nullptr;
    size_t elem = 0;              // bytes of an element: 1, 2 or 4
    const void* value = nullptr;  // the border's element
    size_t ndim = 0;              // src's axes, the last one along its (dense) rows
    std::array<size_t, TensorLayout::MAX_NDIM> shape{};        // src's
    std::array<ptrdiff_t, TensorLayout::MAX_NDIM> src_step{};  // bytes
    std::array<size_t, TensorLayout::MAX_NDIM> dst_step{};     // bytes, dst's contiguous strides
    size_t origin = 0;     // dst's byte offset of src's first element (the front widths)
    size_t dst_bytes = 0;  // all of dst
    size_t rows = 0;       // src's rows, the product of its shape but the last axis: not 0
    size_t row_bytes = 0;  // bytes of a src row
};

// Writes src's rows [b, e) into dst and the border before each; the range that ends at p.rows
// also the border after the last row.
void pad_constant_rows(const ConstantPadRows& p, size_t b, size_t e);

}  // namespace neomeg::dnn::x86
