// The CUDA environment: what NeoMeg was built with and what this machine has. The CUDA runtime
// is called only when a query needs it, and every query answers on a machine without a driver
// or a device ("no GPU": a count of 0, a driver version of 0) and in a build without CUDA
// (versions -1), as MegEngine's queries do. Nothing here prints.
#pragma once

#include <cstddef>
#include <string>

namespace neomeg::cuda {

bool built_with_cuda();
// Usable CUDA devices: 0 without a driver or device, or when the driver is older than the
// runtime (unavailable_reason() then names both versions).
int device_count();
// Why device_count() is 0, as a sentence; empty when there are devices.
std::string unavailable_reason();

// CUDA versions as MegEngine numbers them: major * 1000 + minor * 10 (13000 for 13.0). cuDNN
// versions as cuDNN 9 numbers them (CUDNN_VERSION): major * 10000 + minor * 100 + patch (91900
// for 9.19.0; MegEngine's major * 1000 + minor * 100 + patch is ambiguous once the minor reaches
// 10). -1 in a build without CUDA.
int build_version();          // the CUDA toolkit NeoMeg was compiled with
int runtime_version();        // the CUDA runtime in this process (linked statically)
int driver_version();         // the newest CUDA the driver supports; 0 without a driver
int cudnn_build_version();    // the cuDNN headers NeoMeg was compiled with
int cudnn_runtime_version();  // the cuDNN library found at run time; -1 when none is found
// "13.0" for 13000; "9.19.0" for a cuDNN number.
std::string cuda_version_string(int version);
std::string cudnn_version_string(int version);

// Throws std::runtime_error naming both versions when the cuDNN or cuBLAS found at run time has
// another major version than the headers NeoMeg was built with, or cuDNN was built for another
// CUDA major version than NeoMeg's runtime (neomeg/dnn/cuda_libraries.h loads them). Nothing
// when a library is not found: the kernels that need it say so.
void check_library_versions();

struct DeviceProperties {
    std::string name;
    int major = 0, minor = 0;  // compute capability
    size_t total_memory = 0;
    int multi_processor_count = 0;
};
// Throws std::runtime_error for a device outside [0, device_count()).
DeviceProperties device_properties(int device);

}  // namespace neomeg::cuda
