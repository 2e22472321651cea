// Backward rules of CreateComplex and ComplexPart, in PyTorch's convention for complex tensors:
// the gradient of a complex value z is dL/d(Re z) + i dL/d(Im z) for a real loss L. The parts ops
// are projections, so their gradients are too: the real part's gradient g enters z's as g + 0i,
// the imaginary part's as 0 + gi, and z's gradient splits back into its parts. (Elemwise's complex
// MUL multiplies by the conjugate: elemwise.cpp.)
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/elemwise.h"
#include "ops_util.h"

namespace neomeg::imperative {
namespace {

using namespace grad_util;
using Part = dnn::param::ComplexPart::Part;

std::vector<Tensor> create_complex_grad(const OpDef&, std::span<const Tensor> x,
                                        std::span<const Tensor>, std::span<const Tensor> dy,
                                        std::span<const bool> needs) {
    std::vector<Tensor> g(2);
    for (size_t i = 0; i < 2; ++i)
        if (needs[i])
            g[i] = reduce_to(complex_part(dy[0], i == 0 ? Part::REAL : Part::IMAG), x[i].shape());
    return g;
}

std::vector<Tensor> complex_part_grad(const OpDef& def, std::span<const Tensor>,
                                      std::span<const Tensor>, std::span<const Tensor> dy,
                                      std::span<const bool>) {
    const Tensor zero = scalar_like(dy[0], 0);
    const bool real = static_cast<const ops::ComplexPart&>(def).param().part == Part::REAL;
    return {real ? create_complex(dy[0], zero) : create_complex(zero, dy[0])};
}

}  // namespace

NM_REGISTER_GRAD(CreateComplex, create_complex_grad);
NM_REGISTER_GRAD(ComplexPart, complex_part_grad);

}  // namespace neomeg::imperative
