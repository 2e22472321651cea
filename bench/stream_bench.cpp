// The C++ half of bench/stream.py: the bandwidth of the x86 handle's elementwise and reduce
// kernels on large float32 tensors, against a STREAM triad (a = b + s * c) run in the same process
// on the same OpenMP threads, the cases interleaved. Bytes are counted as STREAM does (each array
// read or written once, no write-allocate traffic), so the ratios compare like with like. Prints
// one JSON line per case.
//
//   neomeg_stream_bench [elements (16M)] [repetitions (10)]   (threads: OMP_NUM_THREADS)
#include <omp.h>

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/operators/indexing.h"
#include "neomeg/dnn/operators/reduce.h"
#include "neomeg/dnn/operators/tensor_basic.h"
#include "neomeg/dnn/operators/tensor_shape.h"

using namespace neomeg::dnn;

namespace {

struct Timing {
    double best = 0, median = 0;
};

struct Case {
    const char* name;
    size_t bytes;
    std::function<void()> run;
    std::vector<double> seconds;
};

// Times every case `reps` times after one warm-up call each, the cases interleaved (one call of
// each per repetition), so that a change in the machine's load reaches all of them alike.
void time_all(std::vector<Case>& cases, int reps) {
    for (auto& c : cases)
        c.run();
    for (int r = 0; r < reps; ++r)
        for (auto& c : cases) {
            auto start = std::chrono::steady_clock::now();
            c.run();
            c.seconds.push_back(
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                            .count());
        }
}

Timing timing_of(std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return {t.front(), t[t.size() / 2]};
}

// A float array first touched by the threads that will stream it (static schedule), as STREAM
// initialises its arrays. Placed as the framework's host allocator places a tensor's block
// (src/core/host_memory.cpp): from 2 MiB on, aligned to 2 MiB and advised to take transparent huge
// pages. On 4 KiB pages a 4096 x 4096 transpose, whose every dst line of a band lies on a page of
// its own, measured the TLB more than the kernel.
struct Array {
    explicit Array(size_t n, float v) : n(n) {
        constexpr size_t kHuge = size_t(2) << 20;
        const size_t align = n * sizeof(float) >= kHuge ? kHuge : 4096;
        const size_t bytes = (n * sizeof(float) + align - 1) / align * align;
        p = static_cast<float*>(std::aligned_alloc(align, bytes));
        if (align == kHuge)
            ::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: small pages where THP is off
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; ++i)
            p[i] = v + static_cast<float>(i % 7) * 0.25f;
    }
    ~Array() {
        std::free(p);
    }
    Array(const Array&) = delete;
    Array& operator=(const Array&) = delete;
    float* p;
    size_t n;
};

// STREAM's Copy (a = b): the bandwidth of a plain copy, the bound of Padding's and the embedding's
// data movement.
void copy(float* a, const float* b, size_t n) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; ++i)
        a[i] = b[i];
}

void triad(float* a, const float* b, const float* c, float s, size_t n) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; ++i)
        a[i] = b[i] + s * c[i];
}

void report(const char* name, size_t bytes, Timing t) {
    std::printf(
            "{\"case\": \"%s\", \"bytes\": %zu, \"best_s\": %.6g, \"median_s\": %.6g, "
            "\"best_gbs\": %.4g, \"median_gbs\": %.4g}\n",
            name, bytes, t.best, t.median, bytes / t.best / 1e9, bytes / t.median / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
    size_t n = argc > 1 ? std::stoull(argv[1]) : size_t(1) << 24;
    int reps = argc > 2 ? std::stoi(argv[2]) : 10;
    Array a(n, 1.0f), b(n, 0.5f), c(n, -0.25f), out(n, 0.0f);
    float sum = 0;

    auto handle = Handle::make_x86();
    TensorLayout vec({n}, dtype::Float32), scalar({1}, dtype::Float32);
    const auto elemwise = [&](param::Elemwise::Mode mode, std::vector<TensorND> in) {
        auto op = handle->create_operator<Elemwise>();
        op->param().mode = mode;
        TensorND dst(out.p, vec);
        return [op = std::shared_ptr<Elemwise>(std::move(op)), in, dst] {
            op->exec(in, std::span(&dst, 1));
        };
    };
    auto reduce_op = handle->create_operator<Reduce>();
    reduce_op->param().mode = param::Reduce::Mode::SUM;
    reduce_op->param().axis = 0;
    TensorND rsrc(a.p, vec), rdst(&sum, scalar);
    // float32 -> float16 into out's storage, and a square transpose of a into out.
    auto cvt_op = handle->create_operator<TypeCvt>();
    cvt_op->param().dtype = DTypeEnum::Float16;
    TensorND csrc(b.p, vec), cdst(out.p, TensorLayout({n}, dtype::Float16));
    // The 16-bit floats of b, the sources of the widening conversions.
    Array half(n / 2 + 1, 0.0f), bhalf(n / 2 + 1, 0.0f);
    auto bf16_op = handle->create_operator<TypeCvt>();
    bf16_op->param().dtype = DTypeEnum::BFloat16;
    auto f32_op = handle->create_operator<TypeCvt>();
    f32_op->param().dtype = DTypeEnum::Float32;
    TensorND hsrc(half.p, TensorLayout({n}, dtype::Float16)),
            bsrc(bhalf.p, TensorLayout({n}, dtype::BFloat16)), fdst(out.p, vec),
            bdst(out.p, TensorLayout({n}, dtype::BFloat16));
    cvt_op->exec(std::span(&csrc, 1), std::span(&hsrc, 1));
    bf16_op->exec(std::span(&csrc, 1), std::span(&bsrc, 1));
    size_t side = 1;
    while ((side * 2) * (side * 2) <= n)
        side *= 2;
    auto relayout_op = handle->create_operator<Relayout>();
    TensorND tsrc(a.p, TensorLayout({side, side}, dtype::Float32).dimshuffle({1, 0})),
            tdst(out.p, TensorLayout({side, side}, dtype::Float32));
    // NCHW -> NHWC and back on as many 64-channel 64x64 images as fit in n elements (a batched
    // transpose of (C, HW) matrices); with fewer elements than one image these cases are left out,
    // since the buffers hold only n.
    const size_t image = 64 * 64 * 64, images = n / image;
    TensorLayout nchw({std::max<size_t>(images, 1), 64, 64, 64}, dtype::Float32),
            nhwc = TensorLayout({std::max<size_t>(images, 1), 64, 64, 64}, dtype::Float32)
                           .dimshuffle({0, 3, 1, 2});
    TensorND to_nhwc_src(b.p, nchw), to_nhwc_dst(out.p, nhwc), to_nchw_src(b.p, nhwc),
            to_nchw_dst(out.p, nchw);

    // In-cache transposes, where the copy is not bandwidth-bound: a 256 x 256 float32 matrix and a
    // ResNet layer's NCHW (64, 56 x 56) into NHWC (float32, float16 and int8), each run 20 times
    // per timed call.
    TensorND t256_src(a.p, TensorLayout({256, 256}, dtype::Float32).dimshuffle({1, 0})),
            t256_dst(out.p, TensorLayout({256, 256}, dtype::Float32)),
            t64_src(a.p, TensorLayout({64, 3136}, dtype::Float32)),
            t64_dst(out.p, TensorLayout({3136, 64}, dtype::Float32).dimshuffle({1, 0})),
            // The same NCHW -> NHWC in float16 and int8 (the float16 copy of b's bytes as src).
            h64_src(half.p, TensorLayout({64, 3136}, dtype::Float16)),
            h64_dst(out.p, TensorLayout({3136, 64}, dtype::Float16).dimshuffle({1, 0})),
            b64_src(half.p, TensorLayout({64, 3136}, dtype::Int8)),
            b64_dst(out.p, TensorLayout({3136, 64}, dtype::Int8).dimshuffle({1, 0}));
    const auto small = [&](TensorND& src, TensorND& dst) {
        return [&] {
            for (int i = 0; i < 20; ++i)
                relayout_op->exec(std::span(&src, 1), std::span(&dst, 1));
        };
    };

    // F.pad of 64-channel 28 x 28 images by one pixel (CONSTANT mode), as many as the padded
    // images fit in n elements, and F.embedding of a 2048 x 32 table by n / 32 indices: both
    // only move bytes, so they are measured against copy.
    const size_t pads = n / (64 * 30 * 30);
    auto pad_op = handle->create_operator<Padding>();
    pad_op->param().front_offsets = {0, 0, 1, 1};
    pad_op->param().back_offsets = {0, 0, 1, 1};
    TensorND pad_src(b.p, TensorLayout({std::max<size_t>(pads, 1), 64, 28, 28}, dtype::Float32)),
            pad_dst(out.p, TensorLayout({std::max<size_t>(pads, 1), 64, 30, 30}, dtype::Float32));
    const size_t lookups = n / 32;
    Array index(lookups + 1, 0.0f);
    for (size_t i = 0; i < lookups; ++i)
        reinterpret_cast<int32_t*>(index.p)[i] = static_cast<int32_t>((i * 2654435761u) % 2048);
    auto emb_op = handle->create_operator<IndexingMultiAxisVec>();
    emb_op->param().axes = {0};
    TensorND emb_in[] = {TensorND(a.p, TensorLayout({2048, 32}, dtype::Float32)),
                         TensorND(index.p,
                                  TensorLayout({std::max<size_t>(lookups, 1)}, dtype::Int32))},
             emb_dst(out.p, TensorLayout({std::max<size_t>(lookups, 1), 32}, dtype::Float32));

    std::printf("{\"threads\": %d, \"elements\": %zu}\n", omp_get_max_threads(), n);
    using M = param::Elemwise::Mode;
    std::vector<Case> cases = {
            {"triad", 12 * n, [&] { triad(a.p, b.p, c.p, 3.0f, n); }, {}},
            {"copy", 8 * n, [&] { copy(out.p, b.p, n); }, {}},
            {"add", 12 * n, elemwise(M::ADD, {{b.p, vec}, {c.p, vec}}), {}},
            {"mul", 12 * n, elemwise(M::MUL, {{b.p, vec}, {c.p, vec}}), {}},
            {"relu", 8 * n, elemwise(M::RELU, {{b.p, vec}}), {}},
            {"exp", 8 * n, elemwise(M::EXP, {{c.p, vec}}), {}},
            {"reduce_sum",
             4 * n,
             [&] { reduce_op->exec(std::span(&rsrc, 1), std::span(&rdst, 1)); },
             {}},
            {"cvt_f16", 6 * n, [&] { cvt_op->exec(std::span(&csrc, 1), std::span(&cdst, 1)); }, {}},
            {"cvt_bf16",
             6 * n,
             [&] { bf16_op->exec(std::span(&csrc, 1), std::span(&bdst, 1)); },
             {}},
            {"f16_to_f32",
             6 * n,
             [&] { f32_op->exec(std::span(&hsrc, 1), std::span(&fdst, 1)); },
             {}},
            {"bf16_to_f32",
             6 * n,
             [&] { f32_op->exec(std::span(&bsrc, 1), std::span(&fdst, 1)); },
             {}},
            {"transpose",
             8 * side * side,
             [&] { relayout_op->exec(std::span(&tsrc, 1), std::span(&tdst, 1)); },
             {}},
    };
    if (images > 0) {
        cases.push_back(
                {"nchw_to_nhwc",
                 8 * images * image,
                 [&] { relayout_op->exec(std::span(&to_nhwc_src, 1), std::span(&to_nhwc_dst, 1)); },
                 {}});
        cases.push_back(
                {"nhwc_to_nchw",
                 8 * images * image,
                 [&] { relayout_op->exec(std::span(&to_nchw_src, 1), std::span(&to_nchw_dst, 1)); },
                 {}});
    }
    if (n >= 64 * 4096) {
        cases.push_back({"t256x256", 20 * 8 * 256 * 256, small(t256_src, t256_dst), {}});
        cases.push_back({"t64x3136", 20 * 8 * 64 * 3136, small(t64_src, t64_dst), {}});
        cases.push_back({"t64x3136_f16", 20 * 4 * 64 * 3136, small(h64_src, h64_dst), {}});
        cases.push_back({"t64x3136_i8", 20 * 2 * 64 * 3136, small(b64_src, b64_dst), {}});
    }
    if (pads > 0)
        cases.push_back({"pad_constant",
                         4 * pads * 64 * (28 * 28 + 30 * 30),
                         [&] { pad_op->exec(std::span(&pad_src, 1), std::span(&pad_dst, 1)); },
                         {}});
    if (n >= 2048 * 32)  // the table is read from a
        cases.push_back({"embedding",
                         4 * lookups * 33,
                         [&] { emb_op->exec(emb_in, std::span(&emb_dst, 1)); },
                         {}});
    time_all(cases, reps);
    for (auto& each : cases)
        report(each.name, each.bytes, timing_of(each.seconds));
    return 0;
}
