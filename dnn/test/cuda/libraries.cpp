// The run-time loading of cuBLAS, cuDNN and cuSOLVER (src/cuda/libs): every entry point NeoMeg
// calls is found in the installed libraries, and a missing library, a missing entry point or
// another version gives a sentence naming the file and both versions. Needs no GPU.
#include <gtest/gtest.h>

#include "neomeg/dnn/cuda_libraries.h"
#include "src/cuda/libs/cublas_api.h"
#include "src/cuda/libs/cudnn_api.h"
#include "src/cuda/libs/cusolver_api.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::cuda;

namespace {

std::string cudnn_soname() {
    return "libcudnn.so." + std::to_string(CUDNN_MAJOR);
}
std::string cublas_soname() {
    return "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
}
std::string cusolver_soname() {
    return "libcusolver.so." + std::to_string(CUSOLVER_VER_MAJOR);
}

}  // namespace

TEST(CudaLibraries, InstalledCudnnHasEveryEntryPoint) {
    LoadReport r;
    CudnnApi api = load_cudnn(
            library_candidates("NEOMEG_TEST_UNSET", cudnn_soname(), NEOMEG_TEST_CUDNN_LIBRARY_DIR),
            r);
    ASSERT_EQ(r.error, "");
    EXPECT_FALSE(r.mismatch);
    EXPECT_EQ(r.version / 10000, CUDNN_MAJOR);
#define NM_EXPECT_RESOLVED(fn) EXPECT_NE(api.fn, nullptr) << NM_SYMBOL_NAME(fn);
    NM_CUDNN_ENTRY_POINTS(NM_EXPECT_RESOLVED)
#undef NM_EXPECT_RESOLVED
    EXPECT_EQ(static_cast<int>(api.cudnnGetVersion()), r.version);
}

TEST(CudaLibraries, InstalledCublasHasEveryEntryPoint) {
    LoadReport r;
    CublasApi api = load_cublas(library_candidates("NEOMEG_TEST_UNSET", cublas_soname(),
                                                   NEOMEG_TEST_CUBLAS_LIBRARY_DIR),
                                r);
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.version / 10000, CUBLAS_VER_MAJOR);
#define NM_EXPECT_RESOLVED(fn) EXPECT_NE(api.fn, nullptr) << NM_SYMBOL_NAME(fn);
#define NM_EXPECT_RESOLVED_TYPED(fn, type) NM_EXPECT_RESOLVED(fn)
    NM_CUBLAS_ENTRY_POINTS(NM_EXPECT_RESOLVED, NM_EXPECT_RESOLVED_TYPED)
#undef NM_EXPECT_RESOLVED
#undef NM_EXPECT_RESOLVED_TYPED
    // The versioned symbol of the v2 API, not the legacy one of the same name.
    EXPECT_STREQ(NM_SYMBOL_NAME(cublasCreate), "cublasCreate_v2");
}

TEST(CudaLibraries, InstalledCusolverHasEveryEntryPoint) {
    LoadReport r;
    CusolverApi api = load_cusolver(library_candidates("NEOMEG_TEST_UNSET", cusolver_soname(),
                                                       NEOMEG_TEST_CUSOLVER_LIBRARY_DIR),
                                    r);
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.version / 10000, CUSOLVER_VER_MAJOR);
    EXPECT_EQ(cuda_libraries::build_version(cuda_libraries::Library::Cusolver),
              kCusolverBuildVersion);
#define NM_EXPECT_RESOLVED(fn) EXPECT_NE(api.fn, nullptr) << NM_SYMBOL_NAME(fn);
    NM_CUSOLVER_ENTRY_POINTS(NM_EXPECT_RESOLVED)
#undef NM_EXPECT_RESOLVED
}

TEST(CudaLibraries, ProcessTablesAreTheInstalledLibraries) {
    using cuda_libraries::Library;
    if (std::getenv("NEOMEG_CUDNN_LIBRARY") || std::getenv("NEOMEG_CUBLAS_LIBRARY"))
        GTEST_SKIP() << "NEOMEG_CUDNN_LIBRARY or NEOMEG_CUBLAS_LIBRARY is set: this test checks "
                        "the default sonames";
    EXPECT_EQ(cuda_libraries::load_error(Library::Cudnn), "");
    EXPECT_EQ(cuda_libraries::load_error(Library::Cublas), "");
    EXPECT_EQ(cuda_libraries::runtime_version(Library::Cudnn) / 10000, CUDNN_MAJOR);
    EXPECT_EQ(cuda_libraries::build_version(Library::Cudnn), CUDNN_VERSION);
    EXPECT_EQ(cuda_libraries::build_version(Library::Cublas), CUBLAS_VERSION);
    EXPECT_NO_THROW(libcudnn());
    EXPECT_NO_THROW(libcublas());
    if (!std::getenv("NEOMEG_CUSOLVER_LIBRARY")) {
        EXPECT_EQ(cuda_libraries::load_error(Library::Cusolver), "");
        EXPECT_EQ(cuda_libraries::runtime_version(Library::Cusolver) / 10000, CUSOLVER_VER_MAJOR);
        EXPECT_NO_THROW(libcusolver());
    }
}

TEST(CudaLibraries, MissingLibraryNamesEachFileTried) {
    LoadReport r;
    load_cudnn({"libneomeg_absent_cudnn.so.9", "/nonexistent/libcudnn.so.9"}, r);
    EXPECT_FALSE(r.mismatch);
    EXPECT_EQ(r.version, -1);
    EXPECT_NE(r.error.find("cuDNN could not be loaded"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("libneomeg_absent_cudnn.so.9"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("/nonexistent/libcudnn.so.9"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("NEOMEG_CUDNN_LIBRARY"), std::string::npos) << r.error;

    load_cublas({"/nonexistent/libcublas.so.13"}, r);
    EXPECT_NE(r.error.find("cuBLAS could not be loaded (/nonexistent/libcublas.so.13"),
              std::string::npos)
            << r.error;
    EXPECT_NE(r.error.find("NEOMEG_CUBLAS_LIBRARY"), std::string::npos) << r.error;

    load_cusolver({"/nonexistent/libcusolver.so.12"}, r);
    EXPECT_NE(r.error.find("cuSOLVER could not be loaded (/nonexistent/libcusolver.so.12"),
              std::string::npos)
            << r.error;
    EXPECT_NE(r.error.find("install cuSOLVER " + std::to_string(CUSOLVER_VER_MAJOR) +
                           " or set NEOMEG_CUSOLVER_LIBRARY"),
              std::string::npos)
            << r.error;
}

TEST(CudaLibraries, EnvironmentVariableNamesTheOnlyCandidate) {
    ASSERT_EQ(setenv("NEOMEG_TEST_CUDA_LIB", "/opt/x/libcudnn.so.9", 1), 0);
    EXPECT_EQ(library_candidates("NEOMEG_TEST_CUDA_LIB", "libcudnn.so.9", "/usr/local/cuda/lib"),
              std::vector<std::string>{"/opt/x/libcudnn.so.9"});
    ASSERT_EQ(unsetenv("NEOMEG_TEST_CUDA_LIB"), 0);
    EXPECT_EQ(library_candidates("NEOMEG_TEST_CUDA_LIB", "libcudnn.so.9", "/usr/local/cuda/lib"),
              (std::vector<std::string>{"libcudnn.so.9", "/usr/local/cuda/lib/libcudnn.so.9"}));
    EXPECT_EQ(library_candidates("NEOMEG_TEST_CUDA_LIB", "libcudnn.so.9", ""),
              std::vector<std::string>{"libcudnn.so.9"});
}

TEST(CudaLibraries, MissingEntryPointsAreNamed) {
    // cuDNN is a library, but not cuBLAS: no version query, every entry point missing.
    LoadReport r;
    load_cublas({cudnn_soname()}, r);
    EXPECT_FALSE(r.mismatch);
    EXPECT_NE(r.error.find("the cuBLAS library " + cudnn_soname() + " lacks"), std::string::npos)
            << r.error;
    EXPECT_NE(r.error.find("cublasCreate_v2"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find(" and cublasDotEx"), std::string::npos) << r.error;
}

TEST(CudaLibraries, OtherCudnnVersionIsAMismatchNamingBoth) {
    LoadReport r;
    CudnnApi api = load_cudnn({NEOMEG_TEST_FAKE_CUDNN}, r);
    EXPECT_TRUE(r.mismatch);
    EXPECT_EQ(r.version, 80907);
    EXPECT_EQ(api.cudnnCreate, nullptr);  // nothing of a mismatched library is handed out
    EXPECT_NE(r.error.find("built with cuDNN " + cuda_libraries::version_string(CUDNN_VERSION)),
              std::string::npos)
            << r.error;
    EXPECT_NE(r.error.find("found at run time is 8.9.7"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find(NEOMEG_TEST_FAKE_CUDNN), std::string::npos) << r.error;
}

TEST(CudaLibraries, OtherCublasVersionIsAMismatchNamingBoth) {
    LoadReport r;
    load_cublas({NEOMEG_TEST_FAKE_CUBLAS}, r);
    EXPECT_TRUE(r.mismatch);
    EXPECT_EQ(r.version, 120904);
    EXPECT_NE(r.error.find("built with cuBLAS " + cuda_libraries::version_string(CUBLAS_VERSION)),
              std::string::npos)
            << r.error;
    EXPECT_NE(r.error.find("found at run time is 12.9.4"), std::string::npos) << r.error;
}

TEST(CudaLibraries, OtherCusolverVersionIsAMismatchNamingBoth) {
    LoadReport r;
    CusolverApi api = load_cusolver({NEOMEG_TEST_FAKE_CUSOLVER}, r);
    EXPECT_TRUE(r.mismatch);
    EXPECT_EQ(r.version, 110705);
    EXPECT_EQ(api.cusolverDnCreate, nullptr);
    EXPECT_NE(r.error.find("cuSOLVER version mismatch: NeoMeg was built with cuSOLVER " +
                           cuda_libraries::version_string(kCusolverBuildVersion)),
              std::string::npos)
            << r.error;
    EXPECT_NE(r.error.find("found at run time is 11.7.5"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find(NEOMEG_TEST_FAKE_CUSOLVER), std::string::npos) << r.error;
}

TEST(CudaLibraries, MismatchSentences) {
    using cuda_libraries::cublas_mismatch;
    using cuda_libraries::cudnn_mismatch;
    // Another major version.
    EXPECT_EQ(cudnn_mismatch(91900, 80907, 11080, 13000),
              "cuDNN version mismatch: NeoMeg was built with cuDNN 9.19.0 but the cuDNN found at "
              "run time is 8.9.7");
    // The same major version, built for another CUDA.
    EXPECT_EQ(cudnn_mismatch(91900, 91000, 12080, 13000),
              "cuDNN/CUDA version mismatch: the cuDNN found at run time (9.10.0) was built for "
              "CUDA 12.8 but NeoMeg's CUDA runtime is 13.0");
    // Newer or older minor versions of the same major, for the same CUDA, agree.
    EXPECT_EQ(cudnn_mismatch(91900, 92100, 13010, 13000), "");
    EXPECT_EQ(cudnn_mismatch(91900, 90100, 13000, 13020), "");
    // An unknown CUDA version of the library is not a mismatch.
    EXPECT_EQ(cudnn_mismatch(91900, 91900, -1, 13000), "");
    EXPECT_EQ(cublas_mismatch(130100, 120904),
              "cuBLAS version mismatch: NeoMeg was built with cuBLAS 13.1.0 but the cuBLAS found "
              "at run time is 12.9.4");
    EXPECT_EQ(cublas_mismatch(130100, 130003), "");
    EXPECT_EQ(cuda_libraries::cusolver_mismatch(120004, 110705),
              "cuSOLVER version mismatch: NeoMeg was built with cuSOLVER 12.0.4 but the cuSOLVER "
              "found at run time is 11.7.5");
    EXPECT_EQ(cuda_libraries::cusolver_mismatch(120004, 120100), "");
}
