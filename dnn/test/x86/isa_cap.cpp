// The CI entries dnn.x86.isa.<ISA> (dnn/test/CMakeLists.txt) rerun the x86 suite with oneDNN
// capped at a lower instruction set, so that the AVX2 and AVX-512 kernels are checked against
// naive on every machine, whatever oneDNN would pick there by itself (AMX, AVX-512 BF16, ...).
// This test shows that the cap took effect: without it those entries would silently rerun the
// default kernels.
#include <cstdlib>
#include <string>

#include "x86/x86_test.h"

#ifdef NEOMEG_WITH_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

using namespace neomeg::dnn::test;

TEST_F(X86, OneDnnHonoursTheIsaCap) {
#ifdef NEOMEG_WITH_DNNL
    const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
    if (!cap)
        GTEST_SKIP() << "ONEDNN_MAX_CPU_ISA is not set; the dnn.x86.isa.* ctest entries set it";
    const std::string want(cap);
    const auto isa = dnnl::get_effective_cpu_isa();
    if (want == "AVX2")
        EXPECT_EQ(isa, dnnl::cpu_isa::avx2);
    else if (want == "AVX512_CORE")
        EXPECT_EQ(isa, dnnl::cpu_isa::avx512_core);
    else
        GTEST_SKIP() << "no expectation for ONEDNN_MAX_CPU_ISA=" << want;
#endif
}
