// FakeQuant, TQT, LSQ and their gradients on the x86 handle against naive, bit for bit: scalar,
// per-channel (NCHW and channels-last) and per-element scales and zero points, values that round
// at halves, clip at both ends, NaN and infinities, ranges of one value and of qmax 0, rows of
// one element and of many vectors plus a tail, padded inputs and outputs (the scalar path),
// large tensors (the OpenMP split), empty tensors, and float16 (naive's kernel).
#include <cmath>
#include <limits>

#include "neomeg/dnn/operators/quantization.h"
#include "x86/vision_loops.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// src values: random, exact halves of the step, far out of range and special values.
std::vector<double> src_values(size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<double> u(-40, 40);
    std::vector<double> v(n);
    const double special[] = {std::numeric_limits<double>::quiet_NaN(),
                              std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity(),
                              1e30,
                              -1e30,
                              0.0,
                              -0.0};
    for (size_t i = 0; i < n; ++i) {
        v[i] = u(rng);
        if (i % 5 == 1)
            v[i] = std::round(v[i]) * 0.25 + 0.125;  // a half step of scale 0.25
        if (i % 17 == 3)
            v[i] = special[(i / 17) % 7];
    }
    return v;
}

param::FakeQuant range(int qmin, int qmax) {
    param::FakeQuant p;
    p.qmin = qmin;
    p.qmax = qmax;
    return p;
}

struct Shapes {
    TensorShape src, param;
};

}  // namespace

TEST_F(X86, FakeQuantFamilyMatchesNaiveBits) {
    std::mt19937 rng(19);
    const std::vector<Shapes> shapes = {{{2, 3, 5, 7}, {1}}, {{2, 3, 5, 7}, {1, 3, 1, 1}},
                                        {{2, 5, 7, 3}, {3}}, {{2, 3, 5, 7}, {2, 3, 5, 7}},
                                        {{4, 37}, {4, 1}},   {{1}, {1}},
                                        {{3, 1000}, {1, 1}}, {{2, 3, 1, 1}, {1, 3, 1, 1}}};
    for (auto p : {range(-128, 127), range(0, 255), range(-8, 0), range(3, 3)})
        for (bool padded : {false, true})
            for (const Shapes& s : shapes) {
                size_t n = s.src.total_nr_elems(), np = s.param.total_nr_elems();
                HostTensor x = make_tensor(s.src, padded, rng, src_values(n, rng));
                HostTensor dy = make_tensor(s.src, padded, rng);
                // scale from 0.125 to 2 (one exact 0.25), zero points whole, grad_scale any.
                HostTensor scale = make_tensor(s.param, padded, rng, {}, 0.125, 2);
                if (np == 1)
                    scale.set_values({0.25});
                HostTensor log2 = make_tensor(s.param, padded, rng, {}, -3, 1);
                std::vector<double> zp(np);
                for (size_t i = 0; i < np; ++i)
                    zp[i] = static_cast<double>(static_cast<int>(i % 5) - 2);
                HostTensor zero = make_tensor(s.param, padded, rng, zp);
                HostTensor gs = make_tensor(s.param, padded, rng);
                expect_naive_bits<FakeQuant>(*handle, p, {x, scale, zero});
                expect_naive_bits<FakeQuantBackward>(*handle, p, {dy, x, scale, zero});
                expect_naive_bits<TQT>(*handle, p, {x, log2});
                expect_naive_bits<TQTBackward>(*handle, p, {dy, x, log2});
                expect_naive_bits<LSQ>(*handle, p, {x, scale, zero, gs});
                expect_naive_bits<LSQBackward>(*handle, p, {dy, x, scale, zero, gs});
            }
}

TEST_F(X86, FakeQuantLargeEmptyAndFloat16) {
    std::mt19937 rng(23);
    TensorShape src{8, 64, 33, 31}, ch{1, 64, 1, 1};
    HostTensor x = make_tensor(src, false, rng, src_values(src.total_nr_elems(), rng));
    HostTensor dy = make_tensor(src, false, rng);
    HostTensor scale = make_tensor(ch, false, rng, {}, 0.1, 1);
    HostTensor zero = make_tensor(ch, false, rng, std::vector<double>(64, 1.0));
    HostTensor gs = make_tensor({1}, false, rng, {0.01});
    auto p = range(-128, 127);
    expect_naive_bits<FakeQuant>(*handle, p, {x, scale, zero});
    expect_naive_bits<TQTBackward>(*handle, p, {dy, x, scale});
    expect_naive_bits<LSQBackward>(*handle, p, {dy, x, scale, zero, gs});

    HostTensor empty({0, 4}, dtype::Float32), one = make_tensor({1}, false, rng, {0.5});
    expect_naive_bits<FakeQuant>(*handle, p, {empty, one, one});
    expect_naive_bits<LSQBackward>(*handle, p, {empty, empty, one, one, one});

    HostTensor h16 = make_tensor({3, 4}, false, rng, {}, -3, 3, dtype::Float16);
    HostTensor s16 = make_tensor({1}, false, rng, {0.5}, 0, 0, dtype::Float16);
    expect_naive_bits<FakeQuant>(*handle, p, {h16, s16, s16}, {}, "naive");
}
