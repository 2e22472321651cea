// Roll, naive: every dst element copied as raw bytes from the src element its index, rolled back
// along each axis, names. src and dst must not overlap.
#include <cstring>

#include "neomeg/dnn/operators/tensor_shape.h"
#include "src/common/roll.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {
namespace {

class RollImpl final : public Roll {
public:
    using Roll::Roll;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        const auto k = roll_shifts(m_param, src.layout);
        const auto esize = static_cast<ptrdiff_t>(src.layout.dtype.size());
        auto* s = static_cast<const std::byte*>(src.raw_ptr());
        auto* d = static_cast<std::byte*>(dst.raw_ptr());
        for_each_index(dst.layout, [&](const auto& idx) {
            std::array<size_t, TensorShape::MAX_NDIM> from{};
            for (size_t a = 0; a < dst.layout.ndim; ++a) {
                size_t n = dst.layout.shape[a];
                from[a] = (idx[a] + n - k[a]) % n;
            }
            std::memcpy(d + offset_of(dst.layout, idx.data()) * esize,
                        s + offset_of(src.layout, from.data()) * esize, static_cast<size_t>(esize));
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(Roll, RollImpl);
}  // namespace neomeg::dnn::naive
