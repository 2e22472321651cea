#include "src/cuda/libs/cublas_api.h"

#include "neomeg/dnn/cuda_libraries.h"

namespace neomeg::dnn::cuda {

CublasApi load_cublas(const std::vector<std::string>& candidates, LoadReport& report) {
    auto lib =
            open_library("cuBLAS", CUBLAS_VER_MAJOR, "NEOMEG_CUBLAS_LIBRARY", candidates, report);
    if (!lib.ok())
        return {};
    CublasApi api;
    std::vector<std::string> missing;
#define NM_RESOLVE(fn) api.fn = lib.resolve<decltype(api.fn)>(NM_SYMBOL_NAME(fn), missing);
#define NM_RESOLVE_TYPED(fn, type) NM_RESOLVE(fn)
    NM_CUBLAS_ENTRY_POINTS(NM_RESOLVE, NM_RESOLVE_TYPED)
#undef NM_RESOLVE
#undef NM_RESOLVE_TYPED
    if (api.cublasGetProperty) {
        int major = 0, minor = 0, patch = 0;
        if (api.cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
            api.cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
            api.cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
            report.version = major * 10000 + minor * 100 + patch;
            set_mismatch(report, cuda_libraries::cublas_mismatch(CUBLAS_VERSION, report.version));
        }
    }
    return finish_load("cuBLAS", report, missing) ? api : CublasApi{};
}

namespace {

const ProcessLibrary<CublasApi>& process_library() {
    static const ProcessLibrary<CublasApi> lib(load_cublas, "NEOMEG_CUBLAS_LIBRARY",
                                               str_cat("libcublas.so.", CUBLAS_VER_MAJOR),
#ifdef NEOMEG_CUBLAS_LIBRARY_DIR
                                               NEOMEG_CUBLAS_LIBRARY_DIR
#else
                                               ""
#endif
    );
    return lib;
}

}  // namespace

const CublasApi& libcublas() {
    return process_library().api();
}

const LoadReport& cublas_report() {
    return process_library().report();
}

}  // namespace neomeg::dnn::cuda
