#include <algorithm>
#include <cstdlib>

#include "neomeg/dnn/operators/reduce.h"
#include "src/common/dtype_dispatch.h"
#include "src/naive/argsort_rank.h"
#include "src/naive/handle.h"

namespace neomeg::dnn::naive {
namespace {

class TopKImpl final : public TopK {
public:
    using TopK::TopK;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND& src = inputs[0];
        size_t axis = src.layout.ndim - 1;
        size_t n = src.layout[axis];
        ptrdiff_t ss = src.layout.stride[axis];
        auto k = static_cast<size_t>(std::abs(m_param.k));
        bool descending = m_param.k < 0;
        Param::Mode mode = m_param.mode;
        dispatch_numeric(src.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            for_each_axis_line(src.layout, axis, [&](auto off) {
                auto line = read_line<T>(src, off(src.layout), n, ss);
                auto order = sorted_positions(line, descending);
                const TensorND& values = outputs[0];
                if (mode == Param::Mode::KTH_ONLY) {
                    elem<T>(values, off(values.layout)) = static_cast<T>(line[order[k - 1]]);
                    return;
                }
                order.resize(k);
                if (mode == Param::Mode::VALUE_IDX_NOSORT)
                    std::sort(order.begin(), order.end());  // any order will do; src's is simplest
                const TensorND& indices = outputs[1];
                ptrdiff_t vo = off(values.layout), io = off(indices.layout);
                ptrdiff_t vs = values.layout.stride[axis], is = indices.layout.stride[axis];
                for (size_t r = 0; r < k; ++r) {
                    auto ri = static_cast<ptrdiff_t>(r);
                    elem<T>(values, vo + ri * vs) = static_cast<T>(line[order[r]]);
                    elem<dt_int32>(indices, io + ri * is) = static_cast<dt_int32>(order[r]);
                }
            });
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(TopK, TopKImpl);
}  // namespace neomeg::dnn::naive
