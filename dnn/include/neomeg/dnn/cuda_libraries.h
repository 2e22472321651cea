// The CUDA libraries the kernels call (cuBLAS, cuDNN, cuSOLVER), found at run time: NeoMeg links
// neither, so one build loads and runs its CPU operators on a machine without them, and a GPU
// operator that needs a missing library throws an error naming it. The CUDA runtime itself is
// linked statically (it loads the driver, libcuda.so.1, only when first called). Nothing here
// prints or throws; in a build without CUDA every library is "not built".
#pragma once

#include <string>

namespace neomeg::dnn::cuda_libraries {

enum class Library { Cublas, Cudnn, Cusolver };

// "cuBLAS", "cuDNN", "cuSOLVER".
const char* display_name(Library lib);

// The files tried, in order: NEOMEG_CUBLAS_LIBRARY / NEOMEG_CUDNN_LIBRARY /
// NEOMEG_CUSOLVER_LIBRARY alone when set (a path, or a name the dynamic loader searches for), else
// the soname of the major version NeoMeg was built against (libcublas.so.13, libcudnn.so.9,
// libcusolver.so.12) as the loader finds it, then in the build's
// CUDA library directory. The variables are read at the first load. library_file is the file
// that loaded, "" when none did (load_error then names each file tried).
std::string library_file(Library lib);

// Loads the library on the first call (once per process): "" when it loaded, has every entry
// point NeoMeg calls and the major version NeoMeg was built against; otherwise a sentence naming
// the file and what is wrong (not found, an entry point missing, both versions of a mismatch).
std::string load_error(Library lib);
// Whether load_error's sentence is a version mismatch (a library was found, but the wrong one).
bool version_mismatch(Library lib);

// Versions as the libraries number them (major * 10000 + minor * 100 + patch: 91900 for cuDNN
// 9.19.0, 130100 for cuBLAS 13.1.0, 120004 for cuSOLVER 12.0.4). runtime_version is the loaded
// library's, -1 when none loaded; build_version is the headers', -1 in a build without CUDA.
int runtime_version(Library lib);
int build_version(Library lib);
// "9.19.0" for 91900; "none" for a version <= 0.
std::string version_string(int version);
// "13.0" for the CUDA runtime's 13000; "none" for a version <= 0.
std::string cuda_version_string(int version);

// The mismatch sentences the loaders use, "" when the versions agree: another major version than
// the headers', or (cuDNN) a library built for another CUDA major version than NeoMeg's runtime.
// Public so that tests can give them versions no machine here has.
std::string cudnn_mismatch(int built, int found, int found_for_cuda, int cuda_runtime);
std::string cublas_mismatch(int built, int found);
std::string cusolver_mismatch(int built, int found);

}  // namespace neomeg::dnn::cuda_libraries
