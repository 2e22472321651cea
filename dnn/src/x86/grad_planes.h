// The frame of the x86 backward kernels that scatter into src's planes (ROIAlign, ROIPooling,
// Remap and WarpPerspective data gradients): each (image, channel) plane of grad sums its
// contributions in double in the workspace (naive's, one double per grad element) in naive's
// order, then is rounded once, so results are naive's bits; planes (or blocks of an image's planes)
// are split across OpenMP threads, each thread owning whole planes, so no sum is shared.
#pragma once

#include <algorithm>
#include <vector>

#include "neomeg/dnn/tensor.h"
#include "src/x86/from_double.h"
#include "src/x86/nchw.h"
#include "src/x86/parallel.h"
#include "src/x86/transpose_hwy.h"
#include "src/x86/warp_grad_hwy.h"

namespace neomeg::dnn::x86 {

// Calls add(n, c0, count, acc) for every block of `count` <= Block consecutive channels
// c0, c0 + 1, ... of image n, acc their zeroed dense h x w planes of double, then rounds them
// into grad: a kernel that reads per-point data (taps, weights) shares each read among a block's
// planes. Plane c0 + l's pixel (y, x) is at acc[l * h * w + y * w + x], or, Interleaved, at
// acc[(y * w + x) * count + l] (a pixel's block in one or two cache lines, for scatters that
// add to the same pixel of every plane). `work` is the loop's total work for the OpenMP split;
// the planes' zeroing and rounding are counted here.
// The doubles of a thread's reused block of planes (2 MiB; a larger block uses the workspace).
inline constexpr size_t kNearDoubles = size_t(1) << 18;

template <size_t Block, bool Interleaved = false, class Add>
void accumulate_plane_blocks(const TensorND& grad, double* ws, size_t work, Add&& add) {
    const size_t batch = grad.layout[0], channels = grad.layout[1];
    const size_t blocks = (channels + Block - 1) / Block;
    const auto h = static_cast<int64_t>(grad.layout[2]), w = static_cast<int64_t>(grad.layout[3]);
    const auto plane_n = static_cast<size_t>(h * w);
    const Nchw gp(grad.layout);
    auto* gr = static_cast<float*>(grad.raw_ptr());
    work += grad.layout.total_nr_elems() * 2;
    parallel_ranges(batch * blocks, work, kParallelGrain, [&](size_t b, size_t e) {
        for (size_t u = b; u < e; ++u) {
            const size_t n = u / blocks, c0 = u % blocks * Block;
            const size_t count = std::min(Block, channels - c0);
            // A block small enough for L2 sums in one buffer per thread, reused block after block
            // and call after call (the workspace's own region of each block put the data
            // gradient's zeroing, scatter and rounding of the bench's remap out of L2: 4 MiB).
            thread_local std::vector<double> near;
            double* acc = ws + (n * channels + c0) * plane_n;
            if (Block * plane_n <= kNearDoubles) {
                near.resize(Block * plane_n);
                acc = near.data();
            }
            std::fill(acc, acc + count * plane_n, 0.0);
            add(n, c0, count, acc);
            if (Interleaved && gp.s[3] == 1 && gp.s[2] == w && gp.s[1] >= 0) {
                // Dense planes: runs of pixels rounded by vectors into a buffer, then turned into
                // the planes by 8 x 8 register transposes (one element at a time, with the range
                // check of double_to_float, the rounding took a third of the remap data gradient).
                constexpr size_t kRun = 512;
                float run[kRun * Block];
                float* planes = gr + gp.plane(n, c0);
                for (size_t p = 0; p < plane_n; p += kRun) {
                    const size_t m = std::min(kRun, plane_n - p);
                    demote_f64(acc + p * count, m * count, run);
                    transpose_tile_u32(reinterpret_cast<const uint32_t*>(run), count, m, count,
                                       reinterpret_cast<uint32_t*>(planes + p), gp.s[1], false);
                }
                continue;
            }
            for (size_t l = 0; l < count; ++l) {
                float* plane = gr + gp.plane(n, c0 + l);
                if (!Interleaved && gp.s[3] == 1 && gp.s[2] == w) {
                    demote_f64(acc + l * plane_n, plane_n, plane);
                    continue;
                }
                const double* a = Interleaved ? acc + l : acc + l * plane_n;
                const size_t step = Interleaved ? count : 1;
                for (int64_t y = 0; y < h; ++y)
                    for (int64_t x = 0; x < w; ++x)
                        plane[gp.at(y, x)] =
                                from_double<float>(a[static_cast<size_t>(y * w + x) * step]);
            }
        }
    });
}

// Calls add(n, c, acc) for every (image n, channel c) plane of grad, acc a zeroed dense h x w
// plane of double (row y at acc + y * w), then rounds acc into grad.
template <class Add>
void accumulate_planes(const TensorND& grad, double* ws, size_t work, Add&& add) {
    accumulate_plane_blocks<1>(grad, ws, work,
                               [&](size_t n, size_t c, size_t, double* acc) { add(n, c, acc); });
}

}  // namespace neomeg::dnn::x86
