// Copies that bypass the caches: non-temporal stores (Highway's Stream, the instruction set chosen
// at run time), for writers of data too large to stay cached, where a plain store would first read
// every line it writes.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// Copies n bytes from src to dst, non-temporally where dst is aligned to the vector size; the
// stores are weakly ordered until stream_fence().
void stream_bytes(void* dst, const void* src, size_t n);

// Orders this thread's non-temporal stores before its later stores (an sfence).
void stream_fence();

}  // namespace neomeg::dnn::x86
