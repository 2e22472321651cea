#include "common/host_tensor.h"

#include "src/common/dtype_dispatch.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::test {

using naive::for_each_offset;

HostTensor::HostTensor(const TensorLayout& layout) : m_layout(layout) {
    auto [lo, hi] = layout.span_elems();
    size_t bytes = layout.dtype.size(static_cast<size_t>(hi - lo));
    m_storage.resize(bytes / sizeof(std::max_align_t) + 1);
    std::memset(m_storage.data(), 0, m_storage.size() * sizeof(std::max_align_t));
    m_origin_bytes = -static_cast<ptrdiff_t>(layout.dtype.size()) * lo;
}

HostTensor HostTensor::from(const TensorShape& shape, const std::vector<double>& values, DType dt) {
    HostTensor t(TensorLayout(shape, dt));
    t.set_values(values);
    return t;
}

std::vector<double> HostTensor::values() const {
    std::vector<double> out;
    out.reserve(m_layout.total_nr_elems());
    TensorND t = nd();
    dispatch_dtype(m_layout.dtype.storage(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        for_each_offset(m_layout, [&](ptrdiff_t off) {
            out.push_back(
                    static_cast<double>(static_cast<compute_type_t<T>>(naive::elem<T>(t, off))));
        });
    });
    return out;
}

void HostTensor::set_values(const std::vector<double>& values) {
    if (values.size() != m_layout.total_nr_elems())
        throw std::invalid_argument(
                str_cat("set_values: ", values.size(), " values for ", m_layout.to_string()));
    TensorND t = nd();
    size_t i = 0;
    dispatch_dtype(m_layout.dtype.storage(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        for_each_offset(m_layout, [&](ptrdiff_t off) {
            if constexpr (is_float_type_v<T>)
                naive::elem<T>(t, off) = static_cast<T>(static_cast<float>(values[i++]));
            else
                naive::elem<T>(t, off) = static_cast<T>(values[i++]);
        });
    });
}

double HostTensor::at(std::initializer_list<size_t> idx) const {
    std::vector<size_t> v(idx);
    ptrdiff_t off = naive::offset_of(m_layout, v.data());
    double r = 0;
    TensorND t = nd();
    dispatch_dtype(m_layout.dtype.storage(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        r = static_cast<double>(static_cast<compute_type_t<T>>(naive::elem<T>(t, off)));
    });
    return r;
}

HostTensor HostTensor::contiguous() const {
    HostTensor r(TensorLayout(m_layout, m_layout.dtype));
    r.set_values(values());
    return r;
}

void fill_uniform(HostTensor& t, double lo, double hi, std::mt19937& rng) {
    std::vector<double> v(t.layout().total_nr_elems());
    DType dt = t.dtype();
    std::uniform_real_distribution<double> dist(lo, hi);
    for (auto& x : v) {
        x = dist(rng);
        if (dt.is_int())
            x = std::floor(x);
        else if (dt.is_bool())
            x = x > (lo + hi) / 2 ? 1 : 0;
    }
    t.set_values(v);
}

HostTensor random_tensor(const TensorLayout& l, std::mt19937& rng) {
    HostTensor t(l);
    fill_uniform(t, -1, 1, rng);
    return t;
}

TensorLayout padded_view(const TensorShape& s, size_t axis, size_t extra) {
    TensorShape big = s;
    big[axis] += extra;
    TensorLayout b(big, dtype::Float32), view(s, dtype::Float32);
    for (size_t i = 0; i < s.ndim; ++i)
        view.stride[i] = b.stride[i];
    return view;
}

double default_epsilon(DType dt) {
    switch (dt.enumv()) {
        case DTypeEnum::Float32:
            return 1e-4;
        case DTypeEnum::Float16:
            return 2e-3;
        case DTypeEnum::BFloat16:
            return 2e-2;
        default:
            return 0;
    }
}

::testing::AssertionResult tensors_near(const HostTensor& a, const HostTensor& b, double eps) {
    if (!a.shape().eq_shape(b.shape()))
        return ::testing::AssertionFailure()
               << "shapes differ: " << a.layout().to_string() << " vs " << b.layout().to_string();
    if (a.dtype() != b.dtype())
        return ::testing::AssertionFailure()
               << "dtypes differ: " << a.dtype().name() << " vs " << b.dtype().name();
    auto va = a.values(), vb = b.values();
    for (size_t i = 0; i < va.size(); ++i) {
        bool both_nan = std::isnan(va[i]) && std::isnan(vb[i]);
        bool same_inf = std::isinf(va[i]) && va[i] == vb[i];
        if (both_nan || same_inf)
            continue;
        if (!(std::abs(va[i] - vb[i]) <= eps * std::max(1.0, std::abs(vb[i]))))
            return ::testing::AssertionFailure()
                   << "element " << i << " (row-major) of " << a.shape().to_string() << ": "
                   << va[i] << " vs " << vb[i] << " (eps " << eps << ")";
    }
    return ::testing::AssertionSuccess();
}

std::vector<HostTensor> run_op(OperatorBase& op, const std::vector<HostTensor>& inputs,
                               const std::vector<TensorShape>& output_shapes) {
    std::vector<TensorLayout> in_layouts;
    std::vector<TensorND> in_nds;
    for (auto& t : inputs) {
        in_layouts.push_back(t.layout());
        in_nds.push_back(t.nd());
    }
    std::vector<TensorLayout> out_layouts(op.num_outputs());
    for (size_t i = 0; i < output_shapes.size() && i < out_layouts.size(); ++i)
        static_cast<TensorShape&>(out_layouts[i]) = output_shapes[i];
    op.deduce_layout(in_layouts, out_layouts);
    std::vector<HostTensor> outs;
    std::vector<TensorND> out_nds;
    for (auto& l : out_layouts) {
        outs.emplace_back(l);
        out_nds.push_back(outs.back().nd());
    }
    size_t ws = op.get_workspace_in_bytes(in_layouts, out_layouts);
    std::vector<std::byte> workspace(ws);
    op.exec(in_nds, out_nds, {workspace.data(), ws});
    return outs;
}

TensorLayout padded_layout(const TensorLayout& c) {
    TensorLayout r = c;
    ptrdiff_t acc = 1;
    for (size_t i = r.ndim; i-- > 0;) {
        r.stride[i] = acc + (i + 1 == r.ndim ? 1 : 0);  // innermost stride 2, rows padded
        acc = r.stride[i] * static_cast<ptrdiff_t>(std::max<size_t>(r.shape[i], 1)) + 1;
    }
    return r;
}

HostTensor numeric_grad(const std::function<HostTensor(const std::vector<HostTensor>&)>& f,
                        std::vector<HostTensor> inputs, size_t k, const HostTensor& dy,
                        double step) {
    auto x = inputs[k].values();
    auto dyv = dy.values();
    std::vector<double> grad(x.size());
    auto loss = [&]() {
        auto y = f(inputs).values();
        double s = 0;
        for (size_t i = 0; i < y.size(); ++i)
            s += y[i] * dyv[i];
        return s;
    };
    for (size_t i = 0; i < x.size(); ++i) {
        double orig = x[i];
        x[i] = orig + step;
        inputs[k].set_values(x);
        double lp = loss();
        x[i] = orig - step;
        inputs[k].set_values(x);
        double lm = loss();
        x[i] = orig;
        grad[i] = (lp - lm) / (2 * step);
    }
    inputs[k].set_values(x);
    return HostTensor::from(inputs[k].shape(), grad, inputs[k].dtype());
}

}  // namespace neomeg::dnn::test
