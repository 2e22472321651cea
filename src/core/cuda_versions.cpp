// Version numbers as text, with or without CUDA in the build: the kernel library's formatting,
// which its version-mismatch sentences use too.
#include "neomeg/core/cuda_env.h"
#include "neomeg/dnn/cuda_libraries.h"

namespace neomeg::cuda {

std::string cuda_version_string(int v) {
    return dnn::cuda_libraries::cuda_version_string(v);
}

std::string cudnn_version_string(int v) {
    return dnn::cuda_libraries::version_string(v);
}

}  // namespace neomeg::cuda
