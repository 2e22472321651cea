// MatrixMul and BatchedMatrixMul on the x86 handle (oneDNN matmul; float32 products of at most
// kSmallMatmulWork multiply-adds by a loop of their own) against naive: sizes 1 and primes, every
// transpose pair, padded, transposed, broadcast and reversed views of the operands, padded outputs,
// float32, bfloat16 and float16, and the cases that go to naive (empty products, int16 and int32).
#include "common/matmul_param.h"
#include "neomeg/dnn/operators/linalg.h"
#include "src/x86/small_matmul.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

struct Mnk {
    size_t m, n, k;
};

const Mnk kSizes[] = {{1, 1, 1},   {1, 1, 7},  {7, 1, 1},    {1, 5, 3},    {3, 5, 7},
                      {13, 1, 11}, {2, 17, 1}, {64, 33, 17}, {31, 37, 129}};

// Stored shapes of A and B: a transposed operand is given as (K, M) or (N, K).
TensorShape a_shape(const Mnk& s, bool ta) {
    return ta ? TensorShape{s.k, s.m} : TensorShape{s.m, s.k};
}
TensorShape b_shape(const Mnk& s, bool tb) {
    return tb ? TensorShape{s.n, s.k} : TensorShape{s.k, s.n};
}
TensorShape batched(size_t batch, const TensorShape& s) {
    return {batch, s[0], s[1]};
}

}  // namespace

TEST_F(X86, MatrixMulMatchesNaive) {
    for (bool ta : {false, true})
        for (bool tb : {false, true})
            for (const Mnk& s : kSizes) {
                Checker<MatrixMul> c(handle.get());
                c.set_param(mm_param(ta, tb)).execs({a_shape(s, ta), b_shape(s, tb)});
                // Padded rows and an inner stride of 2 on every operand, then a padded output.
                c.set_noncontiguous(true).execs({a_shape(s, ta), b_shape(s, tb)});
            }
}

TEST_F(X86, MatrixMulRunsOneDnn) {
    std::mt19937 rng(5);
    for (bool ta : {false, true})
        for (bool tb : {false, true})
            for (const Mnk& s : kSizes) {
                HostTensor a(a_shape(s, ta), dtype::Float32), b(b_shape(s, tb), dtype::Float32);
                fill_uniform(a, -1, 1, rng);
                fill_uniform(b, -1, 1, rng);
                // Which oneDNN implementation runs depends on the CPU (gemm:jit on AVX2,
                // brg:avx512_core or AMX elsewhere): the test asserts only that oneDNN ran. The
                // small products' loop sums in double in naive's order: naive's results exactly.
                bool small = s.m * s.n * s.k <= x86::kSmallMatmulWork;
                auto kernel = run_and_compare<MatrixMul>(*handle, mm_param(ta, tb), {a, b}, {},
                                                         small ? 0.0 : 1e-4);
                EXPECT_TRUE(small ? kernel == "loop:small_matmul" : kernel.starts_with("onednn:"))
                        << kernel << " " << s.m << "x" << s.n << "x" << s.k << " ta " << ta
                        << " tb " << tb;
            }
}

// The small loop's vector path (B's and C's columns unit strided) at every Highway target: whole
// vectors of columns and the scalar tail (N of 1, a vector, a vector and one, two vectors and a
// prime), K of 1 and past a cache line, strided A (its transpose) and padded rows of B and C,
// each bit for bit naive's.
TEST_F(X86, SmallMatmulVectorRowsAreNaiveBitForBit) {
#ifdef NEOMEG_WITH_DNNL
    std::mt19937 rng(17);
    const Mnk sizes[] = {{8, 8, 8},  {1, 1, 1},   {3, 9, 5},   {2, 16, 31}, {4, 17, 7},
                         {5, 33, 6}, {1, 64, 16}, {16, 4, 16}, {2, 31, 1}};
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) {
                for (const Mnk& s : sizes) {
                    ASSERT_LE(s.m * s.n * s.k, x86::kSmallMatmulWork);
                    for (bool ta : {false, true}) {
                        HostTensor a(a_shape(s, ta), dtype::Float32);
                        // B and C with padded rows: unit column strides, rows 3 elements apart
                        // further.
                        HostTensor b(
                                TensorLayout({s.k, s.n}, {ptrdiff_t(s.n + 3), 1}, dtype::Float32));
                        fill_uniform(a, -4, 4, rng);
                        fill_uniform(b, -4, 4, rng);
                        EXPECT_EQ(run_and_compare<MatrixMul>(*handle, mm_param(ta, false), {a, b},
                                                             {}, 0.0),
                                  "loop:small_matmul")
                                << s.m << "x" << s.n << "x" << s.k << " ta " << ta;
                    }
                }
            });
    EXPECT_GE(ran, 1u);
#endif
}

TEST_F(X86, MatrixMulStridedViews) {
    Checker<MatrixMul> c(handle.get());
    // A given as the transpose view of a (K, M) buffer, B as a window of wider rows.
    TensorLayout at({5, 4}, dtype::Float32), b({5, 3}, {8, 1}, dtype::Float32);
    c.exec_layouts({at.dimshuffle({1, 0}), b});
    c.set_param(mm_param(true, true))
            .exec_layouts({at, TensorLayout({3, 5}, {1, 3}, dtype::Float32)});
    // A row broadcast over M (stride 0) and B reversed along K: both staged dense.
    c.set_param(mm_param(false, false))
            .exec_layouts({TensorLayout({6, 5}, {0, 1}, dtype::Float32),
                           TensorLayout({5, 3}, {-3, 1}, dtype::Float32)});
}

TEST_F(X86, MatrixMulColumnMajorOutputIsStaged) {
    std::mt19937 rng(9);
    auto op = handle->create_operator<MatrixMul>();
    // Past the small products' loop (16 * 10 * 12 multiply-adds), which takes any strides.
    HostTensor a({16, 12}, dtype::Float32), b({12, 10}, dtype::Float32);
    fill_uniform(a, -1, 1, rng);
    fill_uniform(b, -1, 1, rng);
    // C viewed column-major: oneDNN's fast matmul needs unit-stride rows, so C is staged.
    HostTensor c(TensorLayout({16, 10}, {1, 16}, dtype::Float32));
    std::vector<std::byte> ws(
            op->get_workspace_in_bytes(std::vector<TensorLayout>{a.layout(), b.layout()},
                                       std::vector<TensorLayout>{c.layout()}));
    std::vector<TensorND> in{a.nd(), b.nd()}, out{c.nd()};
    op->exec(in, out, {ws.data(), ws.size()});
    EXPECT_TRUE(ran_onednn(*op)) << last_kernel(*op);
    auto naive = Handle::make_naive()->create_operator<MatrixMul>();
    EXPECT_TRUE(tensors_near(c, run_op(*naive, {a, b})[0], 1e-4));
}

TEST_F(X86, MatrixMulEmptyProductsRunNaive) {
    // M = 0 and N = 0 give empty C; K = 0 gives zeros.
    for (const Mnk& s : {Mnk{0, 3, 4}, Mnk{3, 0, 4}, Mnk{3, 4, 0}}) {
        HostTensor a(a_shape(s, false), dtype::Float32), b(b_shape(s, false), dtype::Float32);
        EXPECT_EQ(run_and_compare<MatrixMul>(*handle, mm_param(false, false), {a, b}), "naive");
    }
}

TEST_F(X86, MatrixMulOtherDtypesRunNaive) {
    std::mt19937 rng(7);
    // int8 operands run the integer GEMM (matrix_mul_int8.cpp tests them).
    for (DType dt : {dtype::Int16, dtype::Int32}) {
        HostTensor a({3, 4}, dt), b({5, 4}, dt);
        fill_uniform(a, -3, 3, rng);
        fill_uniform(b, -3, 3, rng);
        EXPECT_EQ(run_and_compare<MatrixMul>(*handle, mm_param(false, true), {a, b}, {}, 0),
                  "naive")
                << dt.name();
    }
}

// bfloat16 and float16 accumulate in float32 (oneDNN) or double (naive) and round once, so they
// differ by at most a unit in the last place: the Checker's per-dtype tolerance (2e-2 and 2e-3,
// relative).
TEST_F(X86, MatrixMul16BitMatchesNaive) {
    for (DType dt : {dtype::BFloat16, dtype::Float16})
        for (bool ta : {false, true})
            for (bool tb : {false, true})
                for (const Mnk& s : kSizes) {
                    Checker<MatrixMul> c(handle.get());
                    c.set_dtype(0, dt).set_dtype(1, dt).set_param(mm_param(ta, tb));
                    c.execs({a_shape(s, ta), b_shape(s, tb)});
                    c.set_noncontiguous(true).execs({a_shape(s, ta), b_shape(s, tb)});
                }
}

TEST_F(X86, MatrixMul16BitRunsOneDnn) {
    std::mt19937 rng(17);
    for (DType dt : {dtype::BFloat16, dtype::Float16})
        for (bool tb : {false, true}) {
            HostTensor a({31, 129}, dt), b(b_shape({31, 37, 129}, tb), dt);
            fill_uniform(a, -1, 1, rng);
            fill_uniform(b, -1, 1, rng);
            // A CPU without a 16-bit kernel converts around a float32 matmul ("onednn:f32:...");
            // either way oneDNN ran, within the dtype's tolerance of naive.
            auto kernel = run_and_compare<MatrixMul>(*handle, mm_param(false, tb), {a, b}, {},
                                                     default_epsilon(dt));
            EXPECT_TRUE(kernel.starts_with("onednn:")) << dt.name() << " " << kernel;
        }
}

TEST_F(X86, MatrixMul16BitStridedViewsAreStaged) {
    for (DType dt : {dtype::BFloat16, dtype::Float16}) {
        Checker<MatrixMul> c(handle.get());
        // A row broadcast over M (stride 0) and B reversed along K: staged dense as 16-bit.
        c.exec_layouts({TensorLayout({6, 5}, {0, 1}, dt), TensorLayout({5, 3}, {-3, 1}, dt)});
        c.exec_layouts(
                {TensorLayout({5, 4}, dt).dimshuffle({1, 0}), TensorLayout({5, 3}, {8, 1}, dt)});
    }
}

TEST_F(X86, MatrixMulReusesPlansAcrossShapesAndParams) {
    std::mt19937 rng(11);
    auto op = handle->create_operator<MatrixMul>();
    auto naive = Handle::make_naive()->create_operator<MatrixMul>();
    // Alternate shapes and transposes on one operator object, as a reused eager op would.
    for (int round = 0; round < 3; ++round)
        for (const Mnk& s : {Mnk{12, 10, 9}, Mnk{20, 6, 9}, Mnk{12, 10, 9}})  // past the loop
            for (bool ta : {false, true}) {
                op->param() = naive->param() = mm_param(ta, false);
                HostTensor a(a_shape(s, ta), dtype::Float32), b(b_shape(s, false), dtype::Float32);
                fill_uniform(a, -1, 1, rng);
                fill_uniform(b, -1, 1, rng);
                EXPECT_TRUE(tensors_near(run_op(*op, {a, b})[0], run_op(*naive, {a, b})[0], 1e-4));
                EXPECT_TRUE(ran_onednn(*op));
            }
}

TEST_F(X86, SmallMatrixMulStridedViewsEqualNaive) {
    std::mt19937 rng(13);
    // Views the loop reads through their strides: a transposed buffer, padded rows, a broadcast
    // row (stride 0), a reversed K, and a column-major C; results equal naive's exactly.
    struct Case {
        TensorLayout a, b;
        bool ta, tb;
    };
    const Case cases[] = {
            {TensorLayout({5, 4}, dtype::Float32).dimshuffle({1, 0}),
             TensorLayout({5, 3}, {8, 1}, dtype::Float32), false, false},
            {TensorLayout({6, 5}, {0, 1}, dtype::Float32),
             TensorLayout({5, 3}, {-3, 1}, dtype::Float32), false, false},
            {TensorLayout({5, 4}, dtype::Float32), TensorLayout({3, 5}, {1, 3}, dtype::Float32),
             true, true},
    };
    for (const Case& k : cases) {
        HostTensor a(k.a), b(k.b);
        fill_uniform(a, -1, 1, rng);
        fill_uniform(b, -1, 1, rng);
        EXPECT_EQ(run_and_compare<MatrixMul>(*handle, mm_param(k.ta, k.tb), {a, b}, {}, 0.0),
                  "loop:small_matmul");
    }
    auto op = handle->create_operator<MatrixMul>();
    HostTensor a({4, 6}, dtype::Float32), b({6, 5}, dtype::Float32);
    fill_uniform(a, -1, 1, rng);
    fill_uniform(b, -1, 1, rng);
    HostTensor c(TensorLayout({4, 5}, {1, 4}, dtype::Float32));
    std::vector<TensorND> in{a.nd(), b.nd()}, out{c.nd()};
    op->exec(in, out, {});
    EXPECT_EQ(last_kernel(*op), std::string("loop:small_matmul"));
    auto naive = Handle::make_naive()->create_operator<MatrixMul>();
    EXPECT_TRUE(tensors_near(c, run_op(*naive, {a, b})[0], 0.0));
}

TEST_F(X86, BatchedMatrixMulMatchesNaive) {
    for (bool ta : {false, true})
        for (bool tb : {false, true})
            for (size_t batch : {1, 3, 7})
                for (const Mnk& s : {Mnk{1, 1, 1}, Mnk{3, 5, 7}, Mnk{13, 1, 11}, Mnk{16, 17, 33}}) {
                    Checker<BatchedMatrixMul> c(handle.get());
                    TensorShape as = batched(batch, a_shape(s, ta)),
                                bs = batched(batch, b_shape(s, tb));
                    c.set_param(mm_param(ta, tb)).execs({as, bs});
                    c.set_noncontiguous(true).execs({as, bs});
                }
}

TEST_F(X86, BatchedMatrixMul16BitMatchesNaive) {
    for (DType dt : {dtype::BFloat16, dtype::Float16})
        for (bool ta : {false, true})
            for (const Mnk& s : {Mnk{1, 1, 1}, Mnk{3, 5, 7}, Mnk{16, 17, 33}}) {
                Checker<BatchedMatrixMul> c(handle.get());
                TensorShape as = batched(3, a_shape(s, ta)), bs = batched(3, b_shape(s, true));
                c.set_dtype(0, dt).set_dtype(1, dt).set_param(mm_param(ta, true));
                c.execs({as, bs});
                c.set_noncontiguous(true).execs({as, bs});
            }
}

TEST_F(X86, BatchedMatrixMulStridedViews) {
    for (bool ta : {false, true}) {
        Checker<BatchedMatrixMul> c(handle.get());
        c.set_param(mm_param(ta, false));
        // Batch as the innermost axis of the buffer (a dimshuffled view) times a broadcast B.
        TensorLayout buf = ta ? TensorLayout({5, 4, 3}, dtype::Float32)
                              : TensorLayout({4, 5, 3}, dtype::Float32);
        c.exec_layouts(
                {buf.dimshuffle({2, 0, 1}), TensorLayout({3, 5, 6}, {0, 6, 1}, dtype::Float32)});
        // Padded batches and rows.
        c.exec_layouts({TensorLayout({3, 4, 4}, {20, 5, 1}, dtype::Float32),
                        TensorLayout({3, 4, 6}, dtype::Float32)});
    }
}

TEST_F(X86, BatchedMatrixMulRunsOneDnnAndEmptyBatchRunsNaive) {
    std::mt19937 rng(13);
    HostTensor a({4, 5, 6}, dtype::Float32), b({4, 5, 7}, dtype::Float32);
    fill_uniform(a, -1, 1, rng);
    fill_uniform(b, -1, 1, rng);
    EXPECT_TRUE(run_and_compare<BatchedMatrixMul>(*handle, mm_param(true, false), {a, b})
                        .starts_with("onednn:"));
    HostTensor ea({0, 5, 6}, dtype::Float32), eb({0, 6, 7}, dtype::Float32);
    EXPECT_EQ(run_and_compare<BatchedMatrixMul>(*handle, mm_param(false, false), {ea, eb}),
              "naive");
}

// Operands stored K-major (A given transposed, B not) whose row pitch is a multiple of 128
// floats, and a transposed B of few columns at a pitch of a multiple of 1024: on AVX2 the plan
// copies them into a padded pitch first where the other dim is large enough (matrix_mul.cpp,
// padded_operand). Pitches on each side of every threshold of those rules,
// as dense operands and as windows of wider rows (the pitch the caller's view has), plain and
// batched: naive's results from a oneDNN plan whatever the CPU chose.
template <class Op>
void expect_onednn_matches_naive(Handle& handle, std::mt19937& rng, bool ta, bool tb,
                                 const TensorLayout& a, const TensorLayout& b) {
    HostTensor ha(a), hb(b);
    fill_uniform(ha, -1, 1, rng);
    fill_uniform(hb, -1, 1, rng);
    std::string kernel = run_and_compare<Op>(handle, mm_param(ta, tb), {ha, hb}, {}, 1e-4);
    EXPECT_TRUE(kernel.starts_with("onednn:"))
            << kernel << " " << a.to_string() << " x " << b.to_string();
}

TEST_F(X86, MatrixMulOperandsWithAPowerOfTwoPitchMatchNaive) {
    std::mt19937 rng(23);
    auto check = [&](auto* op, bool ta, bool tb, const TensorLayout& a, const TensorLayout& b) {
        using Op = std::remove_pointer_t<decltype(op)>;
        expect_onednn_matches_naive<Op>(*handle, rng, ta, tb, a, b);
    };
    // B's pitch is N, transposed A's is M; the other dim (M for B, N for A) crosses 8, 32, 256.
    const Mnk cases[] = {{8, 1024, 24},  {7, 1024, 24},  {32, 512, 33}, {31, 512, 33},
                         {256, 256, 17}, {255, 256, 17}, {256, 384, 5}, {8, 1536, 9},
                         {1024, 8, 19},  {512, 32, 21},  {256, 256, 2}, {1024, 1024, 1},
                         {512, 3, 1024}, {511, 3, 1024}, {600, 2, 2048}};
    for (const Mnk& s : cases)
        for (bool ta : {false, true})
            for (bool tb : {false, true})
                check((MatrixMul*)nullptr, ta, tb, TensorLayout(a_shape(s, ta), dtype::Float32),
                      TensorLayout(b_shape(s, tb), dtype::Float32));
    // Windows: a (K, 1000) B inside rows of 1024, a transposed (K, 300) A inside rows of 512.
    check((MatrixMul*)nullptr, false, false, TensorLayout({40, 29}, dtype::Float32),
          TensorLayout({29, 1000}, {1024, 1}, dtype::Float32));
    check((MatrixMul*)nullptr, true, false, TensorLayout({29, 300}, {512, 1}, dtype::Float32),
          TensorLayout({29, 40}, dtype::Float32));
    // Batched: B's matrices with pitch 512, batches padded apart; a transposed A of pitch 1024.
    check((BatchedMatrixMul*)nullptr, false, false, TensorLayout({3, 40, 13}, dtype::Float32),
          TensorLayout({3, 13, 512}, {13 * 512 + 64, 512, 1}, dtype::Float32));
    check((BatchedMatrixMul*)nullptr, true, false, TensorLayout({2, 19, 1024}, dtype::Float32),
          TensorLayout({2, 19, 10}, dtype::Float32));
}
