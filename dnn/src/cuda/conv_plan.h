// A cuDNN convolution case made ready to run: the descriptors of one (layouts, params) case and
// the algorithm for it, chosen by cuDNN's heuristics or, with Handle::cuda_benchmark_kernel(), by
// measuring every algorithm on scratch buffers once per handle, shape and params (MegEngine's
// fastrun; the measured choice is cached in the handle, conv_algo_cache.h). Where the graph API
// finalizes a plan for the case (conv_graph.h), that plan runs instead, and this one stays as the
// fallback for a call whose pointers the graph plan was not described for.
#pragma once

#include <memory>

#include "src/common/convolution_geometry.h"
#include "src/cuda/cudnn_util.h"

namespace neomeg::dnn::cuda {

class HandleImpl;
class GraphConvPlan;

enum class ConvKind { Forward, BackwardData, BackwardFilter };

// cudnnConvolutionBiasActivationForward's operands beyond the convolution's (ConvBias).
struct BiasActivation {
    TensorDesc bias, z;
    ActivationDesc act;
    bool has_z = false;
    // Without a bias, a zero one in the workspace from this byte offset on (the fused call needs
    // one); the convolution's workspace is the part before it.
    bool zero_bias = false;
    size_t bias_offset = 0;
};

// x is the convolution's input (src or its gradient), w the filter (or its gradient), y the
// output (dst or diff).
struct ConvPlan {
    TensorDesc x, y;
    FilterDesc w;
    cudnnConvolutionDescriptor_t conv = nullptr;
    int algo = 0;
    size_t workspace = 0;
    bool measured = false;  // the algorithm was chosen by measuring
    // The graph API's plan for the case (shared with the handle's cache), or null. `workspace`
    // covers both plans.
    std::shared_ptr<const GraphConvPlan> graph;
    bool graph_measured = false;  // the graph plan was chosen by measuring
    // ConvBias's fused epilogue; null where the convolution runs alone.
    std::unique_ptr<BiasActivation> fused;

    ConvPlan();
    ~ConvPlan();
    ConvPlan(const ConvPlan&) = delete;
    ConvPlan& operator=(const ConvPlan&) = delete;
};

// Builds the plan, or nullptr for a case cuDNN does not take. `x`, `w`, `y` are the layouts in
// the roles of ConvPlan. With `try_graph` and conv_graph_enabled(), the graph API's plan is looked
// up or built too; under measuring, the graph API's candidates are timed against the legacy
// algorithms and the faster kept.
std::unique_ptr<ConvPlan> make_conv_plan(HandleImpl& handle, ConvKind kind, const ConvArgs& args,
                                         const TensorLayout& x, const TensorLayout& w,
                                         const TensorLayout& y, bool try_graph = true);

// Switches a forward plan to `algo` (with its workspace); false, leaving the plan as it was,
// where cuDNN cannot run that algorithm on this case.
bool use_forward_algo(HandleImpl& handle, ConvPlan& plan, cudnnConvolutionFwdAlgo_t algo);

}  // namespace neomeg::dnn::cuda
