#include <cstdint>

#include "neomeg/dnn/operators/reduce.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/reduce_axis.h"
#include "src/naive/handle.h"
#include "src/naive/reduce_walk.h"

namespace neomeg::dnn::naive {
namespace {

class CumsumImpl final : public Cumsum {
public:
    using Cumsum::Cumsum;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        size_t axis = 0;
        normalize_axis(m_param.axis, src.layout.ndim, axis);
        size_t n = src.layout[axis];
        ptrdiff_t ss = src.layout.stride[axis], ds = dst.layout.stride[axis];
        bool exclusive = m_param.exclusive, reverse = m_param.reverse;
        dispatch_numeric(src.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            // Floats run in double; integers wrap modulo 2^64, which truncates to T's wrap.
            using Acc = std::conditional_t<is_float_type_v<T>, double, uint64_t>;
            for_each_axis_line(src.layout, axis, [&](auto off) {
                ptrdiff_t so = off(src.layout), dof = off(dst.layout);
                Acc acc = 0;
                for (size_t step = 0; step < n; ++step) {
                    auto i = static_cast<ptrdiff_t>(reverse ? n - 1 - step : step);
                    ptrdiff_t si = so + i * ss, di = dof + i * ds;
                    Acc v;
                    if constexpr (is_float_type_v<T>)
                        v = static_cast<double>(load<T>(src, si));
                    else
                        v = static_cast<uint64_t>(static_cast<int64_t>(elem<T>(src, si)));
                    if (!exclusive)
                        acc += v;
                    if constexpr (is_float_type_v<T>)
                        store_float<T>(dst, di, acc);
                    else
                        elem<T>(dst, di) = static_cast<T>(acc);
                    if (exclusive)
                        acc += v;
                }
            });
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(Cumsum, CumsumImpl);
}  // namespace neomeg::dnn::naive
