// The raw host memory under a CPU node's caching allocator (CompNode's RawAlloc/RawFree).
#pragma once

#include <cstddef>

namespace neomeg::host_memory {

// A block of `size` bytes, 64-byte aligned, or nullptr when the system refuses. Blocks of 1 MiB
// and more are mappings of their own (so that freeing one returns it to the system); those of at
// least huge_page_size() start on a huge-page boundary and are advised as huge-page memory.
void* alloc(size_t size);
// Returns a block from alloc; `size` is the size it was asked for.
void free(void* ptr, size_t size);

// The transparent huge page size (2 MiB on x86-64), or 0 where the kernel has none.
size_t huge_page_size();

}  // namespace neomeg::host_memory
