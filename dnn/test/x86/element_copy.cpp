// ElementCopy (src/x86/element_copy.h), the small reorders between oneDNN's plain and blocked
// layouts, against oneDNN's reorder primitive bit for bit: a depthwise filter's goihw <->
// Goihw16g and Goihw8g (whole blocks, and 24 and 5 groups padded to a block, whose padding must
// come out zero over a buffer of garbage), an OIhw16i16o filter with padded channels, nChw16c
// activations, 16-bit elements; values with NaN payloads, infinities and signed zeros. And the
// cases it declines: different dtypes, dims, sizes past the bound.
#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
#include <random>

#include "src/x86/element_copy.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using dnnl::memory;
using Tag = memory::format_tag;

namespace {

// Values of `size`-byte elements (4: float32, 2: bfloat16, a float32's upper half): uniform ones,
// quiet NaNs of many payloads, infinities and zeros of both signs among them.
std::vector<uint8_t> random_values(size_t bytes, size_t size, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-2, 2);
    std::vector<uint8_t> v(bytes);
    for (size_t i = 0; i + size <= bytes; i += size) {
        float f = u(rng);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        // bfloat16 without NaNs and -0: below AVX-512 oneDNN's bfloat16 reorder (simple:any)
        // computes in * 1 + out * 0 in float32, which gives -0 as +0 and NaNs a payload of its
        // own (and reads the output), where the copy keeps the bits.
        switch (rng() % 8) {
            case 0:
                if (size == 2)
                    break;
                bits = 0x7fc00000u | static_cast<uint32_t>(rng() & 0x3fffffu) |
                       (rng() % 2 ? 0x80000000u : 0u);
                break;
            case 1:
                bits = rng() % 2 && size == 4 ? 0x80000000u : 0u;
                break;
            case 2:
                bits = rng() % 2 ? 0xff800000u : 0x7f800000u;
                break;
            default:
                break;
        }
        if (size == 2)
            bits >>= 16;
        std::memcpy(v.data() + i, &bits, size);
    }
    return v;
}

void expect_like_reorder(const memory::desc& from, const memory::desc& to, std::mt19937& rng) {
    SCOPED_TRACE(::testing::Message()
                 << "from " << from.get_size() << " bytes to " << to.get_size());
    auto copy = x86::ElementCopy::plan(from, to, size_t(1) << 20);
    ASSERT_TRUE(copy.has_value());
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream s(eng);
    const size_t size = memory::data_type_size(from.data_type());
    auto in = random_values(from.get_size(), size, rng);
    // Both outputs start as finite garbage (12.06 in either dtype; oneDNN's bfloat16 reorder reads
    // its output below AVX-512, and a NaN or infinity there would reach the result): the padding
    // must be written with zeros.
    std::vector<uint8_t> want(to.get_size(), 0x41), got(to.get_size(), 0x41);
    memory mf(from, eng, in.data()), mt(to, eng, want.data());
    dnnl::reorder(mf, mt).execute(s, mf, mt);
    s.wait();
    copy->run(in.data(), got.data());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0);
}

}  // namespace

TEST_F(X86, ElementCopyMatchesOnednnReorder) {
    std::mt19937 rng(5);
    using DT = memory::data_type;
    for (DT dt : {DT::f32, DT::bf16})
        for (memory::dim groups : {64, 32, 24, 5, 1})
            for (Tag blocked : {Tag::Goihw16g, Tag::Goihw8g}) {
                const memory::dims dims{groups, 1, 1, 3, 3};
                memory::desc plain(dims, dt, Tag::goihw), block(dims, dt, blocked);
                expect_like_reorder(plain, block, rng);
                expect_like_reorder(block, plain, rng);
            }
    const memory::dims oi{24, 20, 3, 3}, act{2, 20, 5, 7};
    for (Tag t : {Tag::OIhw16i16o, Tag::OIhw8i8o, Tag::Ohwi16o}) {
        expect_like_reorder(memory::desc(oi, DT::f32, Tag::oihw), memory::desc(oi, DT::f32, t),
                            rng);
        expect_like_reorder(memory::desc(oi, DT::f32, t), memory::desc(oi, DT::f32, Tag::oihw),
                            rng);
    }
    expect_like_reorder(memory::desc(act, DT::f32, Tag::nchw),
                        memory::desc(act, DT::f32, Tag::nChw16c), rng);
    expect_like_reorder(memory::desc(act, DT::f32, Tag::nChw16c),
                        memory::desc(act, DT::f32, Tag::nhwc), rng);
}

TEST_F(X86, ElementCopyDeclines) {
    const memory::dims dims{64, 1, 1, 3, 3};
    memory::desc f32(dims, memory::data_type::f32, Tag::goihw);
    EXPECT_FALSE(x86::ElementCopy::plan(
            f32, memory::desc(dims, memory::data_type::bf16, Tag::Goihw16g), 1 << 20));
    EXPECT_FALSE(x86::ElementCopy::plan(
            f32, memory::desc({32, 1, 1, 3, 3}, memory::data_type::f32, Tag::Goihw16g), 1 << 20));
    EXPECT_FALSE(x86::ElementCopy::plan(
            f32, memory::desc(dims, memory::data_type::f32, Tag::Goihw16g), 1000));
    EXPECT_TRUE(x86::ElementCopy::plan(
            f32, memory::desc(dims, memory::data_type::f32, Tag::Goihw16g), 2304));
}
