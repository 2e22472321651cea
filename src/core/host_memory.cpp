#include "host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>

#include "neomeg/core/caching_allocator.h"

namespace neomeg::host_memory {
namespace {

// Blocks of 1 MiB and more are mapped pages of their own, so that giving them back (empty_cache)
// returns them to the system. glibc serves a request below its mmap threshold from its heap, and
// raises that threshold (up to 32 MiB) to the size of each mapped chunk freed, so most tensor-sized
// blocks ended up in its heap, whose freed pages it keeps: after a trace's recording emptied the
// cache, the compiled graph's arena still came on top of them (BERT-mini: 270 MiB more resident).
constexpr size_t kMappedBlock = size_t(1) << 20;

// Blocks of a huge page and more are aligned to one and advised as huge-page memory. An op over
// (1024, 2048) float32 tensors touches 2048 small pages per operand, past the second-level TLB,
// and in a virtual machine each miss walks two page tables. NumPy advises its arrays of 4 MiB and
// more the same way, and glibc's heap keeps the advice after they are freed, so PyTorch's tensors
// (allocated in that heap) often sat on huge pages where ours, mapped apart, never did
// (docs/architecture.md, "Huge pages for large host blocks").
size_t read_huge_page_size() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
    size_t n = 0;
    if (!(f >> n) || n == 0 || (n & (n - 1)) != 0)
        return 0;
    return n;
}

void* map(size_t size) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

// A mapping of `size` bytes starting on an `align` boundary: `align` more are mapped, and the
// parts before the boundary and past the block are unmapped again, so the block is exactly the
// mapping free() unmaps.
void* map_aligned(size_t size, size_t align) {
    // The tail's unmap must start on a page: a size that is not a whole number of pages (the
    // caching allocator rounds to MiB, other callers may not) ends on the page that holds its end.
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size = (size + page - 1) / page * page;
    auto* raw = static_cast<std::byte*>(map(size + align));
    if (!raw)
        return nullptr;
    auto at = reinterpret_cast<uintptr_t>(raw);
    size_t head = (align - at % align) % align;
    if (head)
        ::munmap(raw, head);
    ::munmap(raw + head + size, align - head);
    return raw + head;
}

}  // namespace

size_t huge_page_size() {
    static const size_t n = read_huge_page_size();
    return n;
}

void* alloc(size_t size) {
    if (size < kMappedBlock)
        return std::aligned_alloc(CachingAllocator::kAlignment, size);
    const size_t huge = huge_page_size();
    if (huge == 0 || size < huge)
        return map(size);  // page aligned: more than kAlignment
    void* p = map_aligned(size, huge);
    // Advice only: where the kernel refuses it (THP disabled), the block has small pages.
    if (p)
        ::madvise(p, size, MADV_HUGEPAGE);
    return p;
}

void free(void* ptr, size_t size) {
    if (size < kMappedBlock)
        std::free(ptr);
    else
        ::munmap(ptr, size);
}

}  // namespace neomeg::host_memory
