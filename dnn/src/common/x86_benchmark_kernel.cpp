#include "neomeg/dnn/x86_benchmark_kernel.h"

#include <atomic>

namespace neomeg::dnn {
namespace {
std::atomic<bool> g_on{false};
}  // namespace

void set_x86_benchmark_kernel(bool on) {
    g_on.store(on, std::memory_order_relaxed);
}

bool x86_benchmark_kernel() {
    return g_on.load(std::memory_order_relaxed);
}

}  // namespace neomeg::dnn
