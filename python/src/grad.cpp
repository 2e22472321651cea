// GradKey for Python: megengine.autodiff.GradManager drives one per recording session.
#include <pybind11/stl.h>

#include "neomeg/imperative/grad.h"
#include "tensor.h"

namespace neomeg::python {

namespace {

std::vector<imperative::Tensor> unwrap(const std::vector<TensorWrapper*>& ts) {
    std::vector<imperative::Tensor> out;
    out.reserve(ts.size());
    for (auto* t : ts)
        out.push_back(t->value);
    return out;
}

// Whether `derived`, made by an op from `then` (an earlier value of the tensor now holding `now`),
// may stand in for making it again from `now`: the value is the same storage and layout, and
// every recording key that would record an op on `now` recorded `derived` in a graph it still
// holds, so a gradient through `derived` reaches `now`. autocast's cast cache asks this.
bool still_derived(const imperative::Tensor& now, const imperative::Tensor& then,
                   const imperative::Tensor& derived) {
    if (now.dnn_tensor().raw_ptr() != then.dnn_tensor().raw_ptr() ||
        !now.layout().eq_layout(then.layout()))
        return false;
    if (!now.grad_meta())
        return true;
    for (const auto& [weak_key, slot] : now.grad_meta()->slots) {
        auto key = weak_key.lock();
        if (!key || !key->active())
            continue;
        auto d = derived.grad_meta() ? derived.grad_meta()->slot_of(key.get()) : nullptr;
        if (!d || d->producer.expired())
            return false;
    }
    return true;
}

}  // namespace

void init_grad(py::module_& m) {
    m.def(
            "_still_derived",
            [](const TensorWrapper& now, const TensorWrapper& then, const TensorWrapper& derived) {
                return still_derived(now.value, then.value, derived.value);
            },
            py::arg("now"), py::arg("then"), py::arg("derived"),
            "Whether `derived` (made from `then`) can be reused for `now`: same value, recorded "
            "by every active key that records `now`.");
    using imperative::GradKey;
    py::class_<GradKey, std::shared_ptr<GradKey>>(m, "GradKey",
                                                  "One autograd recording session (a tape).")
            .def(py::init(&GradKey::make))
            // Returns a handle on the tensor as attached: it keeps that autograd identity when
            // the Python object later stands for another value (x[i] = v on a Parameter), so
            // gradients are still of the attached value, as MegEngine gives them.
            .def("attach",
                 [](GradKey& k, TensorWrapper& t) {
                     k.attach(t.value);
                     return TensorWrapper{t.value};
                 })
            .def("is_attached",
                 [](GradKey& k, const TensorWrapper& t) { return k.is_attached(t.value); })
            .def("activate", &GradKey::activate)
            .def("deactivate", &GradKey::deactivate)
            .def_property_readonly("active", &GradKey::active)
            .def("release", &GradKey::release)
            .def(
                    "backward",
                    [](GradKey& k, const std::vector<TensorWrapper*>& ys,
                       const std::vector<TensorWrapper*>& dys,
                       const std::vector<TensorWrapper*>& wrt, const py::object& on_ready) {
                        GradKey::ReadyFn ready;
                        if (!on_ready.is_none())
                            ready = [&on_ready](size_t i, const imperative::Tensor& g) {
                                on_ready(i, TensorWrapper{g});
                            };
                        auto grads = k.backward(unwrap(ys), unwrap(dys), unwrap(wrt), ready);
                        py::list out;
                        for (auto& g : grads)
                            out.append(g.valid() ? py::cast(TensorWrapper{std::move(g)})
                                                 : py::none());
                        return out;
                    },
                    py::arg("ys"), py::arg("dys"), py::arg("wrt"), py::arg("on_ready") = py::none(),
                    "Gradients of sum(ys[i] * dys[i]) (dys empty: ones) w.r.t. each of wrt; None "
                    "where no path leads. on_ready(i, grad), when given, is called as each "
                    "gradient becomes final, while backward still runs.");
}

}  // namespace neomeg::python
