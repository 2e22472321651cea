// Layout rules shared by the indexing operators (dnn/ops/defs/indexing.py). `who` names the
// operator at the head of every message (its param_str()).
#pragma once

#include <array>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "neomeg/dnn/operator.h"

namespace neomeg::dnn::indexing {

// The operator an error names, formatted only when a message is built: every eager call of an
// indexing op plans its layouts, and a param_str() made up front (an ostringstream, its locale's
// dynamic_casts) was a fifth of `x[0] = 1.0`'s 5 us. Text for callers that have only a name.
class Who {
public:
    Who(const OperatorBase& op) : m_op(&op) {}      // NOLINT: implicit, as `who` is passed
    Who(std::string_view text) : m_text(text) {}    // NOLINT
    Who(const std::string& text) : m_text(text) {}  // NOLINT
    Who(const char* text) : m_text(text) {}         // NOLINT
    friend std::ostream& operator<<(std::ostream& os, const Who& w) {
        return w.m_op ? os << w.m_op->param_str() : os << w.m_text;
    }

private:
    const OperatorBase* m_op = nullptr;
    std::string_view m_text;
};

// Wraps a possibly negative axis into [0, ndim); ParamError when it is outside [-ndim, ndim).
size_t normalize_axis(int32_t axis, size_t ndim, const Who& who);

// DTypeError unless `index` is int32; `what` names the input ("index", "indices[1]").
void check_index_dtype(const TensorLayout& index, const char* what, const Who& who);

// Where each axis of data[indices] comes from, for NumPy advanced indexing with one index tensor
// per entry of `axes`.
// Fixed arrays rather than vectors: the plan is made at every call's layout deduction and again
// in the kernels' planning, and its allocations were a tenth of an eager `x[0] = 1.0`.
struct MultiAxisPlan {
    // Normalised, one per index tensor (distinct axes of data, so at most MAX_NDIM).
    std::array<size_t, TensorShape::MAX_NDIM> axes{};
    TensorShape index_shape;  // the index tensors broadcast together
    TensorShape result;       // shape of data[indices]
    size_t index_begin = 0;   // result axes [index_begin, index_begin + index_shape.ndim) are B's
    // For each of result.ndim axes outside the index block, the data axis it walks; -1 inside it.
    std::array<int, TensorShape::MAX_NDIM> data_axis{};
};

// Validates data and the index layouts against `axes` and derives the plan; ShapeError names the
// layouts, ParamError the axes.
MultiAxisPlan plan_multi_axis(const TensorLayout& data, std::span<const TensorLayout> indices,
                              const std::vector<int32_t>& axes, const Who& who);

}  // namespace neomeg::dnn::indexing
