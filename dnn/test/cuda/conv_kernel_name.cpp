// The names the cuDNN convolutions report as their kernel (NEOMEG_DEBUG's "kernel" field and the
// tests' expect_kernel): cuDNN's algorithm by its enum, on the host.
#include <gtest/gtest.h>

#include <string>

#include "src/cuda/conv_direction.h"

using namespace neomeg::dnn::cuda;

TEST(CudaConvKernelName, NamesCudnnsAlgorithmPerDirection) {
    EXPECT_STREQ(conv_kernel_name<ConvKind::Forward>(
                         CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, false),
                 "cudnn:implicit_precomp_gemm");
    EXPECT_STREQ(
            conv_kernel_name<ConvKind::Forward>(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, true),
            "cudnn(measured):winograd_nonfused");
    EXPECT_STREQ(conv_kernel_name<ConvKind::BackwardData>(
                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, false),
                 "cudnn:fft_tiling");
    EXPECT_STREQ(
            conv_kernel_name<ConvKind::BackwardFilter>(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, false),
            "cudnn:algo_3");
    EXPECT_STREQ(conv_kernel_name<ConvKind::BackwardFilter>(
                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, true),
                 "cudnn(measured):fft_tiling");
}

TEST(CudaConvKernelName, EveryAlgorithmHasADistinctNameThatOutlivesTheCall) {
    for (int a = 0; a < ConvDirection<ConvKind::Forward>::kAlgoCount; ++a) {
        const char* name = conv_kernel_name<ConvKind::Forward>(a, false);
        EXPECT_EQ(name, conv_kernel_name<ConvKind::Forward>(a, false));  // the same storage
        for (int b = 0; b < a; ++b)
            EXPECT_STRNE(name, conv_kernel_name<ConvKind::Forward>(b, false));
    }
}

TEST(CudaConvKernelName, AnUnlistedAlgorithmIdKeepsThePrefix) {
    EXPECT_STREQ(conv_kernel_name<ConvKind::Forward>(CUDNN_CONVOLUTION_FWD_ALGO_COUNT, false),
                 "cudnn");
    EXPECT_STREQ(conv_kernel_name<ConvKind::BackwardData>(-1, true), "cudnn(measured)");
}
