// megengine.autodiff.Function: a user-defined op whose forward and backward are Python methods.
// It is one OpDef to the tape: the Python side (autodiff/function.py) runs forward on the
// caller's tensors with recording suspended, and the tape calls the Python backward with the
// output gradients.
#include <pybind11/pybind11.h>

#include "neomeg/imperative/apply.h"
#include "neomeg/imperative/grad.h"
#include "tensor.h"

namespace neomeg::python {

namespace {

class PyFunctionOpDef final : public imperative::CustomOpDef {
public:
    explicit PyFunctionOpDef(py::object fn) : m_fn(std::move(fn)) {}

    imperative::OpId id() const override { return imperative::kCustomOpId; }
    const char* name() const override { return "Function"; }
    size_t hash() const override { return py::hash(m_fn); }
    bool is_same(const OpDef& rhs) const override {
        auto* r = dynamic_cast<const PyFunctionOpDef*>(&rhs);
        return r && r->m_fn.is(m_fn);
    }
    std::string to_string() const override {
        // m_fn is autodiff.function._Call; the name is that of the Function it calls.
        py::handle fn = m_fn.attr("function");
        return "Function(" + std::string(py::str(py::type::handle_of(fn).attr("__name__"))) + ")";
    }
    std::shared_ptr<OpDef> clone() const override {
        return std::make_shared<PyFunctionOpDef>(m_fn);
    }
    const imperative::GradRule* grad_rule() const override { return &kRule; }

    std::vector<imperative::Tensor> run(std::span<const imperative::Tensor> inputs) const override {
        py::tuple args(inputs.size());
        for (size_t i = 0; i < inputs.size(); ++i)
            args[i] = py::cast(TensorWrapper{inputs[i].detach()});
        auto outs = unwrap_outputs(m_fn.attr("forward")(*args), "forward");
        for (auto& t : outs) {
            if (!t.valid())
                throw py::type_error("Function.forward must return Tensors, got None");
            // A forward may return one of its inputs (an identity, a straight-through
            // estimator): that tensor is on the tape already, and keeping its autograd
            // identity would send gradients past this Function's backward.
            t = t.detach();
        }
        return outs;
    }

private:
    static std::vector<imperative::Tensor> unwrap_outputs(const py::object& out, const char* what) {
        std::vector<imperative::Tensor> result;
        py::tuple items = py::isinstance<py::tuple>(out) || py::isinstance<py::list>(out)
                                  ? py::tuple(out)
                                  : py::make_tuple(out);
        for (auto item : items) {
            if (item.is_none()) {
                result.emplace_back();
                continue;
            }
            if (!py::isinstance<TensorWrapper>(item))
                throw py::type_error(
                        std::string("Function.") + what + " must return Tensors (or None " +
                        "for no gradient), got " +
                        std::string(py::str(py::type::handle_of(item).attr("__name__"))));
            result.push_back(item.cast<const TensorWrapper&>().value);
        }
        return result;
    }

    static std::vector<imperative::Tensor> backward(
            const OpDef& def, std::span<const imperative::Tensor> inputs,
            std::span<const imperative::Tensor>, std::span<const imperative::Tensor> output_grads,
            std::span<const bool>) {
        const auto& self = static_cast<const PyFunctionOpDef&>(def);
        // An output no gradient reached gets None, as MegEngine passes it.
        py::tuple args(output_grads.size());
        for (size_t i = 0; i < output_grads.size(); ++i)
            args[i] =
                    output_grads[i].valid() ? py::cast(TensorWrapper{output_grads[i]}) : py::none();
        auto grads = unwrap_outputs(self.m_fn.attr("backward")(*args), "backward");
        if (grads.size() != inputs.size())
            throw py::value_error("Function.backward returned " + std::to_string(grads.size()) +
                                  " gradients for " + std::to_string(inputs.size()) + " inputs");
        return grads;
    }

    // Inputs are saved only to count them; the Function keeps what its backward needs.
    static constexpr imperative::GradRule kRule{&PyFunctionOpDef::backward, true, false, true};
    py::object m_fn;
};

}  // namespace

void init_function(py::module_& m) {
    m.def(
            "apply_function",
            [](py::object fn, py::args args) {
                std::vector<imperative::Tensor> inputs;
                for (auto a : args)
                    inputs.push_back(a.cast<const TensorWrapper&>().value);
                auto outs = imperative::apply(PyFunctionOpDef(std::move(fn)), inputs);
                py::tuple result(outs.size());
                for (size_t i = 0; i < outs.size(); ++i)
                    result[i] = py::cast(TensorWrapper{std::move(outs[i])});
                return result;
            },
            "Runs an autodiff.Function: forward now, its backward when autograd reaches it.");
}

}  // namespace neomeg::python
