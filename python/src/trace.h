// The Python half of trace recording (trace.cpp): while a megengine.jit.trace records, the
// extension notes every Python Tensor object the traced code reads or replaces, so that after
// the recording each tensor from outside the trace (a parameter, an optimizer's state) can be
// bound to the Python object that holds it, and each object given a new value inside the trace
// (Tensor._reset) gets the replay's new value written back.
#pragma once

#include <Python.h>

#include "neomeg/imperative/trace.h"

namespace neomeg::python::trace {

// Notes `tensor` (a Python Tensor) with its current value; call it before the value changes.
// Does nothing unless a Python trace is recording on this thread.
void note(PyObject* tensor);

// Makes `t` (an op's output) an output of the graph the recording trace compiles, which no replay
// returns: the op that computes it then runs on every replay even where nothing reads its result
// (a collective whose result a rank discards must still run there, or its peers wait for it).
// Does nothing unless a Python trace is recording on this thread.
void keep(const imperative::Tensor& t);

inline void note_if_tracing(PyObject* tensor) {
    if (imperative::TraceRecorder::any_active()) [[unlikely]]
        note(tensor);
}

// note(tensor), called just before `tensor` takes another value (_reset, _assign, x += y): the
// recording also lets go of the value it had before the call, which the graph reads from it.
void note_replacing(PyObject* tensor);

inline void note_replacing_if_tracing(PyObject* tensor) {
    if (imperative::TraceRecorder::any_active()) [[unlikely]]
        note_replacing(tensor);
}

}  // namespace neomeg::python::trace
