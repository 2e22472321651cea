// Copies that bypass the caches: non-temporal stores (Highway's Stream, the instruction set chosen
// at run time), for writers of data too large to stay cached, where a plain store would first read
// every line it writes; and plain vector copies that never become rep movsb.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// A dst at least this large is written with non-temporal stores (a transpose's, a pooling or
// GroupNorm gradient's, a GroupNorm output's): it would not stay in the caches anyway, and a plain
// store first reads the line it writes into, a third more memory traffic.
inline constexpr size_t kStreamBytes = size_t(8) << 20;

// Copies n bytes from src to dst (not overlapping) with vector loads and stores. glibc's memcpy
// turns copies above 2 KiB into rep movsb, which on AMD Zen 4 ran a roll's row runs (dst 12 bytes
// past src's offset in its page) 6x slower than this loop: a copy into a run that starts at another
// offset than its source should come here.
void copy_bytes(void* dst, const void* src, size_t n);

// Copies n bytes from src to dst, non-temporally where dst is aligned to the vector size; the
// stores are weakly ordered until stream_fence().
void stream_bytes(void* dst, const void* src, size_t n);

// Orders this thread's non-temporal stores before its later stores (an sfence).
void stream_fence();

}  // namespace neomeg::dnn::x86
