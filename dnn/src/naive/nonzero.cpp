#include "neomeg/dnn/operators/indexing.h"
#include "src/common/dtype_dispatch.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {
namespace {

// Writes only the first `count` columns of coords (the static-shape contract in
// dnn/ops/defs/indexing.py); count goes to outputs[1].
class NonZeroImpl final : public NonZero {
public:
    using NonZero::NonZero;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &coords = outputs[0];
        const TensorLayout& cl = coords.layout;
        int32_t count = 0;
        dispatch_dtype(src.layout.dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            using C = compute_type_t<T>;
            for_each_index(src.layout, [&](const auto& idx) {
                // Compared in the compute type so that -0.0 counts as zero and NaN as nonzero.
                if (static_cast<C>(elem<T>(src, offset_of(src.layout, idx.data()))) == C(0))
                    return;
                for (size_t d = 0; d < src.layout.ndim; ++d)
                    elem<int32_t>(coords,
                                  static_cast<ptrdiff_t>(d) * cl.stride[0] + count * cl.stride[1]) =
                            static_cast<int32_t>(idx[d]);
                ++count;
            });
        });
        elem<int32_t>(outputs[1], 0) = count;
    }
};

}  // namespace
NM_REGISTER_NAIVE(NonZero, NonZeroImpl);
}  // namespace neomeg::dnn::naive
