#include "src/cuda/libs/cublas_api.h"

#include "neomeg/dnn/cuda_libraries.h"
#include "neomeg/dnn/errors.h"

namespace neomeg::dnn::cuda {

CublasApi load_cublas(const std::vector<std::string>& candidates, LoadReport& report) {
    report = {};
    auto lib = DynamicLibrary::open(candidates);
    if (!lib.ok()) {
        report.error = str_cat("cuBLAS could not be loaded (", lib.error(), "); install cuBLAS ",
                               CUBLAS_VER_MAJOR, " or set NEOMEG_CUBLAS_LIBRARY to its path");
        return {};
    }
    report.file = lib.file();
    CublasApi api;
    std::vector<std::string> missing;
#define NM_RESOLVE(fn) api.fn = lib.resolve<decltype(api.fn)>(NM_SYMBOL_NAME(fn), missing);
#define NM_RESOLVE_TYPED(fn, type) NM_RESOLVE(fn)
    NM_CUBLAS_ENTRY_POINTS(NM_RESOLVE, NM_RESOLVE_TYPED)
#undef NM_RESOLVE
#undef NM_RESOLVE_TYPED
    // The version first: a library of another major version lacks entry points too, and the
    // versions say more than the names.
    if (api.cublasGetProperty) {
        int major = 0, minor = 0, patch = 0;
        if (api.cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
            api.cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
            api.cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
            report.version = major * 10000 + minor * 100 + patch;
            report.error = cuda_libraries::cublas_mismatch(CUBLAS_VERSION, report.version);
            report.mismatch = !report.error.empty();
            if (report.mismatch)
                report.error += str_cat(" (", report.file, ")");
        }
    }
    if (report.error.empty() && !missing.empty())
        report.error = lacks_entry_points("cuBLAS", report, missing);
    if (!report.error.empty())
        return {};
    return api;
}

namespace {

struct Loaded {
    LoadReport report;
    CublasApi api;
};

const Loaded& loaded() {
    static const Loaded l = [] {
        Loaded r;
        r.api = load_cublas(library_candidates("NEOMEG_CUBLAS_LIBRARY",
                                               str_cat("libcublas.so.", CUBLAS_VER_MAJOR),
#ifdef NEOMEG_CUBLAS_LIBRARY_DIR
                                               NEOMEG_CUBLAS_LIBRARY_DIR
#else
                                               ""
#endif
                                               ),
                            r.report);
        return r;
    }();
    return l;
}

}  // namespace

const CublasApi& libcublas() {
    const auto& l = loaded();
    if (!l.report.error.empty())
        throw Error(l.report.error);
    return l.api;
}

const LoadReport& cublas_report() {
    return loaded().report;
}

}  // namespace neomeg::dnn::cuda
