#include "neomeg/dnn/operators/reduce.h"
#include "src/common/dtype_dispatch.h"
#include "src/naive/argsort_rank.h"
#include "src/naive/handle.h"

namespace neomeg::dnn::naive {
namespace {

class ArgsortImpl final : public Argsort {
public:
    using Argsort::Argsort;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &values = outputs[0], &indices = outputs[1];
        size_t axis = src.layout.ndim - 1;
        size_t n = src.layout[axis];
        ptrdiff_t ss = src.layout.stride[axis], vs = values.layout.stride[axis],
                  is = indices.layout.stride[axis];
        bool descending = m_param.order == Param::Order::DESCENDING;
        dispatch_numeric(src.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            for_each_axis_line(src.layout, axis, [&](auto off) {
                ptrdiff_t so = off(src.layout), vo = off(values.layout), io = off(indices.layout);
                auto line = read_line<T>(src, so, n, ss);
                auto order = sorted_positions(line, descending);
                for (size_t r = 0; r < n; ++r) {
                    auto ri = static_cast<ptrdiff_t>(r);
                    elem<T>(values, vo + ri * vs) = static_cast<T>(line[order[r]]);
                    elem<dt_int32>(indices, io + ri * is) = static_cast<dt_int32>(order[r]);
                }
            });
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(Argsort, ArgsortImpl);
}  // namespace neomeg::dnn::naive
