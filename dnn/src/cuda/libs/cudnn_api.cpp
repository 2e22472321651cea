#include "src/cuda/libs/cudnn_api.h"

#include <cuda_runtime_api.h>

#include "neomeg/dnn/cuda_libraries.h"
#include "neomeg/dnn/errors.h"

namespace neomeg::dnn::cuda {

CudnnApi load_cudnn(const std::vector<std::string>& candidates, LoadReport& report) {
    report = {};
    auto lib = DynamicLibrary::open(candidates);
    if (!lib.ok()) {
        report.error = str_cat("cuDNN could not be loaded (", lib.error(), "); install cuDNN ",
                               CUDNN_MAJOR, " or set NEOMEG_CUDNN_LIBRARY to its path");
        return {};
    }
    report.file = lib.file();
    CudnnApi api;
    std::vector<std::string> missing;
#define NM_RESOLVE(fn) api.fn = lib.resolve<decltype(api.fn)>(NM_SYMBOL_NAME(fn), missing);
    NM_CUDNN_ENTRY_POINTS(NM_RESOLVE)
#undef NM_RESOLVE
    // The version first: a library of another major version lacks entry points too, and the
    // versions say more than the names.
    if (api.cudnnGetVersion) {
        report.version = static_cast<int>(api.cudnnGetVersion());
        int for_cuda =
                api.cudnnGetCudartVersion ? static_cast<int>(api.cudnnGetCudartVersion()) : -1;
        report.error = cuda_libraries::cudnn_mismatch(CUDNN_VERSION, report.version, for_cuda,
                                                      CUDART_VERSION);
        report.mismatch = !report.error.empty();
        if (report.mismatch)
            report.error += str_cat(" (", report.file, ")");
    }
    if (report.error.empty() && !missing.empty())
        report.error = lacks_entry_points("cuDNN", report, missing);
    if (!report.error.empty())
        return {};
    return api;
}

namespace {

struct Loaded {
    LoadReport report;
    CudnnApi api;
};

const Loaded& loaded() {
    static const Loaded l = [] {
        Loaded r;
        r.api = load_cudnn(
                library_candidates("NEOMEG_CUDNN_LIBRARY", str_cat("libcudnn.so.", CUDNN_MAJOR),
#ifdef NEOMEG_CUDNN_LIBRARY_DIR
                                   NEOMEG_CUDNN_LIBRARY_DIR
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

const CudnnApi& libcudnn() {
    const auto& l = loaded();
    if (!l.report.error.empty())
        throw Error(l.report.error);
    return l.api;
}

const LoadReport& cudnn_report() {
    return loaded().report;
}

}  // namespace neomeg::dnn::cuda
