#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

// Computes in double as NumPy does (start + i * step, and stop exactly when endpoint) so that
// the float32 result is the correctly rounded NumPy value.
class LinspaceImpl final : public Linspace {
public:
    using Linspace::Linspace;
    void do_exec(std::span<const TensorND>, std::span<const TensorND> outputs, Workspace) override {
        const TensorND& dst = outputs[0];
        size_t n = dst.layout.shape[0];
        double start = m_param.start, stop = m_param.stop;
        size_t div = m_param.endpoint ? n - 1 : n;
        double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0;
        for (size_t i = 0; i < n; ++i) {
            double v = start + static_cast<double>(i) * step;
            if (m_param.endpoint && n > 1 && i == n - 1)
                v = stop;
            store_scalar(dst, static_cast<ptrdiff_t>(i) * dst.layout.stride[0],
                         Scalar::of_float(v));
        }
    }
};

}  // namespace
NM_REGISTER_NAIVE(Linspace, LinspaceImpl);
}  // namespace neomeg::dnn::naive
