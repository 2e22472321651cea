// Static memory planning: every buffer an executable needs between its steps (intermediate
// vars, each op's workspace) gets an offset in one arena per comp node, chosen by liveness so
// that buffers never live at the same time share bytes.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace neomeg::graph {

// `size` bytes, live from step `begin` through step `end` (inclusive).
struct BufferRequest {
    size_t size = 0;
    size_t begin = 0;
    size_t end = 0;
};

struct MemoryPlan {
    std::vector<size_t> offsets;  // one per request, in bytes from the arena's start
    size_t arena_bytes = 0;       // the arena's size: the planned peak
    size_t total_bytes = 0;       // the sum of the (aligned) sizes: the arena without reuse
    size_t live_peak_bytes = 0;   // the most bytes live at one step: no plan can do better
};

// Greedy best fit by size: the largest buffers are placed first, each into the smallest gap
// left between the placed buffers whose lifetimes overlap its own, else above them all.
// Offsets and sizes are rounded up to `alignment` (a power of two). ParamError for a request
// that ends before it begins.
MemoryPlan plan_memory(std::span<const BufferRequest> requests, size_t alignment = 64);

}  // namespace neomeg::graph
