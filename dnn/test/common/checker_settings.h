// What Checker (common/checker.h) and CudaChecker (cuda/cuda_test.h) share: the settings of a
// check (params, input dtypes, ranges or explicit values, tolerance, padded layouts, generator
// output shapes), the inputs made from them, and how a mismatch is described. Each setter returns
// the derived checker, so that calls chain on either.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/host_tensor.h"

namespace neomeg::dnn::test {

template <class Derived, class Op>
class CheckerSettings {
public:
    using Param = typename Op::Param;

    Derived& set_param(const Param& p) {
        m_param = p;
        return self();
    }
    Derived& set_dtype(size_t i, DType dt) {
        m_dtypes[i] = dt;
        return self();
    }
    Derived& set_range(size_t i, double lo, double hi) {
        m_ranges[i] = {lo, hi};
        return self();
    }
    Derived& set_epsilon(double eps) {
        m_epsilon = eps;
        return self();
    }
    Derived& set_noncontiguous(bool on) {
        m_noncontig = on;
        return self();
    }
    // Output shapes for generator ops (Fill, RNG, ...).
    Derived& set_output_shapes(std::vector<TensorShape> s) {
        m_out_shapes = std::move(s);
        return self();
    }
    // Input values given explicitly (logical order) instead of random.
    Derived& set_values(size_t i, std::vector<double> v) {
        m_values[i] = std::move(v);
        return self();
    }

    // Runs with contiguous inputs of these shapes (or padded ones when set_noncontiguous).
    Derived& execs(const std::vector<TensorShape>& shapes) {
        std::vector<TensorLayout> layouts;
        for (size_t i = 0; i < shapes.size(); ++i) {
            TensorLayout l(shapes[i], dtype_of(i));
            layouts.push_back(m_noncontig ? padded_layout(l) : l);
        }
        return self().exec_layouts(layouts);
    }

protected:
    explicit CheckerSettings(uint32_t seed) : m_reference(Handle::make_naive()), m_rng(seed) {}

    // Inputs of exactly these layouts for the target (random in their ranges, or the values set)
    // and contiguous copies of them for the reference.
    void make_inputs(const std::vector<TensorLayout>& layouts, std::vector<HostTensor>& target,
                     std::vector<HostTensor>& reference) {
        for (size_t i = 0; i < layouts.size(); ++i) {
            HostTensor t(layouts[i]);
            if (m_values.count(i))
                t.set_values(m_values[i]);
            else
                fill_uniform(t, range_of(i).first, range_of(i).second, m_rng);
            reference.push_back(t.contiguous());
            target.push_back(std::move(t));
        }
    }
    // The naive operator under the current params.
    std::unique_ptr<Op> reference_op() const {
        auto op = m_reference->template create_operator<Op>();
        op->param() = m_param;
        return op;
    }
    double epsilon_for(DType dt) const { return m_epsilon ? *m_epsilon : default_epsilon(dt); }
    static std::string describe(const std::vector<TensorLayout>& ls) {
        std::string s;
        for (auto& l : ls)
            s += (s.empty() ? "" : ", ") + l.to_string();
        return s;
    }

    Param m_param{};
    std::vector<TensorShape> m_out_shapes;
    bool m_noncontig = false;

private:
    Derived& self() { return static_cast<Derived&>(*this); }
    DType dtype_of(size_t i) const {
        auto it = m_dtypes.find(i);
        return it == m_dtypes.end() ? dtype::Float32 : it->second;
    }
    std::pair<double, double> range_of(size_t i) const {
        auto it = m_ranges.find(i);
        return it == m_ranges.end() ? std::pair{-1.0, 1.0} : it->second;
    }

    std::unique_ptr<Handle> m_reference;
    std::mt19937 m_rng;
    std::map<size_t, DType> m_dtypes;
    std::map<size_t, std::pair<double, double>> m_ranges;
    std::map<size_t, std::vector<double>> m_values;
    std::optional<double> m_epsilon;
};

}  // namespace neomeg::dnn::test
