// A 1x1 filter gradient out of oneDNN's blocked weights (OIhw16i16o, OIhw8i8o: square blocks of
// input by output channels, output channels innermost) into the caller's plain OIHW. oneDNN 2.6
// runs that reorder as its generic `jit:uni` kernel: 2.8 ms for ResNet-50's 2048->512 gradient on
// Zen 4 (one thread), a tenth of the convolution, where these loops take 0.3 ms (the opposite
// direction, plain to blocked, has the fast `jit:blk`, 0.5 ms). Each block is read in place and
// written as rows of the plain matrix; above one OpenMP thread, rows of output-channel blocks are
// split across threads (parallel_ranges' grain: from 2^17 floats, e.g. 512 x 512): at two threads
// a 512 x 512 gradient both threads wrote took 0.077 ms on one, 0.040 split (in a 1.3 ms call).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <optional>

namespace neomeg::dnn::x86 {

class BlockTranspose {
public:
    // The copy from `from`, float32 weights of dims (O, I, 1...) in square blocks b x b (b = 8 or
    // 16, I outer and O inner within a block, blocks ordered O-major, O and I multiples of b), to
    // `to`, the same dims dense row-major; nullopt for anything else.
    static std::optional<BlockTranspose> plan(const dnnl::memory::desc& from,
                                              const dnnl::memory::desc& to);

    void run(const void* from, void* to) const;

private:
    int64_t m_o = 0, m_i = 0, m_block = 0;
};

}  // namespace neomeg::dnn::x86
