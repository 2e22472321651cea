#include "neomeg/distributed/device_communicator.h"

#include <dlfcn.h>

#include <mutex>

namespace neomeg::distributed {

namespace {

using Factory = decltype(&neomeg_create_nccl_communicator);

// The NCCL library beside this one (a build tree, an installed package), else by the loader's
// search path; loaded once and kept.
Factory nccl_factory() {
    static std::once_flag once;
    static Factory factory = nullptr;
    static std::string reason;
    std::call_once(once, [] {
        std::string here;
        Dl_info info{};
        if (dladdr(reinterpret_cast<void*>(&open_nccl_communicator), &info) && info.dli_fname) {
            here = info.dli_fname;
            here = here.substr(0, here.rfind('/') + 1);
        }
        void* lib = here.empty() ? nullptr
                                 : dlopen((here + kNcclLibraryName).c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            lib = dlopen(kNcclLibraryName, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char* err = dlerror();
            reason = std::string("cannot load ") + kNcclLibraryName +
                     " (NeoMeg built without CUDA, or NCCL missing): " + (err ? err : "");
            return;
        }
        factory = reinterpret_cast<Factory>(dlsym(lib, "neomeg_create_nccl_communicator"));
        if (!factory)
            reason = std::string(kNcclLibraryName) + " has no neomeg_create_nccl_communicator";
    });
    if (!factory)
        throw CommError("distributed (NCCL): " + reason);
    return factory;
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

}  // namespace neomeg::distributed
