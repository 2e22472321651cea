// Splitting a loop over OpenMP threads (the runtime oneDNN runs on), only when the work is large
// enough to pay for waking them: below `grain` units of work per thread the loop stays on the
// calling thread, and never enters a parallel region, which a forked child (capped at one thread
// by the handle's fork handler) must not. Files including this compile with OpenMP's flags.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>

namespace neomeg::dnn::x86 {

// The work per thread below which a loop stays on one thread: waking a sleeping OpenMP thread
// costs about as much as this many simple float operations.
inline constexpr size_t kParallelGrain = size_t(1) << 16;

// How many threads parallel_ranges(n, work, grain, ...) runs on. Inside another loop's parallel
// region (parallel_items) a loop runs on its thread: a nested region would get one thread anyway,
// and entering it costs.
inline size_t parallel_threads(size_t n, size_t work, size_t grain) {
    if (omp_in_parallel())
        return 1;
    return std::max<size_t>(1, std::min({static_cast<size_t>(omp_get_max_threads()),
                                         std::max<size_t>(work / grain, 1), n}));
}

// Calls f(begin, end) on disjoint ranges covering [0, n); `work` is the total work of the loop.
template <class F>
void parallel_ranges(size_t n, size_t work, size_t grain, F&& f) {
    size_t threads = parallel_threads(n, work, grain);
    if (threads <= 1) {
        f(size_t{0}, n);
        return;
    }
#pragma omp parallel num_threads(static_cast <int>(threads))
    {
        size_t t = static_cast<size_t>(omp_get_thread_num());
        size_t nt = static_cast<size_t>(omp_get_num_threads());
        size_t chunk = (n + nt - 1) / nt;
        size_t b = std::min(n, t * chunk), e = std::min(n, b + chunk);
        if (b < e)
            f(b, e);
    }
}

// Calls f(i) for every item i < n (images of a batch, each as costly as the next), `work` the
// whole loop's: whole items across threads in one parallel region where they share evenly among
// the threads (n a multiple of them, or at least four each), each item's own parallel_ranges then
// on its thread; otherwise one item after another, each item's loops split across threads. Per
// item, loops that each entered a region of their own (a few microseconds each, far more when a
// thread has to be woken on a busy machine) enter one in all.
template <class F>
void parallel_items(size_t n, size_t work, size_t grain, F&& f) {
    size_t threads = std::min(
            {static_cast<size_t>(omp_get_max_threads()), std::max<size_t>(work / grain, 1), n});
    if (threads > 1 && !omp_in_parallel() && (n % threads == 0 || n >= 4 * threads)) {
        parallel_ranges(n, work, grain, [&](size_t b, size_t e) {
            for (size_t i = b; i < e; ++i)
                f(i);
        });
        return;
    }
    for (size_t i = 0; i < n; ++i)
        f(i);
}

}  // namespace neomeg::dnn::x86
