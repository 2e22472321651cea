#include "neomeg/dnn/x86_threads.h"

#include <stdexcept>
#include <string>

#if NEOMEG_WITH_DNNL
#include <oneapi/dnnl/dnnl_config.h>
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#define NM_X86_OPENMP 1
#endif
#endif

namespace neomeg::dnn {

#if NM_X86_OPENMP
namespace x86 {
unsigned fork_generation();  // src/x86/handle.h
}  // namespace x86
#endif

void set_x86_threads(int n) {
    if (n < 1)
        throw std::invalid_argument("x86 threads: expected at least 1, got " + std::to_string(n));
#if NM_X86_OPENMP
    // A pool made before the fork has no threads here: a region of more than one would wait
    // for them forever.
    if (n > 1 && x86::fork_generation() > 0)
        throw std::invalid_argument(
                "x86 threads: this process was forked from one that ran x86 kernels, whose "
                "OpenMP pool does not survive a fork; it runs them on one thread");
    omp_set_num_threads(n);
#else
    if (n > 1)
        throw std::invalid_argument("x86 threads: this build has no OpenMP runtime: one thread");
#endif
}

int x86_threads() {
#if NM_X86_OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

}  // namespace neomeg::dnn
