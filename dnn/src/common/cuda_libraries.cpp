// The version text and mismatch sentences of the CUDA libraries, with or without CUDA in the
// build; the loaders are dnn/src/cuda/libs/*_api.cpp.
#include "neomeg/dnn/cuda_libraries.h"

namespace neomeg::dnn::cuda_libraries {

const char* display_name(Library lib) {
    switch (lib) {
        case Library::Cublas:
            return "cuBLAS";
        case Library::Cudnn:
            return "cuDNN";
        case Library::Cusolver:
            return "cuSOLVER";
    }
    return "?";
}

std::string version_string(int v) {
    if (v <= 0)
        return "none";
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100);
}

std::string cuda_version_string(int v) {
    if (v <= 0)
        return "none";
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string cudnn_mismatch(int built, int found, int found_for_cuda, int cuda_runtime) {
    if (found / 10000 != built / 10000)
        return "cuDNN version mismatch: NeoMeg was built with cuDNN " + version_string(built) +
               " but the cuDNN found at run time is " + version_string(found);
    if (found_for_cuda > 0 && cuda_runtime > 0 && found_for_cuda / 1000 != cuda_runtime / 1000)
        return "cuDNN/CUDA version mismatch: the cuDNN found at run time (" +
               version_string(found) + ") was built for CUDA " +
               cuda_version_string(found_for_cuda) + " but NeoMeg's CUDA runtime is " +
               cuda_version_string(cuda_runtime);
    return "";
}

namespace {

// Libraries whose only compatibility rule is the major version.
std::string major_mismatch(const std::string& name, int built, int found) {
    if (found / 10000 != built / 10000)
        return name + " version mismatch: NeoMeg was built with " + name + " " +
               version_string(built) + " but the " + name + " found at run time is " +
               version_string(found);
    return "";
}

}  // namespace

std::string cublas_mismatch(int built, int found) {
    return major_mismatch("cuBLAS", built, found);
}

std::string cusolver_mismatch(int built, int found) {
    return major_mismatch("cuSOLVER", built, found);
}

#ifndef NEOMEG_WITH_CUDA
// Without CUDA, dnn/src/cuda (the loaders) is not compiled.
std::string library_file(Library) {
    return "";
}
std::string load_error(Library lib) {
    return std::string(display_name(lib)) + " is not used: NeoMeg was built without CUDA";
}
bool version_mismatch(Library) {
    return false;
}
int runtime_version(Library) {
    return -1;
}
int build_version(Library) {
    return -1;
}
#endif

}  // namespace neomeg::dnn::cuda_libraries
