// megengine.dtr's switches and counters (imperative/include/neomeg/imperative/dtr.h).
#include <pybind11/pybind11.h>

#include "neomeg/imperative/dtr.h"

namespace py = pybind11;

namespace neomeg::python {

void init_dtr(py::module_& m) {
    namespace dtr = imperative::dtr;
    m.def(
            "dtr_set_config",
            [](bool enabled, size_t threshold, size_t minimum, bool sqrt_sampling,
               bool measured_cost) {
                dtr::set_config({enabled, threshold, minimum, sqrt_sampling,
                                 measured_cost ? dtr::Cost::Measured : dtr::Cost::Estimate});
            },
            py::arg("enabled"), py::arg("eviction_threshold"), py::arg("evictee_minimum_size"),
            py::arg("sqrt_sampling"), py::arg("measured_cost") = false,
            "Sets DTR's policy; enabling binds it to the calling thread.");
    m.def("dtr_clear_candidates", &dtr::clear_candidates,
          "Forgets every eviction candidate (values already evicted still recompute).");
    m.def(
            "dtr_stats",
            [] {
                auto s = dtr::stats();
                py::dict d;
                d["evictions"] = s.evictions;
                d["released"] = s.released;
                d["recomputations"] = s.recomputations;
                d["candidates"] = s.candidates;
                return d;
            },
            "DTR's counters since the last dtr_reset_stats().");
    m.def("dtr_reset_stats", &dtr::reset_stats);
}

}  // namespace neomeg::python
