// NM_HOST_DEVICE marks arithmetic that CUDA kernels and host code share from one header (the
// naive and x86 kernels, the CPU tests of the CUDA helpers): host and device functions under
// nvcc, plain inline functions elsewhere. Such headers stay free of the standard library's
// state (no streams, no allocation) so that device code can include them.
#pragma once

#if defined(__CUDACC__)
#define NM_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define NM_HOST_DEVICE inline
#endif
