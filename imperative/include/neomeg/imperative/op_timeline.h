// A timeline of eager kernel-library calls, recorded while a profiler asks for it
// (megengine.utils.profiler.Profiler): per call the op, its params, its input layouts, the
// thread, and its start and duration on the steady clock. Off by default; while off, a call
// pays one relaxed atomic load. On a GPU comp node the duration is the host's enqueue time:
// kernels run asynchronously.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "neomeg/dnn/tensor.h"
#include "neomeg/imperative/op_def.h"

namespace neomeg::imperative {

struct TimelineEvent {
    std::string name;                       // the op's name (an Elemwise's with its mode)
    std::string params;                     // OpDef::to_string()
    std::vector<std::string> inputs;        // input layouts
    int64_t start_ns = 0, duration_ns = 0;  // steady clock
    uint64_t thread = 0;  // a small per-thread number, 0 for the first thread seen
};

// Starts recording (dropping events of an earlier recording not yet taken).
void timeline_start();
// Stops recording and returns the events, oldest first.
std::vector<TimelineEvent> timeline_stop();
// Whether a recording is running.
bool timeline_recording();
// Now on the clock of the events, in nanoseconds.
int64_t timeline_now_ns();
// Records one call (a no-op while not recording).
void timeline_add(const OpDef& def, std::span<const dnn::TensorLayout> layouts, int64_t start_ns,
                  int64_t end_ns);

}  // namespace neomeg::imperative
