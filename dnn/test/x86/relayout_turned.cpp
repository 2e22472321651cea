// The direct 4-, 2- and 1-byte transpose of the x86 Relayout (copy_turned: 16 src rows at a time
// turned in 8 x 8 or 16 x 16 register blocks straight into dst) against naive, exactly, at every
// Highway target and at 1 and 2 threads: sizes 0, 1, 7, 8, 9, 15, 16, 17 and primes around the
// blocks, the 16-row bands (32 on AVX2 where dst rows are 4 KiB apart), the 1024-element chunks,
// the band groups of short rows and the bound of the walk pipelined across bands (src rows of 64
// elements, streamed or not); negative src strides and padded dsts; and dsts above the streaming
// size (non-temporal stores) starting on a cache line, 32 bytes into one and 4 bytes into one, with
// rows whole lines or not.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "x86/highway_targets.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// The element sizes copy_turned takes: 4 bytes (two dtypes), 2 and 1 (two dtypes).
const DType kTurned[] = {dtype::Float32, dtype::Int32, dtype::Float16, dtype::Int8, dtype::Bool};

// Elements from the first to one past the last that `l` (non-negative strides) spans.
size_t span_elems(const TensorLayout& l) {
    size_t last = 0;
    for (size_t k = 0; k < l.ndim; ++k)
        last += (l[k] - 1) * static_cast<size_t>(l.stride[k]);
    return last + 1;
}

// Relayout from a random `src` into `dst` placed `offset` bytes past a 64-byte boundary, on the
// x86 handle and on naive (into a dense tensor); expects the same values and returns the kernel.
std::string run_at(Handle& handle, const TensorLayout& src, const TensorLayout& dst,
                   size_t offset) {
    std::mt19937 rng(5);
    HostTensor s(src);
    fill_uniform(s, -1000, 1000, rng);
    size_t bytes = span_elems(dst) * dst.dtype.size();
    std::unique_ptr<std::byte, decltype(&std::free)> storage(
            static_cast<std::byte*>(std::aligned_alloc(64, (bytes + offset + 63) / 64 * 64)),
            &std::free);
    std::memset(storage.get(), 0, bytes + offset);
    TensorND in = s.nd(), out(storage.get() + offset, dst);
    auto op = handle.create_operator<Relayout>();
    op->exec(std::span(&in, 1), std::span(&out, 1));
    HostTensor want(TensorLayout(TensorShape(dst), dst.dtype));
    TensorND want_nd = want.nd();
    Handle::make_naive()->create_operator<Relayout>()->exec(std::span(&in, 1),
                                                            std::span(&want_nd, 1));
    // Read dst back through its own strides, element by element.
    const size_t es = dst.dtype.size(), n = dst.total_nr_elems();
    const auto* wp = static_cast<const std::byte*>(want_nd.raw_ptr());
    size_t bad = 0;
    for (size_t e = 0; e < n; ++e) {
        size_t off = 0;
        for (size_t k = dst.ndim, rest = e; k-- > 0; rest /= dst[k])
            off += rest % dst[k] * static_cast<size_t>(dst.stride[k]);
        bad += std::memcmp(storage.get() + offset + off * es, wp + e * es, es) != 0;
    }
    EXPECT_EQ(bad, 0u) << src.to_string() << " -> " << dst.to_string() << " at +" << offset;
    return last_kernel(*op);
}

// src viewed as the transpose of a dense (cols, rows) tensor, into a dense (rows, cols) dst.
TensorLayout transposed(size_t rows, size_t cols, DType dt) {
    return TensorLayout({cols, rows}, dt).dimshuffle({1, 0});
}

}  // namespace

TEST_F(X86, RelayoutTurnedMatchesNaive) {
    const size_t sizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 1031};
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t) {
        for (int threads : {1, 2}) {
            ScopedOmpThreads scope(threads);
            for (DType dt : kTurned) {
                Checker<Relayout> c(handle.get());
                c.set_epsilon(0).set_dtype(0, dt).set_range(0, -1000, 1000);
                for (size_t rows : sizes)
                    for (size_t cols : sizes)
                        if (rows * cols < 200000)
                            c.exec_layouts({transposed(rows, cols, dt)});
                // Chunk edges along src's rows (1024, 1025, 2049), a ResNet layer's NCHW
                // (64, 56 x 56) to NHWC and back, short rows in band groups (3 and 5 channels),
                // src rows around the bound of the pipelined short-row walk (64 elements), and dst
                // rows 4 KiB or more apart (AVX2's bands of 32 src rows; last groups of 16, 24, 8).
                const std::pair<size_t, size_t> shapes[] = {
                        {1024, 24}, {1025, 17}, {2049, 16}, {3136, 64},  {64, 3136}, {4099, 3},
                        {3, 4099},  {2053, 5},  {63, 257},  {64, 48},    {65, 31},   {71, 16},
                        {72, 33},   {73, 17},   {73, 1072}, {100, 1080}, {129, 1064}};
                for (auto [rows, cols] : shapes)
                    c.exec_layouts({transposed(rows, cols, dt)});
                // NCHW -> NHWC and back, and a 3-D permutation that moves the unit axis.
                c.exec_layouts({TensorLayout({2, 37, 19, 23}, dt).dimshuffle({0, 2, 3, 1})});
                c.exec_layouts({TensorLayout({2, 19, 23, 37}, dt).dimshuffle({0, 3, 1, 2})});
                c.exec_layouts({TensorLayout({5, 33, 41}, dt).dimshuffle({2, 0, 1})});
                // Negative strides along src's non-unit axis (reversed columns of the transpose).
                c.exec_layouts({TensorLayout({33, 47}, {1, -33}, dt)});
                c.exec_layouts({TensorLayout({2, 17, 40}, {-680, 1, -17}, dt)});

                // The kernel that ran, and padded or transposed dsts.
                EXPECT_EQ(run_at(*handle, transposed(37, 41, dt), TensorLayout({37, 41}, dt), 0),
                          "turned");
                EXPECT_EQ(run_at(*handle, transposed(37, 41, dt),
                                 TensorLayout({37, 41}, {45, 1}, dt), 4),
                          "turned");
                EXPECT_EQ(run_at(*handle, TensorLayout({41, 37}, dt), transposed(41, 37, dt), 0),
                          "turned");
                EXPECT_EQ(run_at(*handle, TensorLayout({33, 47}, {1, -33}, dt),
                                 TensorLayout({33, 47}, dt), 0),
                          "turned");
            }
        }
    });
    EXPECT_GE(ran, 1u);
}

// Above the streaming size (8 MiB of dst): rows that are whole lines from a 64-byte aligned dst
// stream through copy_turned (ragged ends of rows and columns included: 1037 of 1040 elements
// used, 2051 rows); the same dst 32 or 4 bytes past a line, or rows that are not whole lines, go
// through the tile buffer instead. Both are checked against naive.
TEST_F(X86, RelayoutTurnedStreams) {
    struct Case {
        TensorLayout src, dst;
        size_t offset;
        const char* kernel;
    };
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t) {
        for (int threads : {1, 2}) {
            ScopedOmpThreads scope(threads);
            // One 4-byte dtype: the kernel moves raw 32-bit words (Int32 runs in-cache above).
            for (DType dt : {DType(dtype::Float32)}) {
                TensorLayout padded({2051, 1037}, {1040, 1}, dt);
                TensorLayout nhwc = TensorLayout({9, 67, 65, 64}, dt).dimshuffle({0, 3, 1, 2});
                TensorLayout nchw({9, 64, 67, 65}, dt);
                // NHWC -> NCHW (64 and 61 channels: src rows at and under the pipelined walk's
                // bound) into planes of whole lines.
                TensorLayout from_nhwc = TensorLayout({9, 64, 64, 64}, dt).dimshuffle({0, 3, 1, 2});
                TensorLayout from_nhwc61 =
                        TensorLayout({10, 64, 64, 61}, dt).dimshuffle({0, 3, 1, 2});
                for (const Case& c : {
                             Case{transposed(2051, 1040, dt), TensorLayout({2051, 1040}, dt), 0,
                                  "turned"},
                             Case{transposed(2051, 1037, dt), padded, 0, "turned"},
                             Case{nchw, nhwc, 0, "turned"},
                             Case{from_nhwc, TensorLayout({9, 64, 64, 64}, dt), 0, "turned"},
                             Case{from_nhwc61, TensorLayout({10, 61, 64, 64}, dt), 0, "turned"},
                             Case{transposed(2051, 1040, dt), TensorLayout({2051, 1040}, dt), 32,
                                  "tiled"},
                             Case{transposed(2051, 1037, dt), padded, 4, "tiled"},
                             Case{transposed(2051, 1037, dt), TensorLayout({2051, 1037}, dt), 0,
                                  "tiled"},
                     })
                    EXPECT_EQ(run_at(*handle, c.src, c.dst, c.offset), c.kernel)
                            << c.src.to_string() << " -> " << c.dst.to_string();
            }
        }
    });
    EXPECT_GE(ran, 1u);
}
