// The CUDA kernels' handle until the kernel library has them: GPU comp nodes load, allocate and
// copy, and running an operator on one says that the kernels were not built.
// dnn/src/cuda/handle.cpp defines the real make_cuda/cuda_available; this file goes when it does.
#include "neomeg/dnn/errors.h"
#include "neomeg/dnn/handle.h"

namespace neomeg::dnn {

std::unique_ptr<Handle> Handle::make_cuda(int device, void*) {
    throw NotSupportedError("CUDA kernels not built: no operator can run on gpu" +
                            std::to_string(device) + " in this build");
}

bool Handle::cuda_available() {
    return false;
}

}  // namespace neomeg::dnn
