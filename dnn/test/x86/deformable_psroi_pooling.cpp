// DeformablePSROIPooling and its gradient on the x86 handle against naive: with and without
// offsets, 1x1 to 4x4 bins, 1 to 3 samples per part, rois inside, past every edge, outside and
// of a fractional batch index, several rois on one image (the gradient's sums), channel counts
// around the vector block (1, 5, 20), padded (strided) inputs and outputs, no rois, the
// bad-batch error, and float16 (naive's kernel). The forward pools in float32 (roi_bins_hwy.h)
// and is held to that arithmetic's bound; the gradients must be naive's bits.
#include "neomeg/dnn/operators/vision.h"
#include "x86/vision_loops.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Param = param::DeformablePSROIPooling;

Param psroi_param(bool no_trans, uint32_t part, uint32_t ph, uint32_t pw, uint32_t spp, float scale,
                  float trans_std) {
    Param p;
    p.no_trans = no_trans;
    p.part_size = part;
    p.pooled_h = ph;
    p.pooled_w = pw;
    p.sample_per_part = spp;
    p.spatial_scale = scale;
    p.trans_std = trans_std;
    return p;
}

const std::vector<double> kRois = {0,   1.2, 0.5, 6.3, 5.1, 1,   -2, -1, 3,   4,   1,   5.5, 4,  11,
                                   9.5, 0.6, 2,   3,   7.5, 7.5, 1,  3,  2,   3.4, 2.6, 0,   14, 12,
                                   16,  15,  0,   0,   0,   8,   8,  0,  2.5, 1.5, 5.5, 4.5};
constexpr size_t kNumRois = 8;

// A bin's mean of at most sample_per_part^2 samples of four taps each (weights summing to 1 per
// sample, values in [-1, 1]), summed in float32 and divided by the count.
double forward_bound(const Param& p) {
    return float_sum_bound(4 * p.sample_per_part * p.sample_per_part, 1.0, 1);
}

void check(Handle& h, const Param& p, const TensorShape& src, bool padded, std::mt19937& rng) {
    HostTensor x = make_tensor(src, padded, rng);
    HostTensor rois = make_tensor({kNumRois, 5}, padded, rng, kRois);
    HostTensor trans = make_tensor({kNumRois + 1, 2, p.pooled_h, p.pooled_w}, padded, rng);
    auto fwd = expect_naive_near<DeformablePSROIPooling>(h, p, forward_bound(p), {x, rois, trans});
    HostTensor dy = make_tensor(fwd[0].shape(), padded, rng);
    HostTensor count = make_tensor(fwd[1].shape(), padded, rng, fwd[1].values());
    expect_naive_bits<DeformablePSROIPoolingBackward>(h, p, {x, rois, trans, dy, count});
}

}  // namespace

TEST_F(X86, DeformablePSROIPoolingMatchesNaive) {
    std::mt19937 rng(3);
    for (bool padded : {false, true})
        for (const Param& p :
             {psroi_param(true, 3, 3, 3, 2, 1.f, 0.1f), psroi_param(false, 3, 3, 3, 2, 1.f, 0.1f),
              psroi_param(false, 2, 2, 2, 3, 0.5f, 0.3f), psroi_param(true, 1, 2, 3, 1, 0.7f, 0.1f),
              psroi_param(false, 4, 4, 4, 1, 1.3f, 1.f),
              psroi_param(false, 1, 1, 1, 3, 0.8f, 0.5f)})
            for (TensorShape src :
                 {TensorShape{2, 5, 9, 10}, TensorShape{2, 20, 7, 6}, TensorShape{2, 1, 1, 1}})
                check(*handle, p, src, padded, rng);
}

TEST_F(X86, DeformablePSROIPoolingEdgeCasesMatchNaive) {
    std::mt19937 rng(5);
    Param p = psroi_param(false, 2, 2, 2, 2, 1.f, 0.2f);
    // No rois.
    HostTensor x = make_tensor({2, 3, 5, 5}, false, rng);
    HostTensor none({0, 5}, dtype::Float32), trans = make_tensor({1, 2, 2, 2}, false, rng);
    auto fwd = expect_naive_near<DeformablePSROIPooling>(*handle, p, 0, {x, none, trans});
    EXPECT_EQ(fwd[0].shape().to_string(), TensorShape({0, 3, 2, 2}).to_string());
    // A roi naming no image.
    auto op = handle->create_operator<DeformablePSROIPooling>();
    op->param() = p;
    EXPECT_THROW(run_op(*op, {x, HostTensor::from({1, 5}, {3, 0, 0, 1, 1}), trans}), IndexError);
    // float16 runs naive's kernel.
    HostTensor h16 = make_tensor({2, 3, 5, 5}, false, rng, {}, -1, 1, dtype::Float16);
    HostTensor t16 = make_tensor({1, 2, 2, 2}, false, rng, {}, -1, 1, dtype::Float16);
    expect_naive_bits<DeformablePSROIPooling>(
            *handle, p, {h16, HostTensor::from({1, 5}, {0, 0, 0, 3, 3}), t16}, {}, "naive");
}
