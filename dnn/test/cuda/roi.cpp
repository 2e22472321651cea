// ROIAlign, ROIPooling and their gradients on the CUDA handle against naive: both modes, fixed
// and dense sampling, float dtypes, rois past the image's edges, strided inputs and padded
// outputs, no rois, and the batch-index error.
#include "cuda/cuda_test.h"
#include "neomeg/dnn/operators/vision.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

// Rois over a (3, C, 9, 8) image: inside, past every edge, inverted, outside, fractional batch.
const std::vector<double> kRois = {0, 1.2,  0.5, 6.3, 7.1, 2,   -2, -1.5, 4,   10,  1, 6, 5, 1, 2,
                                   1, 12.5, 10,  14,  13,  2.7, 0,  0,    7.5, 8.5, 0, 3, 3, 3, 3};

// The forward's index output for every pooled element: `pattern` repeated (set_values takes
// exactly one value per element).
std::vector<double> index_values(const std::vector<double>& pattern, const TensorShape& pooled) {
    std::vector<double> v(pooled.total_nr_elems());
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = pattern[i % pattern.size()];
    return v;
}

}  // namespace

TEST_F(Cuda, ROIAlignAndGradientMatchNaive) {
    using Mode = param::ROIAlign::Mode;
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (Mode mode : {Mode::MAX, Mode::AVERAGE})
            for (uint32_t samples : {2u, 0u}) {
                param::ROIAlign p;
                p.mode = mode;
                p.pooled_height = 3;
                p.pooled_width = 2;
                p.sample_height = samples;
                p.sample_width = samples ? 3 : 0;
                p.spatial_scale = 0.75f;
                p.offset = 0.5f;
                TensorShape src{3, 4, 9, 8}, rois{6, 5}, pooled{6, 4, 3, 2};
                CudaChecker<ROIAlign> f(handle.get());
                f.set_param(p).set_dtype(0, dt).set_values(1, kRois).expect_kernel("cuda");
                f.execs({src, rois});
                f.set_noncontiguous(true).execs({src, rois});

                // Indices the forward could give: every sample of the grid (dense grids are at
                // least 1x1, so only 0 is valid for every roi there).
                std::vector<double> index =
                        samples ? std::vector<double>{0, 5, 2, 3, 1, 4} : std::vector<double>{0};
                CudaChecker<ROIAlignBackward> b(handle.get());
                b.set_param(p).set_dtype(0, dt).set_values(1, kRois).set_dtype(2, dtype::Int32);
                b.set_values(2, index_values(index, pooled))
                        .set_output_shapes({src})
                        .set_epsilon(1e-3);
                b.expect_kernel("cuda").execs({pooled, rois, pooled});
                b.set_noncontiguous(true).execs({pooled, rois, pooled});
            }
}

TEST_F(Cuda, ROIPoolingAndGradientMatchNaive) {
    using Mode = param::ROIPooling::Mode;
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
        for (Mode mode : {Mode::MAX, Mode::AVERAGE}) {
            param::ROIPooling p;
            p.mode = mode;
            p.pooled_height = 3;
            p.pooled_width = 2;
            p.scale = 0.5f;
            TensorShape src{3, 4, 9, 8}, rois{6, 5}, pooled{6, 4, 3, 2};
            CudaChecker<ROIPooling> f(handle.get());
            f.set_param(p).set_dtype(0, dt).set_values(1, kRois).expect_kernel("cuda");
            f.execs({src, rois});
            f.set_noncontiguous(true).execs({src, rois});
            if (mode == Mode::AVERAGE) {  // MAX needs the forward's index (naive rejects others)
                CudaChecker<ROIPoolingBackward> b(handle.get());
                b.set_param(p).set_dtype(0, dt).set_values(1, kRois).set_dtype(2, dtype::Int32);
                b.set_values(2, index_values({-1}, pooled))
                        .set_output_shapes({src})
                        .set_epsilon(1e-3);
                b.expect_kernel("cuda").execs({pooled, rois, pooled});
                b.set_noncontiguous(true).execs({pooled, rois, pooled});
            }
        }
}

TEST_F(Cuda, ROIOpsNoRoisAndBadBatch) {
    CudaChecker<ROIAlign> none(handle.get());
    none.execs({{2, 3, 4, 4}, {0, 5}});
    CudaChecker<ROIAlign> bad(handle.get());
    bad.set_values(1, {0, 0, 0, 1, 1, 2, 0, 0, 1, 1});
    EXPECT_THROW(bad.execs({{2, 1, 4, 4}, {2, 5}}), IndexError);
    CudaChecker<ROIPooling> bad_pool(handle.get());
    bad_pool.set_values(1, {-1, 0, 0, 1, 1});
    EXPECT_THROW(bad_pool.execs({{2, 1, 4, 4}, {1, 5}}), IndexError);
}
