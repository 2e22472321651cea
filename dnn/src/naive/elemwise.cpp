// Naive Elemwise: one loop over dst's indices for every mode and dtype. Each input is read through
// its layout broadcast to dst's shape (stride 0 on broadcast axes, any sign elsewhere), widened to
// double or int64 (complex64: a std::complex<float>), the mode's formula runs (elemwise_float.cpp
// / elemwise_int.cpp; eval_complex below), and the result is narrowed into dst through dst's own
// strides. Loads and stores are chosen once per tensor as
// function pointers, which keeps the template count at one per dtype.
#include <array>
#include <vector>

#include "neomeg/dnn/operators/elemwise.h"
#include "src/common/dtype_dispatch.h"
#include "src/naive/elemwise_scalar.h"
#include "src/naive/handle.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {
namespace {

using LoadFloat = double (*)(const void*, ptrdiff_t);
using LoadInt = int64_t (*)(const void*, ptrdiff_t);
using StoreFloat = void (*)(void*, ptrdiff_t, double);
using StoreInt = void (*)(void*, ptrdiff_t, int64_t);

template <class T>
double load_float(const void* p, ptrdiff_t off) {
    return static_cast<double>(static_cast<compute_type_t<T>>(static_cast<const T*>(p)[off]));
}

template <class T>
int64_t load_int(const void* p, ptrdiff_t off) {
    if constexpr (is_float_type_v<T>)
        // Only reached by a float condition, which the layout rule rejects.
        return static_cast<const T*>(p)[off] != T(0);
    else
        return static_cast<int64_t>(static_cast<const T*>(p)[off]);
}

template <class T>
void store_float(void* p, ptrdiff_t off, double v) {
    if constexpr (std::is_same_v<T, bool>)
        static_cast<T*>(p)[off] = v != 0;
    else if constexpr (is_float_type_v<T>)
        static_cast<T*>(p)[off] = static_cast<T>(static_cast<float>(v));
    else
        static_cast<T*>(p)[off] = static_cast<T>(v);
}

template <class T>
void store_int(void* p, ptrdiff_t off, int64_t v) {
    if constexpr (std::is_same_v<T, bool>)
        static_cast<T*>(p)[off] = v != 0;
    else if constexpr (is_float_type_v<T>)
        static_cast<T*>(p)[off] = static_cast<T>(static_cast<float>(v));
    else
        // Modular since C++20: the wrap the integer formulas promise.
        static_cast<T*>(p)[off] = static_cast<T>(v);
}

LoadFloat load_float_fn(DType dt) {
    return dispatch_dtype(
            dt, [](auto tag) -> LoadFloat { return &load_float<typename decltype(tag)::type>; });
}
// Quantized tensors (the layout rule lets them into the integer modes that MegEngine computes on
// the stored integers) load and store as their storage type.
LoadInt load_int_fn(DType dt) {
    return dispatch_dtype(dt.storage(), [](auto tag) -> LoadInt {
        return &load_int<typename decltype(tag)::type>;
    });
}
StoreFloat store_float_fn(DType dt) {
    return dispatch_dtype(
            dt, [](auto tag) -> StoreFloat { return &store_float<typename decltype(tag)::type>; });
}
StoreInt store_int_fn(DType dt) {
    return dispatch_dtype(dt.storage(), [](auto tag) -> StoreInt {
        return &store_int<typename decltype(tag)::type>;
    });
}

constexpr size_t kMaxArity = 4;
static_assert(dnn::elemwise::max_arity() <= kMaxArity);

class ElemwiseImpl final : public Elemwise {
public:
    using Elemwise::Elemwise;

    void do_exec(std::span<const TensorND> inputs, std::span<const TensorND> outputs,
                 Workspace) override {
        const TensorND& dst = outputs[0];
        Mode mode = m_param.mode;
        size_t n = inputs.size();
        std::vector<TensorLayout> src_layouts(n);
        for (size_t i = 0; i < n; ++i)
            src_layouts[i] = inputs[i].layout.broadcast(dst.layout);
        DType data = inputs[dnn::elemwise::data_input(mode)].layout.dtype;

        if (data.is_complex()) {  // the layout rule let only the complex modes through
            std::array<dt_complex64, kMaxArity> x{};
            for_each_element(dst, src_layouts, [&](const Offsets& off, ptrdiff_t dst_off) {
                for (size_t i = 0; i < n; ++i)
                    x[i] = elem<dt_complex64>(inputs[i], off[i]);
                elem<dt_complex64>(dst, dst_off) = eval_complex(mode, x.data());
            });
        } else if (dnn::elemwise::computes_in_float(mode, data)) {
            std::array<LoadFloat, kMaxArity> load{};
            for (size_t i = 0; i < n; ++i)
                load[i] = load_float_fn(inputs[i].layout.dtype);
            StoreFloat store = store_float_fn(dst.layout.dtype);
            std::array<double, kMaxArity> x{};
            for_each_element(dst, src_layouts, [&](const Offsets& off, ptrdiff_t dst_off) {
                for (size_t i = 0; i < n; ++i)
                    x[i] = load[i](inputs[i].raw_ptr(), off[i]);
                store(dst.raw_ptr(), dst_off, elemwise::eval_float(mode, x.data()));
            });
        } else {
            std::array<LoadInt, kMaxArity> load{};
            for (size_t i = 0; i < n; ++i)
                load[i] = load_int_fn(inputs[i].layout.dtype);
            StoreInt store = store_int_fn(dst.layout.dtype);
            std::array<int64_t, kMaxArity> x{};
            for_each_element(dst, src_layouts, [&](const Offsets& off, ptrdiff_t dst_off) {
                for (size_t i = 0; i < n; ++i)
                    x[i] = load[i](inputs[i].raw_ptr(), off[i]);
                store(dst.raw_ptr(), dst_off, elemwise::eval_int(mode, x.data(), data));
            });
        }
    }

private:
    using Mode = dnn::elemwise::Mode;

    // The complex modes, in double from float parts and rounded once per part (a product's
    // ac - bd loses nothing to an intermediate rounding).
    static dt_complex64 eval_complex(Mode mode, const dt_complex64* x) {
        const double a = x[0].real(), b = x[0].imag();
        double re = 0, im = 0;
        switch (mode) {
            case Mode::NEGATE:
                re = -a, im = -b;
                break;
            case Mode::ADD:
                re = a + x[1].real(), im = b + x[1].imag();
                break;
            case Mode::SUB:
                re = a - x[1].real(), im = b - x[1].imag();
                break;
            case Mode::MUL: {
                const double c = x[1].real(), d = x[1].imag();
                re = a * c - b * d, im = a * d + b * c;
                break;
            }
            default:
                throw DTypeError("Elemwise: no complex formula for this mode");
        }
        return {static_cast<float>(re), static_cast<float>(im)};
    }

    using Offsets = std::array<ptrdiff_t, kMaxArity>;

    // Calls f(input offsets, dst offset) for every element of dst, in row-major order.
    template <class F>
    static void for_each_element(const TensorND& dst, const std::vector<TensorLayout>& srcs,
                                 F&& f) {
        Offsets off{};
        for_each_index(dst.layout, [&](const auto& idx) {
            for (size_t i = 0; i < srcs.size(); ++i)
                off[i] = offset_of(srcs[i], idx.data());
            f(off, offset_of(dst.layout, idx.data()));
        });
    }
};

}  // namespace
NM_REGISTER_NAIVE(Elemwise, ElemwiseImpl);
}  // namespace neomeg::dnn::naive
