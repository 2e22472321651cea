// The element walk of advanced indexing and torch.scatter (IndexingMultiAxisVec, its Set and Incr
// forms, Scatter), as plain arithmetic that both nvcc (kernels/indexed.cu) and g++ compile, so
// that the host builds of the walk (indexed_args.h) are tested on the CPU against naive
// (dnn/test/cuda/indexed_walk.cpp) where no GPU is present.
#pragma once

#include "src/cuda/kernels/args.h"

namespace neomeg::dnn::cuda::kern {

// What one call does at each walk position: Gather reads the indexed tensor into the plain one,
// Set writes the plain one into the indexed one, Add adds it there.
enum class IndexedMode : uint32_t { Gather, Set, Add };

// At walk position c (row-major over `shape`), index tensor k holds v_k at
// sum_d c[d] * index_stride[k][d] (plus axis_size[k] when negative: the range check has run); the
// indexed tensor's element is at sum_d c[d] * walk_stride[d] + sum_k v_k * axis_stride[k], the
// plain one's at sum_d c[d] * plain_stride[d].
struct IndexedArgs {
    IndexedMode mode;
    int ndim;
    int64_t shape[kMaxNdim];
    int64_t n;
    int nr_index;
    const int32_t* index[kMaxNdim];
    int64_t index_stride[kMaxNdim][kMaxNdim];
    int64_t axis_size[kMaxNdim];
    int64_t axis_stride[kMaxNdim];
    int64_t walk_stride[kMaxNdim];
    void* indexed;
    void* plain;
    int64_t plain_stride[kMaxNdim];
    DT dt;
    int elem_size;
    // Set only. Writes that may land on one element share a key, sum_d c[d] * key_stride[d] +
    // sum_k v_k * axis_key[k] (< nr_keys); among them row-major order is the order of rank,
    // sum_d c[d] * rank_stride[d], and the largest rank wins, as in naive's sequential loop. The
    // winners are elected over elect_shape (shape with every axis that changes neither key nor
    // rank set to 1) into `winner` (nr_keys entries of rank + 1, zeroed first).
    int64_t key_stride[kMaxNdim];
    int64_t axis_key[kMaxNdim];
    int64_t rank_stride[kMaxNdim];
    int64_t elect_shape[kMaxNdim];
    int64_t elect_n;
    int64_t nr_keys;
    uint32_t* winner;
};

// Where walk position j (row-major over `shape`, which is a.shape or a.elect_shape) reads and
// writes.
struct IndexedTarget {
    int64_t indexed, plain, key, rank;
};

NM_HOST_DEVICE IndexedTarget indexed_target(const IndexedArgs& a, const int64_t* shape, int64_t j) {
    int64_t c[kMaxNdim];
    for (int d = a.ndim - 1; d >= 0; --d) {
        c[d] = j % shape[d];
        j /= shape[d];
    }
    IndexedTarget t{0, 0, 0, 0};
    for (int d = 0; d < a.ndim; ++d) {
        t.indexed += c[d] * a.walk_stride[d];
        t.plain += c[d] * a.plain_stride[d];
        t.key += c[d] * a.key_stride[d];
        t.rank += c[d] * a.rank_stride[d];
    }
    for (int k = 0; k < a.nr_index; ++k) {
        int64_t off = 0;
        for (int d = 0; d < a.ndim; ++d)
            off += c[d] * a.index_stride[k][d];
        int64_t v = a.index[k][off];
        if (v < 0)
            v += a.axis_size[k];
        t.indexed += v * a.axis_stride[k];
        t.key += v * a.axis_key[k];
    }
    return t;
}

// Launches the walk (a.n > 0). Gather and Add make one pass; Set zeroes `winner`, elects and then
// writes the winners.
void indexed(const IndexedArgs& a, cudaStream_t stream);

// For each of `nr` index tensors, the first value in row-major order outside [lo, hi):
// first[k] = min over such positions p of (p << 32 | uint32(value)), or ~0 when there is none.
// The layouts are the tensors' own, collapsed; every n < 2^32.
struct IndexRange {
    const int32_t* index;
    Strided layout;
    int64_t n, lo, hi;
};
void find_bad_index(const IndexRange* ranges, int nr, unsigned long long* first,
                    cudaStream_t stream);

}  // namespace neomeg::dnn::cuda::kern
