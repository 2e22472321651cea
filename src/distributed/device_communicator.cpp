#include "neomeg/distributed/device_communicator.h"

#include <dlfcn.h>

#include <string>

namespace neomeg::distributed {

namespace {

using Factory = decltype(&neomeg_create_nccl_communicator);

// The NCCL library beside this one (a build tree, an installed package), else by the loader's
// search path; loaded once and kept. `reason` says why `factory` is null.
struct NcclLibrary {
    Factory factory = nullptr;
    std::string reason;
};

const NcclLibrary& nccl_library() {
    static const NcclLibrary library = [] {
        NcclLibrary lib;
        std::string here;
        Dl_info info{};
        if (dladdr(reinterpret_cast<void*>(&open_nccl_communicator), &info) && info.dli_fname) {
            here = info.dli_fname;
            here = here.substr(0, here.rfind('/') + 1);
        }
        void* handle = here.empty()
                               ? nullptr
                               : dlopen((here + kNcclLibraryName).c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle)
            handle = dlopen(kNcclLibraryName, RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char* err = dlerror();
            lib.reason = std::string("cannot load ") + kNcclLibraryName +
                         " (NeoMeg built without CUDA, or NCCL missing): " + (err ? err : "");
            return lib;
        }
        lib.factory = reinterpret_cast<Factory>(dlsym(handle, "neomeg_create_nccl_communicator"));
        if (!lib.factory)
            lib.reason = std::string(kNcclLibraryName) + " has no neomeg_create_nccl_communicator";
        return lib;
    }();
    return library;
}

Factory nccl_factory() {
    const auto& lib = nccl_library();
    if (!lib.factory)
        throw CommError("distributed (NCCL): " + lib.reason);
    return lib.factory;
}

}  // namespace

std::unique_ptr<DeviceCommunicator> open_nccl_communicator(Store& store, const std::string& prefix,
                                                           int rank, int size, int device,
                                                           std::chrono::milliseconds timeout) {
    Factory factory = nccl_factory();
    char error[1024] = {};
    int is_timeout = 0;
    DeviceCommunicator* comm = factory(&store, prefix.c_str(), rank, size, device, timeout.count(),
                                       error, sizeof(error), &is_timeout);
    if (!comm) {
        if (is_timeout)
            throw StoreTimeout(error);
        throw CommError(error);
    }
    return std::unique_ptr<DeviceCommunicator>(comm);
}

std::string nccl_load_error() {
    const auto& lib = nccl_library();
    return lib.factory ? std::string() : "distributed (NCCL): " + lib.reason;
}

}  // namespace neomeg::distributed
