// BlockTranspose (src/x86/block_transpose.h), a 1x1 filter gradient out of square blocks of
// channels into plain OIHW, against oneDNN's reorder primitive bit for bit: 16x16 and 8x8 blocks
// (OIhw16i16o, OIhw8i8o; 1-D and 3-D weights too), one block and several of each channel, over an
// output of garbage; at 1, 2 and 3 threads, with gradients large enough to be split by rows of
// output blocks (an odd number of them, so the threads' shares differ). And the cases it declines:
// channels not a multiple of the block (padded), a filter larger than 1x1, the other block order
// (IOhw16o16i), a strided plain side, bfloat16.
#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
#include <random>

#include "src/x86/block_transpose.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using dnnl::memory;
using Tag = memory::format_tag;

namespace {

memory::desc f32(const memory::dims& d, Tag t) {
    return memory::desc(d, memory::data_type::f32, t);
}

}  // namespace

TEST(X86BlockTranspose, MatchesOneDnnReorder) {
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream s(eng);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-2, 2);
    struct Case {
        memory::dims dims;
        Tag blocked, plain;
    };
    // 272 x 512 and 520 x 256 are past two threads' worth of parallel_ranges' grain (2 x 65536
    // elements): 17 and 65 rows of blocks split across the threads.
    for (const int threads : {1, 2, 3})
        for (const Case& c : {Case{{16, 16, 1, 1}, Tag::OIhw16i16o, Tag::oihw},
                              Case{{48, 32, 1, 1}, Tag::OIhw16i16o, Tag::oihw},
                              Case{{32, 80, 1, 1}, Tag::OIhw16i16o, Tag::oihw},
                              Case{{8, 24, 1, 1}, Tag::OIhw8i8o, Tag::oihw},
                              Case{{40, 16, 1, 1}, Tag::OIhw8i8o, Tag::oihw},
                              Case{{32, 16, 1}, Tag::OIw16i16o, Tag::oiw},
                              Case{{16, 48, 1, 1, 1}, Tag::OIdhw16i16o, Tag::oidhw},
                              Case{{272, 512, 1, 1}, Tag::OIhw16i16o, Tag::oihw},
                              Case{{520, 256, 1, 1}, Tag::OIhw8i8o, Tag::oihw},
                              Case{{784, 176, 1}, Tag::OIw16i16o, Tag::oiw}}) {
            ScopedOmpThreads scope(threads);
            memory from(f32(c.dims, c.blocked), eng), want(f32(c.dims, c.plain), eng),
                    got(f32(c.dims, c.plain), eng);
            const size_t n = from.get_desc().get_size() / sizeof(float);
            auto* f = static_cast<float*>(from.get_data_handle());
            for (size_t i = 0; i < n; ++i)
                f[i] = u(rng);
            std::memset(got.get_data_handle(), 0x7f, got.get_desc().get_size());
            dnnl::reorder(from, want).execute(s, from, want);
            s.wait();
            auto t = x86::BlockTranspose::plan(from.get_desc(), got.get_desc());
            ASSERT_TRUE(t) << c.dims[0] << "x" << c.dims[1];
            t->run(from.get_data_handle(), got.get_data_handle());
            EXPECT_EQ(std::memcmp(got.get_data_handle(), want.get_data_handle(), n * sizeof(float)),
                      0)
                    << c.dims[0] << "x" << c.dims[1] << " block " << static_cast<int>(c.blocked)
                    << " threads " << threads;
        }
}

TEST(X86BlockTranspose, DeclinesOtherLayouts) {
    using x86::BlockTranspose;
    EXPECT_FALSE(BlockTranspose::plan(f32({24, 16, 1, 1}, Tag::OIhw16i16o),
                                      f32({24, 16, 1, 1}, Tag::oihw)));
    EXPECT_FALSE(BlockTranspose::plan(f32({16, 16, 3, 3}, Tag::OIhw16i16o),
                                      f32({16, 16, 3, 3}, Tag::oihw)));
    EXPECT_FALSE(BlockTranspose::plan(f32({16, 16, 1, 1}, Tag::IOhw16o16i),
                                      f32({16, 16, 1, 1}, Tag::oihw)));
    EXPECT_FALSE(BlockTranspose::plan(f32({16, 16, 1, 1}, Tag::OIhw16o16i),
                                      f32({16, 16, 1, 1}, Tag::oihw)));
    EXPECT_FALSE(BlockTranspose::plan(f32({16, 16, 1, 1}, Tag::OIhw16i16o),
                                      f32({16, 16, 1, 1}, Tag::ihwo)));
    EXPECT_FALSE(BlockTranspose::plan(
            f32({16, 16, 1, 1}, Tag::OIhw16i16o),
            memory::desc({16, 16, 1, 1}, memory::data_type::f32, memory::dims{20, 1, 1, 1})));
    EXPECT_FALSE(BlockTranspose::plan(
            memory::desc({16, 16, 1, 1}, memory::data_type::bf16, Tag::OIhw16i16o),
            memory::desc({16, 16, 1, 1}, memory::data_type::bf16, Tag::oihw)));
    EXPECT_FALSE(BlockTranspose::plan(f32({16, 16, 1, 1}, Tag::oihw),
                                      f32({16, 16, 1, 1}, Tag::OIhw16i16o)));
}
