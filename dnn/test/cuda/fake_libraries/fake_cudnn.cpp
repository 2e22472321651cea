// A stand-in for a cuDNN of another version (8.9.7, built for CUDA 11.8): only the two version
// queries the loader asks first, so the loader's mismatch path is tested on any machine.
#include <cstddef>

extern "C" {
size_t cudnnGetVersion() {
    return 80907;
}
size_t cudnnGetCudartVersion() {
    return 11080;
}
}
