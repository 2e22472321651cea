#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

// Each value is computed in double and converted once (integer dtypes truncate, like
// MegEngine's arange(...).astype), so no error accumulates along the sequence.
class ArangeImpl final : public Arange {
public:
    using Arange::Arange;
    void do_exec(std::span<const TensorND>, std::span<const TensorND> outputs, Workspace) override {
        const TensorND& dst = outputs[0];
        double start = m_param.start, step = m_param.step;
        for (size_t i = 0; i < dst.layout.shape[0]; ++i)
            store_scalar(dst, static_cast<ptrdiff_t>(i) * dst.layout.stride[0],
                         Scalar::of_float(start + static_cast<double>(i) * step));
    }
};

}  // namespace
NM_REGISTER_NAIVE(Arange, ArangeImpl);
}  // namespace neomeg::dnn::naive
