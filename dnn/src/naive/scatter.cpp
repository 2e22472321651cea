#include "neomeg/dnn/operators/indexing.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/indexing.h"
#include "src/naive/handle.h"
#include "src/naive/indexing.h"

namespace neomeg::dnn::naive {
namespace {

class ScatterImpl final : public Scatter {
public:
    using Scatter::Scatter;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &data = inputs[0], &index = inputs[1], &src = inputs[2], &dst = outputs[0];
        size_t ax = dnn::indexing::normalize_axis(m_param.axis, data.layout.ndim, *this);
        indexing::check_index_values(index, ax, data.layout.shape[ax], false, *this);
        indexing::copy_tensor(dst, data);
        // Calls write(dst_offset, src_offset) for every element of index, in row-major order.
        auto for_each_target = [&](auto&& write) {
            for_each_index(index.layout, [&](const auto& idx) {
                auto didx = idx;
                didx[ax] = static_cast<size_t>(
                        elem<int32_t>(index, offset_of(index.layout, idx.data())));
                write(offset_of(dst.layout, didx.data()), offset_of(src.layout, idx.data()));
            });
        };
        if (m_param.mode == Param::Mode::SET) {
            for_each_target([&](ptrdiff_t doff, ptrdiff_t soff) {
                indexing::copy_elem(dst, doff, src, soff);
            });
            return;
        }
        dispatch_numeric(dst.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            using C = compute_type_t<T>;
            for_each_target([&](ptrdiff_t doff, ptrdiff_t soff) {
                T& d = elem<T>(dst, doff);
                d = static_cast<T>(static_cast<C>(d) + static_cast<C>(elem<T>(src, soff)));
            });
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(Scatter, ScatterImpl);
}  // namespace neomeg::dnn::naive
