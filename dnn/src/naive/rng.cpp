// Naive generators over Philox4x32-10 (src/common/philox.h). Element i is the i-th element of dst
// in logical row-major order, whatever dst's strides.
#include <algorithm>
#include <numeric>

#include "neomeg/dnn/operators/random.h"
#include "src/common/philox.h"
#include "src/naive/handle.h"
#include "src/naive/norm_access.h"

namespace neomeg::dnn::naive {
namespace {

// Significand bits of a float dtype: more random bits than that would round up to 1.
int significand_bits(DType dt) {
    switch (dt.enumv()) {
        case DTypeEnum::Float16:
            return 11;
        case DTypeEnum::BFloat16:
            return 8;
        default:
            return 24;
    }
}

class UniformRNGImpl final : public UniformRNG {
public:
    using UniformRNG::UniformRNG;
    void do_exec(std::span<const TensorND>, std::span<const TensorND> out, Workspace) override {
        auto d = offsets_of(out[0].layout);
        int bits = significand_bits(out[0].layout.dtype);
        for (size_t i = 0; i < d.size(); ++i)
            store(out[0], d[i], philox::unit_interval(philox::bits_at(m_param.seed, i), bits));
    }
};

class GaussianRNGImpl final : public GaussianRNG {
public:
    using GaussianRNG::GaussianRNG;
    void do_exec(std::span<const TensorND>, std::span<const TensorND> out, Workspace) override {
        auto d = offsets_of(out[0].layout);
        for (size_t i = 0; i < d.size(); ++i)
            store(out[0], d[i],
                  double(m_param.mean) +
                          double(m_param.std) * double(philox::gaussian_at(m_param.seed, i)));
    }
};

// Sorts 0..n-1 by a 64-bit Philox key per index (ties by index): a permutation that depends only
// on (seed, n), and that a parallel sort by key reproduces.
class PermutationRNGImpl final : public PermutationRNG {
public:
    using PermutationRNG::PermutationRNG;
    void do_exec(std::span<const TensorND>, std::span<const TensorND> out, Workspace) override {
        auto d = offsets_of(out[0].layout);
        size_t n = d.size();
        std::vector<uint64_t> key(n);
        for (size_t i = 0; i < n; ++i)
            key[i] = (uint64_t(philox::bits_at(m_param.seed, 2 * i)) << 32) |
                     philox::bits_at(m_param.seed, 2 * i + 1);
        std::vector<size_t> perm(n);
        std::iota(perm.begin(), perm.end(), size_t(0));
        std::sort(perm.begin(), perm.end(),
                  [&](size_t a, size_t b) { return key[a] != key[b] ? key[a] < key[b] : a < b; });
        for (size_t j = 0; j < n; ++j)
            store(out[0], d[j], double(perm[j]));
    }
};

}  // namespace
NM_REGISTER_NAIVE(UniformRNG, UniformRNGImpl);
NM_REGISTER_NAIVE(GaussianRNG, GaussianRNGImpl);
NM_REGISTER_NAIVE(PermutationRNG, PermutationRNGImpl);
}  // namespace neomeg::dnn::naive
