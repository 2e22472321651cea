// A scope run at a chosen OpenMP thread count, the caller's restored after: the x86 kernels split
// their loops by omp_get_max_threads() (src/x86/parallel.h) and oneDNN sizes its parallel regions
// by the same runtime setting, so a test can run one kernel at 1, 2 and 3 threads on the same
// inputs. The setting is the calling thread's (omp_set_num_threads); more threads than cores
// share them, which changes the timing only.
#pragma once

#include <omp.h>

namespace neomeg::dnn::test {

class ScopedOmpThreads {
public:
    explicit ScopedOmpThreads(int threads) : m_old(omp_get_max_threads()) {
        omp_set_num_threads(threads);
    }
    ~ScopedOmpThreads() { omp_set_num_threads(m_old); }
    ScopedOmpThreads(const ScopedOmpThreads&) = delete;
    ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

private:
    int m_old;
};

}  // namespace neomeg::dnn::test
