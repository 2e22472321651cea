// Version numbers as text, with or without CUDA in the build.
#include "neomeg/core/cuda_env.h"

namespace neomeg::cuda {

std::string cuda_version_string(int v) {
    if (v <= 0)
        return "none";
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string cudnn_version_string(int v) {
    if (v <= 0)
        return "none";
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100);
}

}  // namespace neomeg::cuda
