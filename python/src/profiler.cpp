// The eager op timeline for megengine.utils.profiler (imperative/op_timeline.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "neomeg/imperative/op_timeline.h"

namespace py = pybind11;

namespace neomeg::python {

void init_profiler(py::module_& m) {
    m.def("_timeline_start", &imperative::timeline_start,
          "Starts recording the eager kernel-library calls.");
    m.def(
            "_timeline_stop",
            [] {
                py::list out;
                for (auto& e : imperative::timeline_stop())
                    out.append(py::make_tuple(e.name, e.params, e.inputs, e.start_ns, e.duration_ns,
                                              e.thread));
                return out;
            },
            "Stops recording; returns (name, params, input layouts, start ns, duration ns, "
            "thread) per call, oldest first.");
    m.def("_timeline_recording", &imperative::timeline_recording);
    m.def("_timeline_now_ns", &imperative::timeline_now_ns,
          "Now on the clock of the timeline's events, in nanoseconds.");
}

}  // namespace neomeg::python
