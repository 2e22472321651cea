// The CUDA environment of a build without CUDA (NEOMEG_WITH_CUDA=OFF): no GPU, versions -1.
#include <stdexcept>

#include "neomeg/core/cuda_env.h"

namespace neomeg::cuda {

bool built_with_cuda() {
    return false;
}
int device_count() {
    return 0;
}
std::string unavailable_reason() {
    return "NeoMeg was built without CUDA";
}
int build_version() {
    return -1;
}
int runtime_version() {
    return -1;
}
int driver_version() {
    return -1;
}
int cudnn_build_version() {
    return -1;
}
int cudnn_runtime_version() {
    return -1;
}
void check_library_versions() {}
DeviceProperties device_properties(int device) {
    throw std::runtime_error("request gpu " + std::to_string(device) +
                             " out of valid range [0, 0): NeoMeg was built without CUDA");
}

}  // namespace neomeg::cuda
