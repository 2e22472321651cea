#include "src/cuda/libs/cusolver_api.h"

#include "neomeg/dnn/cuda_libraries.h"

namespace neomeg::dnn::cuda {

CusolverApi load_cusolver(const std::vector<std::string>& candidates, LoadReport& report) {
    auto lib = open_library("cuSOLVER", CUSOLVER_VER_MAJOR, "NEOMEG_CUSOLVER_LIBRARY", candidates,
                            report);
    if (!lib.ok())
        return {};
    CusolverApi api;
    std::vector<std::string> missing;
#define NM_RESOLVE(fn) api.fn = lib.resolve<decltype(api.fn)>(NM_SYMBOL_NAME(fn), missing);
    NM_CUSOLVER_ENTRY_POINTS(NM_RESOLVE)
#undef NM_RESOLVE
    if (api.cusolverGetProperty) {
        int major = 0, minor = 0, patch = 0;
        if (api.cusolverGetProperty(MAJOR_VERSION, &major) == CUSOLVER_STATUS_SUCCESS &&
            api.cusolverGetProperty(MINOR_VERSION, &minor) == CUSOLVER_STATUS_SUCCESS &&
            api.cusolverGetProperty(PATCH_LEVEL, &patch) == CUSOLVER_STATUS_SUCCESS) {
            report.version = major * 10000 + minor * 100 + patch;
            set_mismatch(report,
                         cuda_libraries::cusolver_mismatch(kCusolverBuildVersion, report.version));
        }
    }
    return finish_load("cuSOLVER", report, missing) ? api : CusolverApi{};
}

namespace {

const ProcessLibrary<CusolverApi>& process_library() {
    static const ProcessLibrary<CusolverApi> lib(load_cusolver, "NEOMEG_CUSOLVER_LIBRARY",
                                                 str_cat("libcusolver.so.", CUSOLVER_VER_MAJOR),
#ifdef NEOMEG_CUSOLVER_LIBRARY_DIR
                                                 NEOMEG_CUSOLVER_LIBRARY_DIR
#else
                                                 ""
#endif
    );
    return lib;
}

}  // namespace

const CusolverApi& libcusolver() {
    return process_library().api();
}

const LoadReport& cusolver_report() {
    return process_library().report();
}

const char* cusolver_status_name(cusolverStatus_t status) {
    switch (status) {
#define NM_CASE(s) \
    case s:        \
        return #s;
        NM_CASE(CUSOLVER_STATUS_SUCCESS)
        NM_CASE(CUSOLVER_STATUS_NOT_INITIALIZED)
        NM_CASE(CUSOLVER_STATUS_ALLOC_FAILED)
        NM_CASE(CUSOLVER_STATUS_INVALID_VALUE)
        NM_CASE(CUSOLVER_STATUS_ARCH_MISMATCH)
        NM_CASE(CUSOLVER_STATUS_MAPPING_ERROR)
        NM_CASE(CUSOLVER_STATUS_EXECUTION_FAILED)
        NM_CASE(CUSOLVER_STATUS_INTERNAL_ERROR)
        NM_CASE(CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED)
        NM_CASE(CUSOLVER_STATUS_NOT_SUPPORTED)
        NM_CASE(CUSOLVER_STATUS_INVALID_WORKSPACE)
#undef NM_CASE
        default:
            return "CUSOLVER_STATUS_UNKNOWN";
    }
}

}  // namespace neomeg::dnn::cuda
