#include <algorithm>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

// Copies go through load_scalar/store_scalar, which are exact between equal dtypes.
class DiagImpl final : public Diag {
public:
    using Diag::Diag;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        const int64_t k = m_param.k;
        if (src.layout.ndim == 1) {
            for_each_index(dst.layout, [&](const auto& idx) {
                auto r = static_cast<int64_t>(idx[0]), c = static_cast<int64_t>(idx[1]);
                Scalar v = Scalar::of_int(0);
                if (c - r == k)
                    v = load_scalar(src, std::min(r, c) * src.layout.stride[0]);
                store_scalar(dst, offset_of(dst.layout, idx.data()), v);
            });
            return;
        }
        // Element i of the diagonal is src[i, i + k] above the main diagonal, src[i - k, i] below.
        const int64_t r0 = k >= 0 ? 0 : -k, c0 = k >= 0 ? k : 0;
        for (size_t i = 0; i < dst.layout.shape[0]; ++i) {
            auto ii = static_cast<int64_t>(i);
            ptrdiff_t soff = (r0 + ii) * src.layout.stride[0] + (c0 + ii) * src.layout.stride[1];
            store_scalar(dst, ii * dst.layout.stride[0], load_scalar(src, soff));
        }
    }
};

}  // namespace
NM_REGISTER_NAIVE(Diag, DiagImpl);
}  // namespace neomeg::dnn::naive
