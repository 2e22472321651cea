#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/fill_value.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {
namespace {

class FillImpl final : public Fill {
public:
    using Fill::Fill;
    void do_exec(std::span<const TensorND>, std::span<const TensorND> outputs, Workspace) override {
        const TensorND& dst = outputs[0];
        if (dst.layout.dtype.is_complex()) {  // value + 0i: the zero gradients of complex views
            const dt_complex64 v(m_param.value, 0);
            for_each_offset(dst.layout, [&](ptrdiff_t off) { elem<dt_complex64>(dst, off) = v; });
            return;
        }
        dispatch_dtype(dst.layout.dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T v = fill_value<T>(m_param);
            for_each_offset(dst.layout, [&](ptrdiff_t off) { elem<T>(dst, off) = v; });
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(Fill, FillImpl);
}  // namespace neomeg::dnn::naive
