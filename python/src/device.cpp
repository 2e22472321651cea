// What megengine.device and CompNode ask of the comp nodes: names, memory statistics, memory
// status, synchronisation, and the CUDA environment (device count, versions, properties). The
// CUDA queries answer "no GPU" on a machine without one and never print.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "neomeg/core/comp_node.h"
#include "neomeg/core/cuda_env.h"
#include "neomeg/dnn/cuda_libraries.h"
#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/x86_benchmark_kernel.h"
#include "neomeg/dnn/x86_threads.h"
#include "neomeg/imperative/eager_blocked.h"

namespace py = pybind11;

namespace neomeg::python {
namespace {

dnn::cuda_libraries::Library library(const std::string& name) {
    if (name == "cublas")
        return dnn::cuda_libraries::Library::Cublas;
    if (name == "cudnn")
        return dnn::cuda_libraries::Library::Cudnn;
    if (name == "cusolver")
        return dnn::cuda_libraries::Library::Cusolver;
    throw py::value_error("unknown CUDA library " + name +
                          ": expected 'cublas', 'cudnn' or 'cusolver'");
}

}  // namespace

void init_device(py::module_& m) {
    m.def("is_cuda_available", &is_cuda_available);
    m.def("get_cuda_device_count", &get_cuda_device_count);
    m.def("cuda_unavailable_reason", &cuda::unavailable_reason);
    // Whether this build has the CUDA kernels (a GPU node can then run operators).
    m.def("cuda_kernels_available", &dnn::Handle::cuda_available);
    m.def("set_cuda_allow_tf32", &dnn::Handle::set_cuda_allow_tf32);
    m.def("cuda_allow_tf32", &dnn::Handle::cuda_allow_tf32);
    m.def("set_cuda_benchmark_kernel", &dnn::Handle::set_cuda_benchmark_kernel);
    m.def("cuda_benchmark_kernel", &dnn::Handle::cuda_benchmark_kernel);
    m.def("set_x86_benchmark_kernel", &dnn::set_x86_benchmark_kernel);
    m.def("x86_benchmark_kernel", &dnn::x86_benchmark_kernel);
    m.def("set_x86_threads", &dnn::set_x86_threads,
          "Threads of the x86 kernels (oneDNN's OpenMP pool, our parallel loops); set before the "
          "first x86 operator runs. ValueError for n < 1, and for n > 1 in a process forked "
          "from one that ran x86 kernels.");
    m.def("x86_threads", &dnn::x86_threads);
    m.def("set_eager_blocked", &imperative::set_eager_blocked,
          "Whether eager convolutions keep ChannelBlock's layout between the ops that read it "
          "(NEOMEG_EAGER_BLOCKED=0 starts with it off).");
    m.def("eager_blocked", &imperative::eager_blocked_enabled,
          "Whether eager convolutions keep ChannelBlock's layout (set_eager_blocked).");
    m.def("canonical_device",
          [](const std::string& name) { return CompNode::load(name).to_string(); });
    m.def("memory_stats", [](const std::string& device) {
        auto s = CompNode::load(device).memory_stats();
        py::dict d;
        d["allocated"] = s.allocated;
        d["peak_allocated"] = s.peak_allocated;
        d["reserved"] = s.reserved;
        d["peak_reserved"] = s.peak_reserved;
        d["nr_system_allocs"] = s.nr_system_allocs;
        return d;
    });
    m.def("reset_peak_memory_stats",
          [](const std::string& device) { CompNode::load(device).reset_peak_memory_stats(); });
    m.def("empty_cache", [](const std::string& device) { CompNode::load(device).empty_cache(); });
    m.def("empty_all_caches", &CompNode::empty_all_caches);
    m.def("mem_status",
          [](const std::string& device) { return CompNode::load(device).mem_status(); });
    // Waiting releases the GIL: other Python threads run while the GPU finishes.
    m.def(
            "sync", [](const std::string& device) { CompNode::load(device).sync(); },
            py::call_guard<py::gil_scoped_release>());
    m.def("sync_all", &CompNode::sync_all, py::call_guard<py::gil_scoped_release>());

    m.def("get_cuda_version", &cuda::build_version);
    m.def("get_cuda_runtime_version", &cuda::runtime_version);
    m.def("get_cuda_driver_version", &cuda::driver_version);
    m.def("get_cudnn_version", &cuda::cudnn_build_version);
    m.def("get_cudnn_runtime_version", &cuda::cudnn_runtime_version);
    // The CUDA libraries loaded at run time ("cublas", "cudnn", "cusolver"): the file that loaded,
    // and why it is not usable ("" when it is). The first call loads the library.
    m.def("cuda_library_error",
          [](const std::string& name) { return dnn::cuda_libraries::load_error(library(name)); });
    m.def("cuda_library_file",
          [](const std::string& name) { return dnn::cuda_libraries::library_file(library(name)); });
    m.def("get_device_prop", [](int device) {
        auto p = cuda::device_properties(device);
        py::dict d;
        d["name"] = p.name;
        d["major"] = p.major;
        d["minor"] = p.minor;
        d["total_memory"] = p.total_memory;
        d["multi_processor_count"] = p.multi_processor_count;
        return d;
    });
}

}  // namespace neomeg::python
