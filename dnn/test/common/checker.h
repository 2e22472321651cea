// Checker: runs an operator on a target handle and on the naive reference with the same random
// inputs and compares the outputs within a per-dtype tolerance.
//
//   Checker<Elemwise> c(handle);           // target handle (naive compares naive with itself,
//   c.set_param(p).set_dtype(0, dtype::Float16)    which still checks strided/broadcast inputs
//    .execs({{2, 3}, {1, 3}});                     against their contiguous copies)
//
// Inputs are random in [lo, hi) per input (set_range); set_layout(i, ...) gives input i a
// non-contiguous or broadcast layout on the target side, while the reference always sees
// contiguous copies. set_noncontiguous(true) pads every input's rows on the target side.
#pragma once

#include <map>
#include <optional>

#include "common/host_tensor.h"

namespace neomeg::dnn::test {

template <class Op>
class Checker {
public:
    using Param = typename Op::Param;
    explicit Checker(Handle* target, uint32_t seed = 42)
        : m_target(target), m_reference(Handle::make_naive()), m_rng(seed) {}

    Checker& set_param(const Param& p) {
        m_param = p;
        return *this;
    }
    Checker& set_dtype(size_t i, DType dt) {
        m_dtypes[i] = dt;
        return *this;
    }
    Checker& set_range(size_t i, double lo, double hi) {
        m_ranges[i] = {lo, hi};
        return *this;
    }
    Checker& set_epsilon(double eps) {
        m_epsilon = eps;
        return *this;
    }
    Checker& set_noncontiguous(bool on) {
        m_noncontig = on;
        return *this;
    }
    // Output shapes for generator ops (Fill, RNG, ...).
    Checker& set_output_shapes(std::vector<TensorShape> s) {
        m_out_shapes = std::move(s);
        return *this;
    }
    // Input values given explicitly (logical order) instead of random.
    Checker& set_values(size_t i, std::vector<double> v) {
        m_values[i] = std::move(v);
        return *this;
    }

    // Runs with contiguous inputs of these shapes (or padded ones when set_noncontiguous).
    Checker& execs(const std::vector<TensorShape>& shapes) {
        std::vector<TensorLayout> layouts;
        for (size_t i = 0; i < shapes.size(); ++i) {
            TensorLayout l(shapes[i], dtype_of(i));
            layouts.push_back(m_noncontig ? padded_layout(l) : l);
        }
        return exec_layouts(layouts);
    }

    // Runs with exactly these input layouts on the target side.
    Checker& exec_layouts(const std::vector<TensorLayout>& layouts) {
        std::vector<HostTensor> target_in, ref_in;
        for (size_t i = 0; i < layouts.size(); ++i) {
            // Fill a contiguous tensor of the broadcast-free shape, then view it as asked.
            HostTensor t(layouts[i]);
            if (m_values.count(i))
                t.set_values(m_values[i]);
            else
                fill_uniform(t, range_of(i).first, range_of(i).second, m_rng);
            ref_in.push_back(t.contiguous());
            target_in.push_back(std::move(t));
        }
        auto target_op = m_target->create_operator<Op>();
        auto ref_op = m_reference->create_operator<Op>();
        target_op->param() = m_param;
        ref_op->param() = m_param;
        auto got = run_op(*target_op, target_in, m_out_shapes);
        auto want = run_op(*ref_op, ref_in, m_out_shapes);
        compare(got, want, *target_op, layouts, "");
        if (m_noncontig) {
            // The same run writing into padded output views: kernels must honour output strides
            // and leave the padding alone.
            auto padded = run_op_into_padded(*target_op, target_in, want);
            compare(padded, want, *target_op, layouts, " (padded output)");
        }
        return *this;
    }

private:
    void compare(const std::vector<HostTensor>& got, const std::vector<HostTensor>& want,
                 const OperatorBase& op, const std::vector<TensorLayout>& layouts,
                 const char* what) const {
        EXPECT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
            double eps = m_epsilon ? *m_epsilon : default_epsilon(want[i].dtype());
            EXPECT_TRUE(tensors_near(got[i], want[i], eps))
                    << "output " << i << what << " of " << op.param_str() << " on "
                    << m_target->name() << ", inputs " << describe(layouts);
        }
    }

    static std::vector<HostTensor> run_op_into_padded(OperatorBase& op,
                                                      const std::vector<HostTensor>& inputs,
                                                      const std::vector<HostTensor>& like) {
        std::vector<TensorLayout> in_layouts, out_layouts;
        std::vector<TensorND> in_nds, out_nds;
        for (auto& t : inputs) {
            in_layouts.push_back(t.layout());
            in_nds.push_back(t.nd());
        }
        std::vector<HostTensor> outs;
        for (auto& w : like) {
            outs.emplace_back(padded_layout(w.layout()));
            out_layouts.push_back(outs.back().layout());
        }
        for (auto& o : outs)
            out_nds.push_back(o.nd());
        std::vector<std::byte> ws(op.get_workspace_in_bytes(in_layouts, out_layouts));
        op.exec(in_nds, out_nds, {ws.data(), ws.size()});
        return outs;
    }

    DType dtype_of(size_t i) const {
        auto it = m_dtypes.find(i);
        return it == m_dtypes.end() ? dtype::Float32 : it->second;
    }
    std::pair<double, double> range_of(size_t i) const {
        auto it = m_ranges.find(i);
        return it == m_ranges.end() ? std::pair{-1.0, 1.0} : it->second;
    }
    static std::string describe(const std::vector<TensorLayout>& ls) {
        std::string s;
        for (auto& l : ls)
            s += (s.empty() ? "" : ", ") + l.to_string();
        return s;
    }

    Handle* m_target;
    std::unique_ptr<Handle> m_reference;
    std::mt19937 m_rng;
    Param m_param{};
    std::map<size_t, DType> m_dtypes;
    std::map<size_t, std::pair<double, double>> m_ranges;
    std::map<size_t, std::vector<double>> m_values;
    std::vector<TensorShape> m_out_shapes;
    std::optional<double> m_epsilon;
    bool m_noncontig = false;
};

}  // namespace neomeg::dnn::test
