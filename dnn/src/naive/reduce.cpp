#include <algorithm>
#include <cstdint>
#include <limits>

#include "neomeg/dnn/operators/reduce.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/reduce_axis.h"
#include "src/naive/handle.h"
#include "src/naive/reduce_walk.h"

namespace neomeg::dnn::naive {
namespace {

using Mode = param::Reduce::Mode;

// Float lines reduce in double so float16 sums neither overflow nor lose their small terms.
template <class T>
double reduce_float(Mode mode, size_t n, const TensorND& src, ptrdiff_t off, ptrdiff_t stride) {
    auto at = [&](size_t i) {
        return static_cast<double>(load<T>(src, off + static_cast<ptrdiff_t>(i) * stride));
    };
    double acc = mode == Mode::PRODUCT ? 1 : 0;
    if (mode == Mode::MIN || mode == Mode::MAX) {
        acc = at(0);
        for (size_t i = 1; i < n && !std::isnan(acc); ++i) {
            double v = at(i);
            if (std::isnan(v) || (mode == Mode::MAX ? v > acc : v < acc))
                acc = v;
        }
        return acc;
    }
    for (size_t i = 0; i < n; ++i) {
        double v = at(i);
        if (mode == Mode::PRODUCT)
            acc *= v;
        else
            acc += mode == Mode::SUM_SQR ? v * v : v;
    }
    if (mode == Mode::MEAN)
        acc = n ? acc / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
    return acc;
}

// Integer lines: SUM, SUM_SQR and PRODUCT wrap modulo 2^64, which truncates to the same bits as
// wrapping in T; MEAN is exact in int64 before it turns into a float.
template <class T>
void reduce_int(Mode mode, size_t n, const TensorND& src, ptrdiff_t off, ptrdiff_t stride,
                const TensorND& dst, ptrdiff_t dst_off) {
    auto at = [&](size_t i) { return elem<T>(src, off + static_cast<ptrdiff_t>(i) * stride); };
    if (mode == Mode::MIN || mode == Mode::MAX) {
        T acc = at(0);
        for (size_t i = 1; i < n; ++i)
            acc = mode == Mode::MAX ? std::max(acc, at(i)) : std::min(acc, at(i));
        elem<T>(dst, dst_off) = acc;
        return;
    }
    uint64_t acc = mode == Mode::PRODUCT ? 1 : 0;
    for (size_t i = 0; i < n; ++i) {
        auto v = static_cast<uint64_t>(static_cast<int64_t>(at(i)));
        if (mode == Mode::PRODUCT)
            acc *= v;
        else
            acc += mode == Mode::SUM_SQR ? v * v : v;
    }
    if (mode == Mode::MEAN) {
        double mean = n ? static_cast<double>(static_cast<int64_t>(acc)) / static_cast<double>(n)
                        : std::numeric_limits<double>::quiet_NaN();
        store_float<dt_float32>(dst, dst_off, mean);
        return;
    }
    elem<T>(dst, dst_off) = static_cast<T>(acc);
}

class ReduceImpl final : public Reduce {
public:
    using Reduce::Reduce;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND &src = inputs[0], &dst = outputs[0];
        size_t axis = 0;
        normalize_axis(m_param.axis, src.layout.ndim, axis);
        size_t n = src.layout[axis];
        ptrdiff_t stride = src.layout.stride[axis];
        Mode mode = m_param.mode;
        dispatch_numeric(src.layout.dtype, param_str(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            for_each_axis_line(src.layout, axis, [&](auto off) {
                ptrdiff_t so = off(src.layout), dof = off(dst.layout);
                if constexpr (is_float_type_v<T>)
                    store_float<T>(dst, dof, reduce_float<T>(mode, n, src, so, stride));
                else
                    reduce_int<T>(mode, n, src, so, stride, dst, dof);
            });
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(Reduce, ReduceImpl);
}  // namespace neomeg::dnn::naive
