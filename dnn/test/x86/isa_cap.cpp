// The CI entries dnn.x86.isa.<ISA> (dnn/test/CMakeLists.txt) rerun the x86 suite with oneDNN
// capped at a lower instruction set, so that the AVX2 and AVX-512 kernels are checked against
// naive on every machine, whatever oneDNN would pick there by itself (AMX, AVX-512 BF16, ...).
// The same variable caps the Highway kernels (set here, before any test runs). These tests show
// that the caps took effect: without them those entries would silently rerun the default kernels.
#include <cstdlib>
#include <string>

#include "x86/x86_test.h"

#ifdef NEOMEG_WITH_DNNL
#include <hwy/targets.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "src/x86/elemwise_hwy.h"
#endif

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

#ifdef NEOMEG_WITH_DNNL
// Highway's dispatch table lives in libhwy, shared with the library's kernels, so capping it here
// caps them.
bool cap_highway() {
    const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
    if (!cap)
        return false;
    const std::string want(cap);
    int64_t target = want == "AVX2" ? HWY_AVX2 : want == "AVX512_CORE" ? HWY_AVX3 : 0;
    // A target the CPU lacks would fault; oneDNN's cap likewise never raises the ISA.
    if ((hwy::SupportedTargets() & target) == 0)
        return false;
    hwy::SetSupportedTargetsForTest(target);
    return true;
}

const bool g_highway_capped = cap_highway();
#endif

}  // namespace

TEST_F(X86, OneDnnHonoursTheIsaCap) {
#ifdef NEOMEG_WITH_DNNL
    const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
    if (!cap)
        GTEST_SKIP() << "ONEDNN_MAX_CPU_ISA is not set; the dnn.x86.isa.* ctest entries set it";
    const std::string want(cap);
    dnnl::cpu_isa cap_isa;
    if (want == "AVX2")
        cap_isa = dnnl::cpu_isa::avx2;
    else if (want == "AVX512_CORE")
        cap_isa = dnnl::cpu_isa::avx512_core;
    else
        GTEST_SKIP() << "no expectation for ONEDNN_MAX_CPU_ISA=" << want;
    const auto isa = dnnl::get_effective_cpu_isa();
    // A cap never raises the ISA: on a CPU without the capped ISA (an AVX2-only machine capped at
    // AVX512_CORE) oneDNN runs what the CPU has, which must still lie inside the cap. oneDNN's
    // ISA values are feature bit sets, so "inside" is a subset test.
    const auto bits = static_cast<unsigned>(isa), cap_bits = static_cast<unsigned>(cap_isa);
    EXPECT_EQ(bits & cap_bits, bits) << "oneDNN runs above the cap " << want;
    if (g_highway_capped) {
        EXPECT_EQ(isa, cap_isa);
    }
#endif
}

TEST_F(X86, HighwayHonoursTheIsaCap) {
#ifdef NEOMEG_WITH_DNNL
    const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
    if (!cap || !g_highway_capped)
        GTEST_SKIP() << "ONEDNN_MAX_CPU_ISA is not set to an ISA this CPU has; the dnn.x86.isa.* "
                        "ctest entries set it";
    const std::string want(cap);
    EXPECT_EQ(std::string(x86::elemwise_target()), want == "AVX2" ? "AVX2" : "AVX3");
#endif
}
