// An owning host tensor for tests: a buffer that covers any (strided, broadcast) layout, plus
// helpers to fill it, read it as doubles in logical order, and run operators on it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "neomeg/dnn/dtype.h"
#include "neomeg/dnn/errors.h"
#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/layout.h"
#include "neomeg/dnn/operator.h"
#include "neomeg/dnn/storage.h"
#include "neomeg/dnn/tensor.h"

namespace neomeg::dnn::test {

class HostTensor {
public:
    HostTensor() = default;
    // Allocates the memory `layout` spans (negative strides included).
    explicit HostTensor(const TensorLayout& layout);
    HostTensor(const TensorShape& shape, DType dtype) : HostTensor(TensorLayout(shape, dtype)) {}

    // A contiguous float32 (or other dtype) tensor from values in row-major order.
    static HostTensor from(const TensorShape& shape, const std::vector<double>& values,
                           DType dtype = dtype::Float32);

    const TensorLayout& layout() const { return m_layout; }
    DType dtype() const { return m_layout.dtype; }
    const TensorShape& shape() const { return m_layout; }
    TensorND nd() const {
        auto* base = reinterpret_cast<std::byte*>(const_cast<std::max_align_t*>(m_storage.data()));
        return {base + m_origin_bytes, m_layout};
    }

    // Elements in logical row-major order, converted to double.
    std::vector<double> values() const;
    void set_values(const std::vector<double>& values);  // logical order; must match size
    double at(std::initializer_list<size_t> idx) const;

    // A contiguous copy with the same logical values.
    HostTensor contiguous() const;

private:
    TensorLayout m_layout;
    std::vector<std::max_align_t> m_storage;
    // Where element offset 0 lives inside m_storage, as a byte offset (not a pointer) so that
    // copies of a HostTensor address their own storage.
    ptrdiff_t m_origin_bytes = 0;
};

// Uniform random values in [lo, hi); integer dtypes get integers, bool gets 0/1.
void fill_uniform(HostTensor& t, double lo, double hi, std::mt19937& rng);

// Shape `s` as a contiguous float32 layout.
inline TensorLayout f32(const TensorShape& s) {
    return TensorLayout(s, dtype::Float32);
}

// A tensor of layout `l` with uniform random values in [-1, 1).
HostTensor random_tensor(const TensorLayout& l, std::mt19937& rng);

// Shape `s` in float32 as a view into a tensor with `extra` more elements along `axis`: every
// axis outside it strided past the gap, as a slice x[:, :n] is.
TensorLayout padded_view(const TensorShape& s, size_t axis, size_t extra);

// Default comparison tolerance of a dtype (absolute and relative both).
double default_epsilon(DType dt);

// Checks a and b have equal shapes and values within eps (|a-b| <= eps * max(1, |b|)); NaNs must
// match NaNs. Returns a gtest assertion result naming the first bad element.
::testing::AssertionResult tensors_near(const HostTensor& a, const HostTensor& b, double eps);

// Runs `op` on the inputs with freshly allocated contiguous outputs. Generator ops read their
// output shapes from `output_shapes` (empty otherwise). Workspace is allocated as asked.
std::vector<HostTensor> run_op(OperatorBase& op, const std::vector<HostTensor>& inputs,
                               const std::vector<TensorShape>& output_shapes = {});

// A layout with the same shape whose rows are padded (every stride > its contiguous value), so
// kernels that ignore strides read the wrong elements.
TensorLayout padded_layout(const TensorLayout& contiguous);

// Numeric gradient of L(x) = sum(dy * f(inputs)) with respect to inputs[k] by central
// differences in double on float32 tensors.
HostTensor numeric_grad(const std::function<HostTensor(const std::vector<HostTensor>&)>& f,
                        std::vector<HostTensor> inputs, size_t k, const HostTensor& dy,
                        double step = 1e-2);

}  // namespace neomeg::dnn::test
