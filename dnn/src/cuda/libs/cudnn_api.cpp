#include "src/cuda/libs/cudnn_api.h"

#include <cuda_runtime_api.h>

#include "neomeg/dnn/cuda_libraries.h"

namespace neomeg::dnn::cuda {

CudnnApi load_cudnn(const std::vector<std::string>& candidates, LoadReport& report) {
    auto lib = open_library("cuDNN", CUDNN_MAJOR, "NEOMEG_CUDNN_LIBRARY", candidates, report);
    if (!lib.ok())
        return {};
    CudnnApi api;
    std::vector<std::string> missing;
#define NM_RESOLVE(fn) api.fn = lib.resolve<decltype(api.fn)>(NM_SYMBOL_NAME(fn), missing);
    NM_CUDNN_ENTRY_POINTS(NM_RESOLVE)
#undef NM_RESOLVE
    if (api.cudnnGetVersion) {
        report.version = static_cast<int>(api.cudnnGetVersion());
        int for_cuda =
                api.cudnnGetCudartVersion ? static_cast<int>(api.cudnnGetCudartVersion()) : -1;
        set_mismatch(report, cuda_libraries::cudnn_mismatch(CUDNN_VERSION, report.version, for_cuda,
                                                            CUDART_VERSION));
    }
    return finish_load("cuDNN", report, missing) ? api : CudnnApi{};
}

namespace {

const ProcessLibrary<CudnnApi>& process_library() {
    static const ProcessLibrary<CudnnApi> lib(load_cudnn, "NEOMEG_CUDNN_LIBRARY",
                                              str_cat("libcudnn.so.", CUDNN_MAJOR),
#ifdef NEOMEG_CUDNN_LIBRARY_DIR
                                              NEOMEG_CUDNN_LIBRARY_DIR
#else
                                              ""
#endif
    );
    return lib;
}

}  // namespace

const CudnnApi& libcudnn() {
    return process_library().api();
}

const LoadReport& cudnn_report() {
    return process_library().report();
}

}  // namespace neomeg::dnn::cuda
