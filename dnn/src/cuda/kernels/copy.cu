// Copies between layouts and dtypes (TypeCvt, Relayout) and Fill.
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

__device__ __forceinline__ bool is_float_dt(DT dt) {
    return dt == DT::Float32 || dt == DT::Float16 || dt == DT::BFloat16;
}

// One element by the rules of dnn/src/naive/type_cvt.h: floats are read exactly (as double),
// integers and bool as int64, and stored by the target's rule.
__device__ __forceinline__ void convert_one(const void* src, DT sdt, int64_t soff, void* dst,
                                            DT ddt, int64_t doff) {
    if (is_float_dt(sdt))
        store_float(dst, ddt, doff, static_cast<double>(load_float(src, sdt, soff)));
    else
        store_int(dst, ddt, doff, load_int(src, sdt, soff));
}

template <class Index>
__global__ void convert_kernel(const void* src, DT sdt, Strided sl, void* dst, DT ddt, Strided dl,
                               int64_t nr_elems) {
    grid_stride<Index>(nr_elems, [&](Index i) {
        convert_one(src, sdt, offset_of(sl, i), dst, ddt, offset_of(dl, i));
    });
}

// Same-dtype copies move raw elements of the dtype's size: no conversion, NaN payloads kept.
template <class T, class Index>
__global__ void copy_kernel(const T* src, Strided sl, T* dst, Strided dl, int64_t nr_elems) {
    grid_stride<Index>(nr_elems, [&](Index i) { dst[offset_of(dl, i)] = src[offset_of(sl, i)]; });
}

template <class T>
__global__ void fill_kernel(T* dst, Strided l, int64_t nr_elems, T value) {
    grid_stride<int64_t>(nr_elems, [&](int64_t i) { dst[offset_of(l, i)] = value; });
}

int dt_size(DT dt) {
    switch (dt) {
        case DT::Float32:
        case DT::Int32:
            return 4;
        case DT::Float16:
        case DT::BFloat16:
        case DT::Int16:
            return 2;
        default:
            return 1;
    }
}

template <class T>
void launch_copy(const void* src, const Strided& sl, void* dst, const Strided& dl, int64_t n,
                 bool small, cudaStream_t stream) {
    with_index_type(small, [&](auto index) {
        copy_kernel<T, decltype(index)><<<grid_for(n), kBlock, 0, stream>>>(
                static_cast<const T*>(src), sl, static_cast<T*>(dst), dl, n);
    });
}

}  // namespace

void convert(const void* src, DT src_dt, const Strided& src_layout, void* dst, DT dst_dt,
             const Strided& dst_layout, int64_t nr_elems, cudaStream_t stream) {
    if (nr_elems == 0)
        return;
    bool small = fits_uint32(src_layout, nr_elems) && fits_uint32(dst_layout, nr_elems);
    if (src_dt == dst_dt) {
        switch (dt_size(src_dt)) {
            case 4:
                return launch_copy<uint32_t>(src, src_layout, dst, dst_layout, nr_elems, small,
                                             stream);
            case 2:
                return launch_copy<uint16_t>(src, src_layout, dst, dst_layout, nr_elems, small,
                                             stream);
            default:
                return launch_copy<uint8_t>(src, src_layout, dst, dst_layout, nr_elems, small,
                                            stream);
        }
    }
    with_index_type(small, [&](auto index) {
        convert_kernel<decltype(index)><<<grid_for(nr_elems), kBlock, 0, stream>>>(
                src, src_dt, src_layout, dst, dst_dt, dst_layout, nr_elems);
    });
}

void fill_bytes(void* dst, int elem_size, const Strided& layout, int64_t nr_elems, uint32_t bits,
                cudaStream_t stream) {
    if (nr_elems == 0)
        return;
    unsigned grid = grid_for(nr_elems);
    switch (elem_size) {
        case 4:
            fill_kernel<uint32_t><<<grid, kBlock, 0, stream>>>(static_cast<uint32_t*>(dst), layout,
                                                               nr_elems, bits);
            return;
        case 2:
            fill_kernel<uint16_t><<<grid, kBlock, 0, stream>>>(
                    static_cast<uint16_t*>(dst), layout, nr_elems, static_cast<uint16_t>(bits));
            return;
        default:
            fill_kernel<uint8_t><<<grid, kBlock, 0, stream>>>(static_cast<uint8_t*>(dst), layout,
                                                              nr_elems, static_cast<uint8_t>(bits));
            return;
    }
}

}  // namespace neomeg::dnn::cuda::kern
