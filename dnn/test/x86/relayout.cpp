// Relayout on the x86 handle against naive, exactly, for every element size: contiguous and
// padded copies (rows), transposes and NCHW <-> NHWC permutations of sizes 0, 1, primes and above
// the threading grain (tiles), values repeated along dst's rows (fill), reversed and broadcast
// sources and strided gathers (strided walk), into contiguous, padded and transposed destinations.
#include <numeric>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

const DType kDTypes[] = {dtype::Float32, dtype::Float16, dtype::Int8, dtype::Bool, dtype::Int32};

// Runs Relayout from a random tensor viewed as `src` into a tensor viewed as `dst` (both views of
// their own storage) on the x86 handle and on naive; expects equal values and returns the kernel.
std::string run_into(Handle& handle, const TensorLayout& src, const TensorLayout& dst) {
    std::mt19937 rng(3);
    HostTensor s(src);
    fill_uniform(s, -100, 100, rng);
    HostTensor got(dst), want(dst);
    auto op = handle.create_operator<Relayout>();
    TensorND in = s.nd(), out_got = got.nd(), out_want = want.nd();
    op->exec(std::span(&in, 1), std::span(&out_got, 1));
    auto naive = Handle::make_naive();
    naive->create_operator<Relayout>()->exec(std::span(&in, 1), std::span(&out_want, 1));
    EXPECT_TRUE(tensors_near(got.contiguous(), want.contiguous(), 0))
            << src.to_string() << " -> " << dst.to_string();
    return last_kernel(*op);
}

// 4-, 2- and 1-byte elements turn straight from src to dst (copy_turned) where dst does not
// stream; other sizes through a tile buffer.
const char* tiled_kernel(DType dt) {
    return dt.size() <= 4 ? "turned" : "tiled";
}

}  // namespace

TEST_F(X86, RelayoutMatchesNaive) {
    for (DType dt : kDTypes) {
        Checker<Relayout> c(handle.get());
        c.set_epsilon(0).set_dtype(0, dt).set_range(0, -100, 100);
        for (const TensorShape& s : {TensorShape{0}, TensorShape{1}, TensorShape{7, 13},
                                     TensorShape{3, 5, 7, 11}, TensorShape{(1 << 17) + 3}})
            c.set_noncontiguous(true).execs({s});
        // Transposes and permutations (tiled), some above the threading grain.
        for (auto [shape, perm] : std::vector<std::pair<TensorShape, std::vector<size_t>>>{
                     {{1, 1}, {1, 0}},
                     {{7, 13}, {1, 0}},
                     {{33, 65}, {1, 0}},
                     {{509, 521}, {1, 0}},
                     {{2, 3, 37, 41}, {0, 2, 3, 1}},
                     {{2, 37, 41, 3}, {0, 3, 1, 2}},
                     {{4, 64, 28, 28}, {0, 2, 3, 1}},
                     {{3, 5, 7}, {2, 1, 0}},
                     {{3, 1, 7}, {2, 1, 0}},
             }) {
            TensorLayout l = TensorLayout(shape, dt).dimshuffle(perm);
            c.set_noncontiguous(false).exec_layouts({l});
        }
        // Reversed, broadcast and strided sources.
        c.exec_layouts({TensorLayout({5, 7}, {-7, 1}, dt)});
        c.exec_layouts({TensorLayout({5, 7}, {7, -1}, dt)});
        c.exec_layouts({TensorLayout({6, 300}, {0, 1}, dt)});
        c.exec_layouts({TensorLayout({300, 6}, {1, 0}, dt)});
        c.exec_layouts({TensorLayout({9, 11}, {33, 3}, dt)});
    }
}

TEST_F(X86, RelayoutIntoStridedDestinations) {
    for (DType dt : kDTypes) {
        TensorLayout plain({37, 41}, dt),
                transposed = TensorLayout({41, 37}, dt).dimshuffle({1, 0});
        EXPECT_EQ(run_into(*handle, plain, transposed), tiled_kernel(dt));
        EXPECT_EQ(run_into(*handle, transposed, plain), tiled_kernel(dt));
        EXPECT_EQ(run_into(*handle, plain, plain), "rows");
        TensorLayout reversed({37, 41}, {-41, -1}, dt), nchw({2, 3, 5, 7}, dt);
        EXPECT_EQ(run_into(*handle, plain, reversed), "strided");
        EXPECT_EQ(run_into(*handle, nchw, TensorLayout({2, 5, 7, 3}, dt).dimshuffle({0, 3, 1, 2})),
                  tiled_kernel(dt));
        TensorLayout big({700, 300}, dt);
        EXPECT_EQ(run_into(*handle, big, TensorLayout({300, 700}, dt).dimshuffle({1, 0})),
                  tiled_kernel(dt));
        // A value repeated along dst's rows (one broadcast element, a column) fills them; above
        // the threading grain and into padded rows too.
        EXPECT_EQ(run_into(*handle, TensorLayout({37, 41}, {0, 0}, dt), plain), "fill");
        EXPECT_EQ(run_into(*handle, TensorLayout({37, 41}, {1, 0}, dt), plain), "fill");
        EXPECT_EQ(run_into(*handle, TensorLayout({700, 300}, {0, 0}, dt), big), "fill");
        EXPECT_EQ(run_into(*handle, TensorLayout({37, 41}, {0, 0}, dt),
                           TensorLayout({37, 41}, {45, 1}, dt)),
                  "fill");
        EXPECT_EQ(run_into(*handle, TensorLayout({37, 41}, {0, 0}, dt), reversed), "strided");
    }
}

// A transposing copy into a dst larger than the caches writes it with non-temporal stores: rows
// whose start is not vector aligned (odd widths, a padded dst) and partial tiles at the edges go
// through the tile buffer (relayout_turned.cpp has the dsts whose rows are whole lines).
TEST_F(X86, RelayoutLargeTransposeStreams) {
    struct Case {
        TensorShape dst;
        DType dt;
    };
    for (Case c : {Case{{2051, 1031}, dtype::Float32}, Case{{3, 1025, 701}, dtype::Float32},
                   Case{{3001, 2999}, dtype::Int8}, Case{{2063, 2053}, dtype::Float16}}) {
        size_t n = c.dst.ndim;
        std::vector<size_t> swap(n);
        std::iota(swap.begin(), swap.end(), size_t{0});
        std::swap(swap[n - 1], swap[n - 2]);
        TensorShape src_shape = c.dst;
        std::swap(src_shape[n - 1], src_shape[n - 2]);
        TensorLayout src = TensorLayout(src_shape, c.dt).dimshuffle(swap);
        EXPECT_EQ(run_into(*handle, src, TensorLayout(c.dst, c.dt)), "tiled");
        // Rows padded by five elements: most start off the vector alignment.
        TensorLayout padded(c.dst, c.dt);
        ptrdiff_t stride = 1;
        for (size_t d = n; d-- > 0;) {
            padded.stride[d] = stride;
            stride *= static_cast<ptrdiff_t>(c.dst[d] + (d == n - 1 ? 5 : 0));
        }
        EXPECT_EQ(run_into(*handle, src, padded), "tiled");
    }
}

// NCHW -> NHWC and back above the streaming size, with channel and spatial sizes off a multiple of
// the 8 x 8 blocks the float32 transpose turns in registers.
TEST_F(X86, RelayoutLargeChannelPermutations) {
    for (DType dt : {DType(dtype::Float32), DType(dtype::Int32)}) {
        TensorLayout nchw({2, 67, 129, 131}, dt);
        TensorLayout nhwc_as_nchw = TensorLayout({2, 129, 131, 67}, dt).dimshuffle({0, 3, 1, 2});
        EXPECT_EQ(run_into(*handle, nchw, nhwc_as_nchw), "tiled");
        EXPECT_EQ(run_into(*handle, nhwc_as_nchw, nchw), "tiled");
    }
}

// One long row (a contiguous copy merges into one; a broadcast value; a reversed vector) is cut
// into pieces that the threads share: each kernel at 1, 2 and 3 threads.
TEST_F(X86, RelayoutLongRowsInPieces) {
    for (int threads : {1, 2, 3}) {
        ScopedOmpThreads scope(threads);
        for (DType dt : kDTypes) {
            Checker<Relayout> c(handle.get());
            c.set_epsilon(0).set_dtype(0, dt).set_range(0, -100, 100);
            c.exec_layouts({TensorLayout({(1 << 18) + 5}, dt)});
            c.exec_layouts({TensorLayout({2, 1, 200003}, dt)});
            c.exec_layouts({TensorLayout({300007}, {-1}, dt)});
            c.exec_layouts({TensorLayout({2, 200003}, {0, 0}, dt)});
            TensorLayout dense({(1 << 18) + 5}, dt);
            EXPECT_EQ(run_into(*handle, dense, dense), "rows");
            EXPECT_EQ(
                    run_into(*handle, TensorLayout({300007}, {-1}, dt), TensorLayout({300007}, dt)),
                    "strided");
            EXPECT_EQ(run_into(*handle, TensorLayout({2, 200003}, {0, 0}, dt),
                               TensorLayout({2, 200003}, dt)),
                      "fill");
        }
    }
}
