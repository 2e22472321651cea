// Philox4x32-10 against the known-answer vectors of the Random123 distribution (tests/kat_vectors).
#include <gtest/gtest.h>

#include "src/common/philox.h"

using namespace neomeg::dnn::philox;

namespace {

void expect_block(Block got, Block want) {
    for (int i = 0; i < 4; ++i)
        EXPECT_EQ(got.w[i], want.w[i])
                << "word " << i << std::hex << ": 0x" << got.w[i] << " vs 0x" << want.w[i];
}

}  // namespace

TEST(Philox, KnownAnswerZeroCounterZeroKey) {
    expect_block(philox4x32_10({{0, 0, 0, 0}}, {{0, 0}}),
                 {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}});
}

TEST(Philox, KnownAnswerAllOnes) {
    expect_block(philox4x32_10({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
                               {{0xffffffff, 0xffffffff}}),
                 {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}});
}

TEST(Philox, KnownAnswerPiDigits) {
    expect_block(philox4x32_10({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
                               {{0xa4093822, 0x299f31d0}}),
                 {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}});
}

TEST(Philox, StreamElementsComeFromTheirBlock) {
    // Seed 0, element 0..3 is the zero-counter zero-key block.
    EXPECT_EQ(bits_at(0, 0), 0x6627e8d5u);
    EXPECT_EQ(bits_at(0, 3), 0x9b00dbd8u);
    // The seed's high half is the second key word, the block index's high half counter word 1.
    uint64_t seed = 0x299f31d0a4093822ull, block = 0x0000000513198a2eull;
    Block b = block_at(seed, block);
    Block direct = philox4x32_10({{0x13198a2e, 0x5, 0, 0}}, {{0xa4093822, 0x299f31d0}});
    expect_block(b, direct);
    EXPECT_EQ(bits_at(seed, block * 4 + 2), direct.w[2]);
}

TEST(Philox, UnitIntervalStaysBelowOne) {
    for (int bits : {8, 11, 24}) {
        EXPECT_EQ(unit_interval(0, bits), 0.f);
        float top = unit_interval(0xffffffffu, bits);
        EXPECT_LT(top, 1.f);
        EXPECT_FLOAT_EQ(top, 1.f - std::ldexp(1.f, -bits));
    }
    EXPECT_FLOAT_EQ(unit_interval(0x80000000u, 24), 0.5f);
}
