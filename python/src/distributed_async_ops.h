// The all-reduce of a gradient bucket as two ops of the eager runtime, so that a traced
// training step overlaps it with the rest of backward: AllReduceStart copies the gradients into
// its output (the bucket), hands the all-reduce in place in it to the communicator's worker
// thread and returns at once; AllReduceWait, recorded when backward
// ends, waits for it and yields the bucket's gradients (split and, for a mean, divided). A compiled
// graph runs its steps in recording order where the data allows (ComputingGraph::topo_order), so
// the bucket's communication runs while the steps between the two compute the remaining gradients.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <vector>

#include "neomeg/distributed/communicator.h"
#include "neomeg/imperative/op_def.h"

namespace neomeg::python {

// Runs f without the GIL where this thread holds it (communication never needs it).
template <class F>
void without_gil(F&& f) {
    if (PyGILState_Check()) {
        pybind11::gil_scoped_release nogil;
        f();
    } else {
        f();
    }
}

// What a start passes to its wait: the all-reduce in flight and, in eager runs, the bucket it
// writes (a graph's arena keeps that alive instead: the wait reads it).
struct AsyncAllReduceSlot {
    std::shared_ptr<distributed::Work> work;
    imperative::Tensor output;
};

// Start and wait share the slot, their communicator and their bucket's index in the step (which
// a trace's check compares, and which keeps CSE from merging two starts). The start's inputs
// are the gradients (one dtype), its output the flat bucket holding them in order.
std::shared_ptr<imperative::OpDef> make_all_reduce_start(
        std::shared_ptr<distributed::Communicator> comm, distributed::ReduceOp op, int index,
        std::shared_ptr<AsyncAllReduceSlot> slot);
// The wait's outputs: consecutive parts of the bucket in `shapes` (their sizes add up to the
// bucket's), each divided by `divisor` (1: copied; otherwise float dtypes only).
std::shared_ptr<imperative::OpDef> make_all_reduce_wait(
        std::shared_ptr<distributed::Communicator> comm, int index,
        std::shared_ptr<AsyncAllReduceSlot> slot, std::vector<dnn::TensorShape> shapes,
        int divisor);

}  // namespace neomeg::python
