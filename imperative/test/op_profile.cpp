// NEOMEG_EAGER_PROFILE's table: per kind of op, the time of the calls after each site's first and
// the sum over calls of their site's fastest call.
#include "../src/op_profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

using neomeg::imperative::EagerProfile;
using std::chrono::milliseconds;

namespace {

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST(EagerProfile, SumsEachKindAfterEachSitesFirstCall) {
    EagerProfile p;
    // Two RELU sites (two shapes) and a NEGATE; each site's first call plans and is not counted.
    p.add("RELU", "relu {4}", milliseconds(100));
    p.add("RELU", "relu {4}", milliseconds(4));
    p.add("RELU", "relu {4}", milliseconds(2));
    p.add("RELU", "relu {8}", milliseconds(50));
    p.add("RELU", "relu {8}", milliseconds(3));
    p.add("NEGATE", "negate {4}", milliseconds(7));
    p.add("NEGATE", "negate {4}", milliseconds(1));
    const std::string table = p.summary();
    // RELU: 4 + 2 + 3 = 9 ms in 3 calls, fastest 2 * 2 + 3 = 7; NEGATE: 1, fastest 1.
    EXPECT_TRUE(contains(table,
                         "eager profile: 10.000 ms in timed calls (their sites' fastest: "
                         "8.000 ms)\n"))
            << table;
    EXPECT_TRUE(contains(table, "  9.000 ms (fastest 7.000 ms)  3 calls of RELU\n")) << table;
    EXPECT_TRUE(contains(table, "  1.000 ms (fastest 1.000 ms)  1 calls of NEGATE\n")) << table;
    EXPECT_LT(table.find("RELU"), table.find("NEGATE")) << table;  // slowest kind first
}

TEST(EagerProfile, OnlyFirstCallsLeaveAnEmptyTable) {
    EagerProfile p;
    EXPECT_TRUE(p.empty());
    p.add("RELU", "relu {4}", milliseconds(5));
    EXPECT_FALSE(p.empty());
    EXPECT_TRUE(contains(p.summary(), "eager profile: 0.000 ms in timed calls")) << p.summary();
    EXPECT_FALSE(contains(p.summary(), "calls of")) << p.summary();
}
