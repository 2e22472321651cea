// The number of threads the x86 kernels run on: oneDNN's OpenMP pool and our own parallel loops
// (src/x86/parallel.h). All cores by default, or OMP_NUM_THREADS; one in a process forked from a
// process that had an x86 handle, whose OpenMP pool does not survive the fork (src/x86/handle.cpp).
// megengine.distributed's launcher gives each rank its share of the cores with it, so that ranks
// on one machine do not crowd each other's threads. Operators plan with the count they see first:
// set it before the first x86 operator runs.
#pragma once

namespace neomeg::dnn {

// std::invalid_argument for n < 1, and for n > 1 in a process forked from one that had an x86
// handle. A build without oneDNN's OpenMP runtime has one thread and takes only n == 1.
void set_x86_threads(int n);
int x86_threads();

}  // namespace neomeg::dnn
