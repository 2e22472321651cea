// broadcast, reduce (sum), gather, scatter, all-to-all, send and recv as ops of the eager
// runtime that a traced graph holds and runs on every replay, each differentiable by its adjoint
// collective (broadcast and reduce, gather and scatter, send and recv are each other's;
// all-to-all is its own). Every rank gets an output of the op's shape, so that every rank's graph
// holds the same ops: a rank that receives nothing (reduce's and gather's non-roots) gets zeros,
// and a send's output is a zero scalar token. Outputs are kept as hidden outputs of a recording
// trace (trace::keep), so that a rank that discards one still runs the collective.
#pragma once

#include <functional>
#include <memory>

#include "neomeg/distributed/communicator.h"
#include "neomeg/distributed/device_communicator.h"
#include "neomeg/imperative/op_def.h"
#include "neomeg/op/defs/indexing.h"
#include "neomeg/op/defs/views.h"

namespace neomeg::python {

// A group's communicators: Gloo's for CPU tensors, NCCL's (opened on first use) for GPU ones.
struct CollectiveTarget {
    std::shared_ptr<distributed::Communicator> host;
    std::function<distributed::DeviceCommunicator&(CompNode)> device;
    const void* group = nullptr;  // the group's identity, which is_same compares
};

enum class CollectiveKind { Broadcast, ReduceSum, Gather, Scatter, AllToAll, Send, Recv };

struct CollectiveParams {
    CollectiveKind kind = CollectiveKind::Broadcast;
    int peer = 0;            // the root (group rank), or a send's destination / a recv's source
    uint32_t tag = 0;        // send and recv: a message matches the peer's op of the same tag
    dnn::TensorShape shape;  // send: its input's; recv: its output's
    dnn::DType dtype;
};

std::shared_ptr<imperative::OpDef> make_collective_op(CollectiveTarget target,
                                                      CollectiveParams params);

// The kind named `name` ("broadcast", "reduce_sum", "gather", "scatter", "all_to_all",
// "send", "recv"); throws std::invalid_argument for another name.
CollectiveKind collective_kind(const std::string& name);

}  // namespace neomeg::python
