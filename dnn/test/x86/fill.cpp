// Fill on the x86 handle against naive: every dtype at sizes 0, 1, primes and above the threading
// grain (the loop), and the padded dst that goes to naive; the vector fill itself at every start
// offset within a vector, every length around the unrolled loop and every Highway target.
#include <cstdint>
#include <vector>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "src/x86/fill_hwy.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::Fill fill(float value, DType dt) {
    param::Fill p;
    p.value = value;
    p.dtype = dt.enumv();
    return p;
}

}  // namespace

TEST_F(X86, FillMatchesNaive) {
    for (float v : {0.0f, 1.0f, -2.5f, 3.0e38f})
        for (const TensorShape& s : {TensorShape{0}, TensorShape{1}, TensorShape{7},
                                     TensorShape{13, 17}, TensorShape{3, 100003}}) {
            Checker<Fill> c(handle.get());
            c.set_param(fill(v, dtype::Float32)).set_output_shapes({s}).set_epsilon(0).execs({});
        }
    auto op = handle->create_operator<Fill>();
    op->param() = fill(4.f, dtype::Float32);
    HostTensor dst({5, 3}, dtype::Float32);
    TensorND out = dst.nd();
    op->exec({}, {&out, 1}, {});
    EXPECT_EQ(dst.values(), std::vector<double>(15, 4.0));
    EXPECT_EQ(last_kernel(*op), "loop");
}

TEST_F(X86, FillEveryDtypeMatchesNaive) {
    // Values that round (float16, bfloat16), truncate (integers) or are nonzero (bool).
    for (DType dt : {dtype::Float16, dtype::BFloat16, dtype::Int8, dtype::Uint8, dtype::Int16,
                     dtype::Int32, dtype::Bool})
        for (float v : {0.0f, 3.0f, 2.7f, 100.3f})
            for (const TensorShape& s :
                 {TensorShape{0}, TensorShape{1}, TensorShape{6, 11}, TensorShape{3, 100003}}) {
                Checker<Fill> c(handle.get());
                c.set_param(fill(v, dt)).set_output_shapes({s}).set_epsilon(0).execs({});
            }
    auto op = handle->create_operator<Fill>();
    op->param() = fill(-7.9f, dtype::Int32);
    HostTensor dst({4, 5}, dtype::Int32);
    TensorND out = dst.nd();
    op->exec({}, {&out, 1}, {});
    EXPECT_EQ(dst.values(), std::vector<double>(20, -7.0));
    EXPECT_EQ(last_kernel(*op), "loop");
}

TEST_F(X86, FillPaddedDstRunsNaive) {
    Checker<Fill> c(handle.get());
    c.set_param(fill(2.f, dtype::Float32)).set_output_shapes({{5, 7}}).set_epsilon(0);
    c.set_noncontiguous(true).execs({});
}

// fill_elements writes exactly [dst, dst + bytes) with the value's bytes in order, whatever the
// start's offset from a vector boundary (head, stores, tail) and the element size.
TEST_F(X86, FillElementsAtEachOffsetAndTarget) {
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) {
                for (size_t elem : {1, 2, 4, 8, 16}) {
                    std::vector<uint8_t> value(elem);
                    for (size_t j = 0; j < elem; ++j)
                        value[j] = static_cast<uint8_t>(0x11 * (j + 1));
                    for (size_t first = 0; first * elem <= 80; ++first)
                        for (size_t count :
                             {0, 1, 2, 3, 5, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1031}) {
                            const size_t guard = 64, bytes = count * elem;
                            // 64-byte aligned, then `first` elements in: every offset within a
                            // vector.
                            std::vector<uint64_t> storage(
                                    (guard + first * elem + bytes + guard) / 8 + 16);
                            auto* base = reinterpret_cast<uint8_t*>(storage.data());
                            base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
                            const size_t total = guard + first * elem + bytes + guard;
                            std::fill_n(base, total, uint8_t(0xAB));
                            uint8_t* dst = base + guard + first * elem;
                            x86::fill_elements(dst, value.data(), elem, bytes);
                            for (size_t b = 0; b < total; ++b) {
                                const uint8_t* p = base + b;
                                const bool inside = p >= dst && p < dst + bytes;
                                const uint8_t want =
                                        inside ? value[(p - dst) % elem] : uint8_t(0xAB);
                                ASSERT_EQ(*p, want) << "elem " << elem << " first " << first
                                                    << " count " << count << " byte " << (p - dst);
                            }
                        }
                }
            });
    EXPECT_GE(ran, 1u);
}
