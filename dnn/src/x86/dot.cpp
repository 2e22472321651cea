// Dot on x86: the products of float elements taken in double (exact for float32 and the 16-bit
// floats) and summed in eight running sums the compiler keeps in vector registers, long vectors
// split across OpenMP threads whose partial sums add up in order; integers multiply and wrap in
// uint64 as naive does (exact in any order). Any strides.
#include <array>
#include <cstdint>
#include <vector>

#include "neomeg/dnn/operators/linalg.h"
#include "src/common/dtype_dispatch.h"
#include "src/x86/handle.h"
#include "src/x86/loop_kernel.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {
namespace {

template <class T>
using DotAcc = std::conditional_t<is_float_type_v<T>, double, uint64_t>;

template <class T>
DotAcc<T> product(T x, T y) {
    if constexpr (is_float_type_v<T>)
        return static_cast<double>(static_cast<float>(x)) *
               static_cast<double>(static_cast<float>(y));
    else
        return static_cast<uint64_t>(static_cast<int64_t>(x)) *
               static_cast<uint64_t>(static_cast<int64_t>(y));
}

template <class T>
DotAcc<T> partial_dot(const T* a, ptrdiff_t as, const T* b, ptrdiff_t bs, size_t begin,
                      size_t end) {
    constexpr size_t kLanes = 8;
    std::array<DotAcc<T>, kLanes> acc{};
    size_t i = begin;
    if (as == 1 && bs == 1) {
        for (; i + kLanes <= end; i += kLanes)
            for (size_t j = 0; j < kLanes; ++j)
                acc[j] += product(a[i + j], b[i + j]);
    }
    for (; i < end; ++i)
        acc[i % kLanes] +=
                product(a[static_cast<ptrdiff_t>(i) * as], b[static_cast<ptrdiff_t>(i) * bs]);
    DotAcc<T> sum = 0;
    for (DotAcc<T> v : acc)
        sum += v;
    return sum;
}

class DotImpl final : public LoopKernel<Dot> {
public:
    using LoopKernel::LoopKernel;

protected:
    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorLayout &al = inputs[0].layout, &bl = inputs[1].layout;
        size_t n = al[0];
        m_last = "loop";
        auto run = [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* a = static_cast<const T*>(inputs[0].raw_ptr());
            const T* b = static_cast<const T*>(inputs[1].raw_ptr());
            // One partial sum per chunk, added in chunk order.
            size_t chunks = std::min<size_t>(static_cast<size_t>(omp_get_max_threads()),
                                             std::max<size_t>(n / kParallelGrain, 1));
            std::vector<DotAcc<T>> partial(chunks, 0);
            size_t step = (n + chunks - 1) / std::max<size_t>(chunks, 1);
            parallel_ranges(
                    chunks, chunks * kParallelGrain, kParallelGrain, [&](size_t cb, size_t ce) {
                        for (size_t c = cb; c < ce; ++c)
                            partial[c] =
                                    partial_dot(a, al.stride[0], b, bl.stride[0],
                                                std::min(n, c * step), std::min(n, (c + 1) * step));
                    });
            DotAcc<T> sum = 0;
            for (DotAcc<T> v : partial)
                sum += v;
            if constexpr (is_float_type_v<T>)
                *static_cast<T*>(outputs[0].raw_ptr()) = static_cast<T>(static_cast<float>(sum));
            else
                *static_cast<dt_int32*>(outputs[0].raw_ptr()) = static_cast<dt_int32>(sum);
        };
        switch (al.dtype.enumv()) {
            case DTypeEnum::Int8:
                return run(TypeTag<dt_int8>{});
            case DTypeEnum::Int16:
                return run(TypeTag<dt_int16>{});
            case DTypeEnum::Int32:
                return run(TypeTag<dt_int32>{});
            default:
                return dispatch_float(al.dtype, param_str(), run);
        }
    }
};

}  // namespace
NM_REGISTER_X86(Dot, DotImpl);
}  // namespace neomeg::dnn::x86
