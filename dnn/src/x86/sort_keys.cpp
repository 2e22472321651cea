#include "src/x86/sort_keys.h"

#include <hwy/contrib/sort/vqsort.h>

namespace neomeg::dnn::x86 {

void sort_keys(uint64_t* keys, size_t n) {
    if (n < 2)
        return;
    thread_local const hwy::Sorter sorter;
    sorter(keys, n, hwy::SortAscending());
}

}  // namespace neomeg::dnn::x86
