#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"
#include "src/naive/type_cvt.h"

namespace neomeg::dnn::naive {
namespace {

class EyeImpl final : public Eye {
public:
    using Eye::Eye;
    void do_exec(std::span<const TensorND>, std::span<const TensorND> outputs, Workspace) override {
        const TensorND& dst = outputs[0];
        for_each_index(dst.layout, [&](const auto& idx) {
            bool on_diag = static_cast<int64_t>(idx[1]) - static_cast<int64_t>(idx[0]) == m_param.k;
            store_scalar(dst, offset_of(dst.layout, idx.data()), Scalar::of_int(on_diag ? 1 : 0));
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(Eye, EyeImpl);
}  // namespace neomeg::dnn::naive
