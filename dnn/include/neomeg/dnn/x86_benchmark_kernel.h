// MegEngine's fastrun for the x86 convolutions (switched by megengine.config.benchmark_kernel, the
// x86 side of what Handle::set_cuda_benchmark_kernel is for CUDA): on, the oneDNN convolutions
// (forward, both backward passes, ConvBias and their channel-blocked forms) time oneDNN's direct
// and Winograd algorithms the first time a case is planned and keep the faster for that case,
// process-wide (every x86 handle runs on the same CPU); off (the default), a rule on the shape
// chooses (Winograd for the 3x3 stride-1 shapes where it was measured to win, direct elsewhere;
// src/x86/conv_algo.h). Read when an operator plans a shape: set it before the first run.
#pragma once

namespace neomeg::dnn {

void set_x86_benchmark_kernel(bool on);
bool x86_benchmark_kernel();

}  // namespace neomeg::dnn
