// The running statistics' momentum update of a training batch norm, shared by the plain and the
// channel-blocked x86 kernels: in double, in naive's order, the batch variance of `m` values
// entering unbiased.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

inline void bn_update_running(double& running_mean, double& running_var, double mean, double var,
                              size_t m, double momentum) {
    double unbiased = var * double(m) / double(m - 1);
    running_mean = running_mean * momentum + mean * (1 - momentum);
    running_var = running_var * momentum + unbiased * (1 - momentum);
}

}  // namespace neomeg::dnn::x86
