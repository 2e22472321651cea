// What the x86 convolutions by columns share (deformable_conv.cpp, region_restricted_conv.cpp):
// their geometry in plain integers and the three passes of a convolution whose taps are gathered
// per image into "columns" (IC * FH * FW rows of OH * OW, built by each operator its own way)
// and contracted with the filter as one float32 GEMM per group (oneDNN's sgemm, dense_gemm.h):
// dst = filter x columns, filter gradient += diff x columns^T, column gradient = filter^T x
// diff, which each operator scatters back its own way. Tensors here are dense (dense_gemm.h's
// dense()).
#pragma once

#include <algorithm>
#include <vector>

#include "src/common/convolution_geometry.h"
#include "src/x86/dense_gemm.h"
#include "src/x86/loop_kernel.h"

namespace neomeg::dnn::x86::columns_conv {

struct Geo : ConvDims2D {
    using ConvDims2D::ConvDims2D;
    long P() const { return OH * OW; }
    size_t col_rows() const { return size_t(IC * K); }
    // A group's rows of the columns: icg input channels' taps.
    long KK() const { return icg * K; }
};

// dst (N, OC, OH, OW) = filter x columns(n) per image and group; columns(n, cols) writes image
// n's columns.
template <class Columns>
void forward(const Geo& g, const float* filter, float* dst, Columns&& columns) {
    const long P = g.P(), KK = g.KK();
    std::vector<float> cols(g.col_rows() * size_t(P));
    for (long n = 0; n < g.N; ++n) {
        columns(n, cols.data());
        for (long gr = 0; gr < g.G; ++gr)
            dense_gemm::gemm('N', 'N', g.ocg, P, KK, filter + gr * g.ocg * KK, KK,
                             cols.data() + gr * KK * P, P, 0.f, dst + (n * g.OC + gr * g.ocg) * P,
                             P);
    }
}

// grad (OC, icg, FH, FW) = sum over images of diff x columns(n)^T per group.
template <class Columns>
void backward_filter(const Geo& g, const float* diff, float* grad, Columns&& columns) {
    const long P = g.P(), KK = g.KK();
    std::fill(grad, grad + g.OC * KK, 0.f);
    std::vector<float> cols(g.col_rows() * size_t(P));
    for (long n = 0; n < g.N; ++n) {
        columns(n, cols.data());
        for (long gr = 0; gr < g.G; ++gr)
            dense_gemm::gemm('N', 'T', g.ocg, KK, P, diff + (n * g.OC + gr * g.ocg) * P, P,
                             cols.data() + gr * KK * P, P, 1.f, grad + gr * g.ocg * KK, KK);
    }
}

// The forward (filter_grad false: out = dst, operand = filter) or the filter gradient (out =
// grad, operand = diff): the two passes that read the columns.
template <class Columns>
void contract(bool filter_grad, const Geo& g, const float* operand, float* out, Columns&& columns) {
    if (filter_grad)
        backward_filter(g, operand, out, columns);
    else
        forward(g, operand, out, columns);
}

// The frame of the kernels: a call the loops take runs run() and reports "im2col+sgemm", any
// other runs naive.
template <class Op>
class Kernel : public LoopKernel<Op> {
public:
    using LoopKernel<Op>::LoopKernel;

protected:
    virtual bool takes(std::span<const TensorND> in, std::span<const TensorND> out) const = 0;
    virtual void run(std::span<const TensorND> in, std::span<const TensorND> out) = 0;

    void do_exec(std::span<const TensorND> in, std::span<const TensorND> out, Workspace ws) final {
        if (!takes(in, out)) {
            this->run_naive(in, out, ws);
            return;
        }
        this->m_last = "im2col+sgemm";
        run(in, out);
    }
};

// Image n's column gradient filter^T x diff per group, handed to scatter(n, col_grad).
template <class Scatter>
void backward_data(const Geo& g, const float* filter, const float* diff, Scatter&& scatter) {
    const long P = g.P(), KK = g.KK();
    std::vector<float> col_grad(g.col_rows() * size_t(P));
    for (long n = 0; n < g.N; ++n) {
        for (long gr = 0; gr < g.G; ++gr)
            dense_gemm::gemm('T', 'N', KK, P, g.ocg, filter + gr * g.ocg * KK, KK,
                             diff + (n * g.OC + gr * g.ocg) * P, P, 0.f,
                             col_grad.data() + gr * KK * P, P);
        scatter(n, static_cast<const float*>(col_grad.data()));
    }
}

}  // namespace neomeg::dnn::x86::columns_conv
