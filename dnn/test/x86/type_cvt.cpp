// TypeCvt on the x86 handle (Highway kernels) against naive: every pair of plain dtypes on random
// values, sizes 0, 1, primes and above the threading grain, padded, reversed and transposed views
// and padded outputs; and bit for bit: all 65536 float16 and bfloat16 patterns to every dtype, a
// sweep of float32 patterns (NaNs of both signs and any payload, infinities, subnormals, the
// rounding ties, the integers' ends) to every dtype, and a sweep of int32 patterns with bfloat16's
// and float16's rounding ties and float32's inexact range to every dtype.
#include <cstdint>
#include <cstring>
#include <limits>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/x86/type_cvt_hwy.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::TypeCvt to(DType dt) {
    param::TypeCvt p;
    p.dtype = dt.enumv();
    return p;
}

const DType kDTypes[] = {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8,
                         dtype::Uint8,   dtype::Int16,   dtype::Int32,    dtype::Bool};

// A tensor of n elements of dt whose bytes are `bytes`.
HostTensor from_bytes(DType dt, const void* bytes, size_t n) {
    HostTensor t(TensorShape{n}, dt);
    std::memcpy(t.nd().raw_ptr(), bytes, n * dt.size());
    return t;
}

// Converts src to dt on the x86 handle and on naive and expects the same bytes; returns the
// kernel x86 ran.
std::string expect_same_bits(Handle& handle, const HostTensor& src, DType dt) {
    auto op = handle.create_operator<TypeCvt>();
    op->param() = to(dt);
    auto got = run_op(*op, {src});
    auto naive = Handle::make_naive();
    auto ref = naive->create_operator<TypeCvt>();
    ref->param() = to(dt);
    auto want = run_op(*ref, {src});
    size_t n = src.layout().total_nr_elems(), size = dt.size();
    const auto* g = static_cast<const unsigned char*>(got[0].nd().raw_ptr());
    const auto* w = static_cast<const unsigned char*>(want[0].nd().raw_ptr());
    for (size_t i = 0; i < n; ++i)
        if (std::memcmp(g + i * size, w + i * size, size) != 0) {
            ADD_FAILURE() << src.dtype().name() << " -> " << dt.name() << ": element " << i
                          << " differs from naive's bits";
            break;
        }
    return last_kernel(*op);
}

// Runs body at AVX-512, AVX2 (F16C's float16 conversions), the emulation and scalar (Eigen's
// algorithm on int32 lanes) where the CPU has them.
template <class Body>
void at_every_target(Body&& body) {
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t t) {
                SCOPED_TRACE(hwy::TargetName(t));
                body();
            });
    EXPECT_GE(ran, 1u);
}

}  // namespace

TEST_F(X86, TypeCvtClaimsEveryPlainPair) {
    for (DType from : kDTypes)
        for (DType dt : kDTypes)
            EXPECT_TRUE(x86::type_cvt_supported(from, dt)) << from.name() << " -> " << dt.name();
    EXPECT_FALSE(x86::type_cvt_supported(dtype::Complex64, dtype::Float32));
}

TEST_F(X86, TypeCvtMatchesNaive) {
    const std::vector<TensorShape> shapes = {{0},          {1}, {7}, {13, 17}, {(1 << 17) + 3},
                                             {2, 300, 301}};
    for (DType from : kDTypes)
        for (DType dt : kDTypes) {
            if (!x86::type_cvt_supported(from, dt) && from != dt)
                continue;
            Checker<TypeCvt> c(handle.get());
            // Beyond the small integers' ranges too, so that saturation and wrap are exercised.
            double lo = from == dtype::Bool ? 0 : -70000, hi = from == dtype::Bool ? 1 : 70000;
            c.set_param(to(dt)).set_dtype(0, from).set_range(0, lo, hi).set_epsilon(0);
            for (const auto& s : shapes) {
                c.set_noncontiguous(false).execs({s});
                c.set_noncontiguous(true).execs({s});
            }
            c.exec_layouts({TensorLayout({5, 7}, {-7, 1}, from)});
            c.exec_layouts({TensorLayout({7, 5}, from).dimshuffle({1, 0})});
        }
}

TEST_F(X86, TypeCvtHalfPatternsExactly) {
    std::vector<uint16_t> all(1 << 16);
    for (size_t i = 0; i < all.size(); ++i)
        all[i] = static_cast<uint16_t>(i);
    at_every_target([&] {
        for (DType from : {dtype::Float16, dtype::BFloat16}) {
            HostTensor t = from_bytes(from, all.data(), all.size());
            for (DType dt : kDTypes)
                EXPECT_NE(expect_same_bits(*handle, t, dt), "naive") << from.name() << dt.name();
        }
    });
}

TEST_F(X86, TypeCvtFloatPatternsExactly) {
    // Every 65537th pattern walks all exponents and low mantissa bits; the listed values are the
    // edges: NaNs with payloads, infinities, float16's subnormals, overflow and ties, bfloat16's
    // ties, int32's ends.
    std::vector<uint32_t> bits;
    for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 65537)
        bits.push_back(static_cast<uint32_t>(b));
    for (uint32_t b : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u, 0x7fffffffu, 0x7f800000u,
                       0xff800000u, 0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x33000000u,
                       0x33000001u, 0x33800000u, 0x387fc000u, 0x38800000u, 0x477fe000u, 0x477fefffu,
                       0x477ff000u, 0x47800000u, 0x3f808000u, 0x3f818000u, 0x3f808001u, 0x7f7f8000u,
                       0x7f7fffffu, 0x4f000000u, 0xcf000000u, 0x4effffffu, 0xcf000001u,
                       // int8, uint8 and int16's ends and one past them: 127.5, 128, -128.5,
                       // -129, 255.5, 256, 32767.5, 32768, -32768.5, -32769
                       0x42ff0000u, 0x43000000u, 0xc3008000u, 0xc3010000u, 0x437f8000u, 0x43800000u,
                       0x46fffe00u, 0x47000000u, 0xc7000100u, 0xc7000100u, 0xbf000000u})
        bits.push_back(b);
    HostTensor t = from_bytes(dtype::Float32, bits.data(), bits.size());
    at_every_target([&] {
        for (DType dt : kDTypes)
            EXPECT_EQ(expect_same_bits(*handle, t, dt), "hwy") << dt.name();
    });
}

TEST_F(X86, TypeCvtInt32ToFloatRoundsToEven) {
    std::vector<int32_t> v = {std::numeric_limits<int32_t>::min(),
                              std::numeric_limits<int32_t>::max(),
                              16777217,
                              -16777217,
                              16777219,
                              33554435,
                              0,
                              -1,
                              1};
    HostTensor t = from_bytes(dtype::Int32, v.data(), v.size());
    EXPECT_EQ(expect_same_bits(*handle, t, dtype::Float32), "hwy");
}

TEST_F(X86, TypeCvtInt32PatternsExactly) {
    // Every 65537th pattern, and at each magnitude from 2^24 (where float32 stops holding every
    // integer) to 2^31: bfloat16's and float16's ties, a unit on either side, a sticky low bit,
    // bits that only float32 drops, of both signs.
    std::vector<int32_t> v;
    for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 65537)
        v.push_back(static_cast<int32_t>(static_cast<uint32_t>(b)));
    for (int e = 11; e <= 30; ++e)
        for (uint32_t m : {0u, 1u, 0x54u, 0x7fu})
            for (int round_bit :
                 {e - 8, e - 11}) {  // bfloat16 keeps 8 significant bits, float16 11
                int64_t base = (int64_t(1) << e) | (int64_t(m) << (e - 7));
                int64_t tie = base + (int64_t(1) << round_bit);
                for (int64_t x : {tie, tie - 1, tie + 1, tie + 256, tie | 1, base | 0xff, base + 1})
                    if (x <= std::numeric_limits<int32_t>::max()) {
                        v.push_back(static_cast<int32_t>(x));
                        v.push_back(static_cast<int32_t>(-x));
                    }
            }
    for (int32_t x : {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(),
                      65504, 65519, 65520, -65520, 16777217, 16777216 + 65536 + 32768,
                      16777216 + 65536 + 32769, 0x7fff8000, 0x7fff7fff})
        v.push_back(x);
    at_every_target([&] {
        HostTensor t = from_bytes(dtype::Int32, v.data(), v.size());
        for (DType dt : kDTypes)
            EXPECT_EQ(expect_same_bits(*handle, t, dt), dt == dtype::Int32 ? "copy" : "hwy")
                    << dt.name();
        // The narrow integers wrap and convert exactly through int32 lanes: all of their values.
        for (DType from : {dtype::Int8, dtype::Uint8, dtype::Int16}) {
            std::vector<unsigned char> bytes(65536 * 2);
            for (size_t i = 0; i < 65536; ++i)
                std::memcpy(&bytes[i * from.size()], &i, from.size());
            HostTensor small = from_bytes(from, bytes.data(), from.size() == 1 ? 256 : 65536);
            for (DType dt : kDTypes)
                EXPECT_NE(expect_same_bits(*handle, small, dt), "naive")
                        << from.name() << dt.name();
        }
    });
}

TEST_F(X86, TypeCvtBroadcastSourceAndSameDTypeCopy) {
    // A broadcast source row (stride 0) is filled by naive; the result is the same either way.
    Checker<TypeCvt> c(handle.get());
    c.set_param(to(dtype::Float16)).set_dtype(0, dtype::Int32).set_epsilon(0);
    c.exec_layouts({TensorLayout({4, 5}, {0, 1}, dtype::Int32)});
    HostTensor same({5}, dtype::Int16);
    EXPECT_EQ(expect_same_bits(*handle, same, dtype::Int16), "copy");
}
