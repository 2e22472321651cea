// RegionRestrictedConvolutionForward and its gradients over NCHW: a thread per output element
// (dst, src's gradient or the filter's) summing in double the taps that read src and whose region
// ids match, so no atomics are needed.
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

__device__ __forceinline__ int64_t at4(const int64_t* st, int64_t a, int64_t b, int64_t c,
                                       int64_t d) {
    return a * st[0] + b * st[1] + c * st[2] + d * st[3];
}

__device__ __forceinline__ bool same_region(const RegionConvArgs& a, const void* rin,
                                            const void* rout, int64_t n, int64_t ih, int64_t iw,
                                            int64_t oh, int64_t ow) {
    int64_t in_id = load_int(rin, a.rdt,
                             n * a.rin_strides[0] + ih * a.rin_strides[1] + iw * a.rin_strides[2]);
    int64_t out_id = load_int(
            rout, a.rdt, n * a.rout_strides[0] + oh * a.rout_strides[1] + ow * a.rout_strides[2]);
    return in_id == out_id;
}

__global__ void forward_kernel(RegionConvArgs a, const void* src, const void* filter,
                               const void* rin, const void* rout, void* dst, int64_t total) {
    int64_t icg = a.ic / a.group, ocg = a.oc / a.group;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t ow = i % a.ow, oh = i / a.ow % a.oh, oc = i / (a.ow * a.oh) % a.oc;
        int64_t n = i / (a.ow * a.oh * a.oc);
        double acc = 0;
        for (int64_t fh = 0; fh < a.fh; ++fh)
            for (int64_t fw = 0; fw < a.fw; ++fw) {
                int64_t ih = oh * a.sh - a.ph + fh * a.dh, iw = ow * a.sw - a.pw + fw * a.dw;
                if (ih < 0 || ih >= a.ih || iw < 0 || iw >= a.iw ||
                    !same_region(a, rin, rout, n, ih, iw, oh, ow))
                    continue;
                for (int64_t c = 0; c < icg; ++c)
                    acc += static_cast<double>(load_float(
                                   src, a.dt,
                                   at4(a.image_strides, n, oc / ocg * icg + c, ih, iw))) *
                           load_float(filter, a.dt, at4(a.filter_strides, oc, c, fh, fw));
            }
        store_float(dst, a.dt, at4(a.out_strides, n, oc, oh, ow), acc);
    }
}

// The output index o along one axis whose tap t reads input position p, or -1.
__device__ __forceinline__ int64_t output_of(int64_t p, int64_t t, int64_t stride, int64_t pad,
                                             int64_t dil, int64_t out) {
    int64_t q = p + pad - t * dil;
    if (q < 0 || q % stride != 0 || q / stride >= out)
        return -1;
    return q / stride;
}

__global__ void data_kernel(RegionConvArgs a, const void* filter, const void* diff, const void* rin,
                            const void* rout, void* grad, int64_t total) {
    int64_t icg = a.ic / a.group, ocg = a.oc / a.group;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t iw = i % a.iw, ih = i / a.iw % a.ih, ic = i / (a.iw * a.ih) % a.ic;
        int64_t n = i / (a.iw * a.ih * a.ic);
        double acc = 0;
        for (int64_t fh = 0; fh < a.fh; ++fh) {
            int64_t oh = output_of(ih, fh, a.sh, a.ph, a.dh, a.oh);
            if (oh < 0)
                continue;
            for (int64_t fw = 0; fw < a.fw; ++fw) {
                int64_t ow = output_of(iw, fw, a.sw, a.pw, a.dw, a.ow);
                if (ow < 0 || !same_region(a, rin, rout, n, ih, iw, oh, ow))
                    continue;
                for (int64_t o = 0; o < ocg; ++o) {
                    int64_t oc = ic / icg * ocg + o;
                    acc += static_cast<double>(load_float(
                                   filter, a.dt, at4(a.filter_strides, oc, ic % icg, fh, fw))) *
                           load_float(diff, a.dt, at4(a.out_strides, n, oc, oh, ow));
                }
            }
        }
        store_float(grad, a.dt, at4(a.image_strides, n, ic, ih, iw), acc);
    }
}

__global__ void filter_kernel(RegionConvArgs a, const void* src, const void* diff, const void* rin,
                              const void* rout, void* grad, int64_t total) {
    int64_t icg = a.ic / a.group, ocg = a.oc / a.group;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        int64_t fw = i % a.fw, fh = i / a.fw % a.fh, c = i / (a.fw * a.fh) % icg;
        int64_t oc = i / (a.fw * a.fh * icg), ic = oc / ocg * icg + c;
        double acc = 0;
        for (int64_t n = 0; n < a.n; ++n)
            for (int64_t oh = 0; oh < a.oh; ++oh)
                for (int64_t ow = 0; ow < a.ow; ++ow) {
                    int64_t ih = oh * a.sh - a.ph + fh * a.dh, iw = ow * a.sw - a.pw + fw * a.dw;
                    if (ih < 0 || ih >= a.ih || iw < 0 || iw >= a.iw ||
                        !same_region(a, rin, rout, n, ih, iw, oh, ow))
                        continue;
                    acc += static_cast<double>(
                                   load_float(src, a.dt, at4(a.image_strides, n, ic, ih, iw))) *
                           load_float(diff, a.dt, at4(a.out_strides, n, oc, oh, ow));
                }
        store_float(grad, a.dt, at4(a.filter_strides, oc, c, fh, fw), acc);
    }
}

}  // namespace

void region_conv_forward(const RegionConvArgs& a, const void* src, const void* filter,
                         const void* rin, const void* rout, void* dst, cudaStream_t stream) {
    int64_t total = a.n * a.oc * a.oh * a.ow;
    if (total)
        forward_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, src, filter, rin, rout, dst,
                                                               total);
}

void region_conv_backward_data(const RegionConvArgs& a, const void* filter, const void* diff,
                               const void* rin, const void* rout, void* grad, cudaStream_t stream) {
    int64_t total = a.n * a.ic * a.ih * a.iw;
    if (total)
        data_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, filter, diff, rin, rout, grad,
                                                            total);
}

void region_conv_backward_filter(const RegionConvArgs& a, const void* src, const void* diff,
                                 const void* rin, const void* rout, void* grad,
                                 cudaStream_t stream) {
    int64_t total = a.oc * (a.ic / a.group) * a.fh * a.fw;
    if (total)
        filter_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, src, diff, rin, rout, grad, total);
}

}  // namespace neomeg::dnn::cuda::kern
