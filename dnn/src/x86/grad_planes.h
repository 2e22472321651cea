// The frame of the x86 backward kernels that scatter into src's planes (ROIAlign, ROIPooling,
// Remap and WarpPerspective data gradients): each (image, channel) plane of grad sums its
// contributions in double in the workspace (naive's, one double per grad element) in naive's
// order, then is rounded once, so results are naive's bits; planes are split across OpenMP
// threads, each thread owning whole planes, so no sum is shared.
#pragma once

#include <algorithm>

#include "neomeg/dnn/tensor.h"
#include "src/x86/from_double.h"
#include "src/x86/nchw.h"
#include "src/x86/parallel.h"

namespace neomeg::dnn::x86 {

// Calls add(n, c, acc) for every (image n, channel c) plane of grad, acc a zeroed dense h x w
// plane of double (row y at acc + y * w), then rounds acc into grad. `work` is the loop's total
// work for the OpenMP split; the planes' zeroing and rounding are counted here.
template <class Add>
void accumulate_planes(const TensorND& grad, double* ws, size_t work, Add&& add) {
    const size_t batch = grad.layout[0], channels = grad.layout[1];
    const auto h = static_cast<int64_t>(grad.layout[2]), w = static_cast<int64_t>(grad.layout[3]);
    const auto plane_n = static_cast<size_t>(h * w);
    const Nchw gp(grad.layout);
    auto* gr = static_cast<float*>(grad.raw_ptr());
    work += grad.layout.total_nr_elems() * 2;
    parallel_ranges(batch * channels, work, kParallelGrain, [&](size_t b, size_t e) {
        for (size_t u = b; u < e; ++u) {
            size_t n = u / channels, c = u % channels;
            double* acc = ws + u * plane_n;
            std::fill(acc, acc + plane_n, 0.0);
            add(n, c, acc);
            float* plane = gr + gp.plane(n, c);
            for (int64_t y = 0; y < h; ++y)
                for (int64_t x = 0; x < w; ++x)
                    plane[gp.at(y, x)] = from_double<float>(acc[y * w + x]);
        }
    });
}

}  // namespace neomeg::dnn::x86
