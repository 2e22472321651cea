// FakeQuant, TQT, LSQ and their gradients: one grid-stride walk over src's elements, operands
// (broadcast ones with stride 0) read through their collapsed layouts, the formulas shared with
// the naive kernels (src/common/fake_quant_math.h).
#include "src/common/fake_quant_math.h"
#include "src/cuda/kernels/device.cuh"

namespace neomeg::dnn::cuda::kern {
namespace {

namespace fq = fake_quant;

template <class Index>
__global__ void fake_quant_kernel(FakeQuantArgs a, int64_t n) {
    fq::Range r{a.qmin, a.qmax};
    grid_stride<Index>(n, [&](Index i) {
        float v[kFakeQuantMaxInputs];
        for (int k = 0; k < a.nr_in; ++k)
            v[k] = load_float(a.in[k], a.in_dt[k], offset_of(a.in_layout[k], i));
        float o0 = 0.f, o1 = 0.f;
        switch (a.kind) {
            case FakeQuantKind::FakeQuant:
                o0 = fq::fake_quant(v[0], v[1], v[2], r);
                break;
            case FakeQuantKind::FakeQuantBackward:
                o0 = fq::fake_quant_grad(v[0], v[1], v[2], v[3], r);
                break;
            case FakeQuantKind::TQT:
                o0 = fq::tqt(v[0], v[1], r);
                break;
            case FakeQuantKind::TQTBackward: {
                fq::Grads g = fq::tqt_grad(v[0], v[1], v[2], r);
                o0 = g.src;
                o1 = g.scale;
                break;
            }
            case FakeQuantKind::LSQ:
                o0 = fq::lsq(v[0], v[1], v[2], r);
                break;
            case FakeQuantKind::LSQBackward: {
                fq::Grads g = fq::lsq_grad(v[0], v[1], v[2], v[3], v[4], r);
                o0 = g.src;
                o1 = g.scale;
                break;
            }
        }
        store_float(a.out[0], a.out_dt, offset_of(a.out_layout[0], i), o0);
        if (a.nr_out > 1)
            store_float(a.out[1], a.out_dt, offset_of(a.out_layout[1], i), o1);
    });
}

}  // namespace

void fake_quant(const FakeQuantArgs& args, int64_t n, cudaStream_t stream) {
    if (n == 0)
        return;
    bool small = true;
    for (int k = 0; k < args.nr_in; ++k)
        small = small && fits_uint32(args.in_layout[k], n);
    for (int k = 0; k < args.nr_out; ++k)
        small = small && fits_uint32(args.out_layout[k], n);
    with_index_type(small, [&](auto index) {
        fake_quant_kernel<decltype(index)><<<grid_for(n), kBlock, 0, stream>>>(args, n);
    });
}

}  // namespace neomeg::dnn::cuda::kern
