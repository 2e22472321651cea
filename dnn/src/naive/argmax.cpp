#include "neomeg/dnn/operators/reduce.h"
#include "src/common/dtype_dispatch.h"
#include "src/common/reduce_axis.h"
#include "src/naive/handle.h"
#include "src/naive/reduce_walk.h"

namespace neomeg::dnn::naive {
namespace {

// Index of the first extreme element of each line; a NaN ends the search (NumPy's rule).
void arg_reduce(const TensorND& src, const TensorND& dst, int32_t axis_param, bool find_max,
                const std::string& who) {
    size_t axis = 0;
    normalize_axis(axis_param, src.layout.ndim, axis);
    size_t n = src.layout[axis];
    ptrdiff_t stride = src.layout.stride[axis];
    dispatch_numeric(src.layout.dtype, who, [&](auto tag) {
        using T = typename decltype(tag)::type;
        for_each_axis_line(src.layout, axis, [&](auto off) {
            ptrdiff_t so = off(src.layout), dof = off(dst.layout);
            size_t best = 0;
            auto best_v = load<T>(src, so);
            for (size_t i = 1; i < n && !is_nan(best_v); ++i) {
                auto v = load<T>(src, so + static_cast<ptrdiff_t>(i) * stride);
                if (is_nan(v) || (find_max ? v > best_v : v < best_v)) {
                    best = i;
                    best_v = v;
                }
            }
            elem<dt_int32>(dst, dof) = static_cast<dt_int32>(best);
        });
    });
}

class ArgmaxImpl final : public Argmax {
public:
    using Argmax::Argmax;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        arg_reduce(inputs[0], outputs[0], m_param.axis, true, param_str());
    }
};

class ArgminImpl final : public Argmin {
public:
    using Argmin::Argmin;
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        arg_reduce(inputs[0], outputs[0], m_param.axis, false, param_str());
    }
};

}  // namespace
NM_REGISTER_NAIVE(Argmax, ArgmaxImpl);
NM_REGISTER_NAIVE(Argmin, ArgminImpl);
}  // namespace neomeg::dnn::naive
