// cuda_libraries.h's loading half in a CUDA build: the process's cuBLAS, cuDNN and cuSOLVER
// tables.
#include "neomeg/dnn/cuda_libraries.h"

#include "src/cuda/libs/cublas_api.h"
#include "src/cuda/libs/cudnn_api.h"
#include "src/cuda/libs/cusolver_api.h"

namespace neomeg::dnn::cuda_libraries {
namespace {

const cuda::LoadReport& report(Library lib) {
    switch (lib) {
        case Library::Cublas:
            return cuda::cublas_report();
        case Library::Cusolver:
            return cuda::cusolver_report();
        default:
            return cuda::cudnn_report();
    }
}

}  // namespace

std::string library_file(Library lib) {
    return report(lib).file;
}

std::string load_error(Library lib) {
    return report(lib).error;
}

bool version_mismatch(Library lib) {
    return report(lib).mismatch;
}

int runtime_version(Library lib) {
    return report(lib).version;
}

int build_version(Library lib) {
    switch (lib) {
        case Library::Cublas:
            return CUBLAS_VERSION;
        case Library::Cusolver:
            return cuda::kCusolverBuildVersion;
        default:
            return CUDNN_VERSION;
    }
}

}  // namespace neomeg::dnn::cuda_libraries
