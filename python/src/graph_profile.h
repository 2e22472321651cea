// jit.trace(profiling=True)'s raw material: a compiled graph's last run, step by step, as Python
// dicts; megengine/jit/profile.py arranges them in MegEngine's get_profile() layout.
#pragma once

#include <pybind11/pybind11.h>

#include "neomeg/graph/executable.h"

namespace neomeg::python {

namespace py = pybind11;

// Per step of `exe`'s last run, in execution order: {"id", "type", "name", "params",
// "comp_node", "inputs", "outputs", "start", "end"}, each input/output a dict {"id", "name",
// "shape", "dtype"}; "start"/"end" in seconds since profiling began. Empty before a profiled run.
py::list last_run_profile(const graph::Executable& exe);

}  // namespace neomeg::python
