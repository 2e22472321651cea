#include <cstring>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {
namespace {

// Copies bytes, so one loop serves every dtype. src and dst must not overlap: an element written
// could be read again later in the walk.
class RelayoutImpl final : public Relayout {
public:
    using Relayout::Relayout;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        size_t esize = src.layout.dtype.size();
        auto* s = static_cast<const std::byte*>(src.raw_ptr());
        auto* d = static_cast<std::byte*>(dst.raw_ptr());
        for_each_index(src.layout, [&](const auto& idx) {
            std::memcpy(d + offset_of(dst.layout, idx.data()) * static_cast<ptrdiff_t>(esize),
                        s + offset_of(src.layout, idx.data()) * static_cast<ptrdiff_t>(esize),
                        esize);
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(Relayout, RelayoutImpl);
}  // namespace neomeg::dnn::naive
