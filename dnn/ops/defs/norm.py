# Normalisation, softmax and dropout: forward ops and the backward ops their training needs.
# The DSL (params, field, enum, op) is documented in dnn/ops/opgen/model.py.

BN = params(
    "BatchNorm",
    "Batch normalisation over every axis but axis 1 (the channel axis of NC, NCHW, NCDHW, ...).",
    enum(
        "fwd_mode",
        "FwdMode",
        ["TRAINING", "INFERENCE"],
        "TRAINING",
        "TRAINING normalises with the batch statistics and updates the running ones; INFERENCE "
        "normalises with the running statistics",
    ),
    field("epsilon", "float32", 1e-5, "added to the variance before the square root"),
    field(
        "momentum",
        "float32",
        0.9,
        "MegEngine's convention: running = running * momentum + batch * (1 - momentum), with the "
        "unbiased batch variance for the running variance",
    ),
)

op(
    "BatchNormForward",
    "Normalises src per channel and applies scale and bias. The running statistics outputs may "
    "alias the running statistics inputs, which is how a caller updates them in place.",
    inputs=["src", "scale", "bias", "running_mean", "running_var"],
    outputs=["dst", "batch_mean", "batch_inv_std", "running_mean_out", "running_var_out"],
    param=BN,
    layout_follows={"dst": "src"},
    grad=Grad(saves=("inputs", "outputs"), absent_grads=True),
)

op(
    "BatchNormBackward",
    "Gradients of BatchNormForward from the statistics it saved (batch_mean, batch_inv_std).",
    inputs=["diff", "src", "scale", "saved_mean", "saved_inv_std"],
    outputs=["grad", "dscale", "dbias"],
    param=BN,
    layout_follows={"grad": "diff"},
)

LN = params(
    "LayerNorm",
    "Layer normalisation over the trailing normalized_dim axes of src.",
    field("affine", "bool", True, "whether weight and bias inputs scale and shift the result"),
    field("eps", "float32", 1e-5, "added to the variance before the square root"),
    field("normalized_dim", "uint32", 1, "number of trailing axes normalised together"),
)

op(
    "LayerNormForward",
    "Normalises each row over the trailing axes; inputs are src, then weight and bias iff affine.",
    inputs=["src", "*weight_bias"],
    outputs=["dst", "mean", "rstd"],
    param=LN,
    grad=Grad(saves=("inputs", "outputs"), absent_grads=True),
)

op(
    "LayerNormBackward",
    "Gradients of LayerNormForward; inputs end with weight iff affine, outputs end with dweight "
    "and dbias iff affine.",
    inputs=["diff", "src", "mean", "rstd", "*weight"],
    outputs=["grad", "*dweight_dbias"],
    param=LN,
)

GN = params(
    "GroupNorm",
    "Group normalisation: axis 1 of src (channels) splits into `group` groups, each normalised "
    "together with all trailing axes, per sample.",
    field("affine", "bool", True, "whether per-channel weight and bias scale and shift the result"),
    field("eps", "float32", 1e-5, "added to the variance before the square root"),
    field("group", "uint32", 1, "number of channel groups; must divide the channel count"),
)

op(
    "GroupNormForward",
    "Normalises each (sample, group); inputs are src, then weight and bias iff affine.",
    inputs=["src", "*weight_bias"],
    outputs=["dst", "mean", "rstd"],
    param=GN,
    grad=Grad(saves=("inputs", "outputs"), absent_grads=True),
)

op(
    "GroupNormBackward",
    "Gradients of GroupNormForward; inputs end with weight iff affine, outputs end with dweight "
    "and dbias iff affine.",
    inputs=["diff", "src", "mean", "rstd", "*weight"],
    outputs=["grad", "*dweight_dbias"],
    param=GN,
)

SOFTMAX = params(
    "Softmax",
    "The axis a softmax normalises over.",
    field("axis", "int32", -1, "axis of src; negative counts from the end"),
)

op(
    "SoftmaxForward",
    "exp(x - max) / sum(exp(x - max)) along the axis.",
    inputs=["src"],
    outputs=["dst"],
    param=SOFTMAX,
    grad=Grad(saves=("outputs",)),
)

op(
    "SoftmaxBackward",
    "Gradient of SoftmaxForward from its output dst: dst * (diff - sum(diff * dst)).",
    inputs=["dst", "diff"],
    outputs=["grad"],
    param=SOFTMAX,
    grad=Grad(saves=("inputs",)),
)

op(
    "LogSoftmaxForward",
    "x - max - log(sum(exp(x - max))) along the axis.",
    inputs=["src"],
    outputs=["dst"],
    param=SOFTMAX,
    grad=Grad(saves=("outputs",)),
)

op(
    "LogSoftmaxBackward",
    "Gradient of LogSoftmaxForward from its output dst: diff - exp(dst) * sum(diff).",
    inputs=["dst", "diff"],
    outputs=["grad"],
    param=SOFTMAX,
    grad=Grad(saves=("inputs",)),
)

DROPOUT = params(
    "Dropout",
    "Dropout probability and the seed of the Philox4x32-10 stream that draws the mask.",
    field("drop_prob", "float32", 0.0, "probability of zeroing an element, in [0, 1]"),
    field("seed", "uint64", 0, "element i is kept iff uniform(seed, i) >= drop_prob"),
)

op(
    "DropoutForward",
    "Zeroes elements with probability drop_prob and scales the rest by 1 / (1 - drop_prob); "
    "mask (uint8, src's shape) is 1 where kept.",
    inputs=["src"],
    outputs=["dst", "mask"],
    param=DROPOUT,
    grad=Grad(saves=("outputs",)),
)

op(
    "DropoutBackward",
    "diff * mask / (1 - drop_prob).",
    inputs=["diff", "mask"],
    outputs=["grad"],
    param=DROPOUT,
    grad=Grad(saves=("inputs",)),
)

# BatchNorm on ChannelBlock's layout (dnn/ops/defs/tensor_shape.py): the channel count C is
# scale's, the block src's last dim; the per-channel tensors stay plain {1, C, 1, ...}.
op(
    "BatchNormForwardBlocked",
    "BatchNormForward on src and dst (N, ceil(C/block), spatial..., block) in ChannelBlock's "
    "layout; scale, bias and the statistics are plain (1, C, 1...) as BatchNormForward's, for "
    "the C channels of src. The channels past C in dst are zero.",
    inputs=["src", "scale", "bias", "running_mean", "running_var"],
    outputs=["dst", "batch_mean", "batch_inv_std", "running_mean_out", "running_var_out"],
    param=BN,
)

op(
    "BatchNormBackwardBlocked",
    "BatchNormBackward with diff, src and grad in ChannelBlock's layout (one block, their last "
    "dim); scale, the saved statistics, dscale and dbias are plain (1, C, 1...). The channels "
    "past C in grad are zero.",
    inputs=["diff", "src", "scale", "saved_mean", "saved_inv_std"],
    outputs=["grad", "dscale", "dbias"],
    param=BN,
)

# A blocked BatchNorm whose output only a relu reads, and its backward behind that relu's mask:
# the graph (src/graph/passes/fuse_blocked_batch_norm_relu.cpp) fuses the relu into them, which
# saves a sweep over the activation each way.
op(
    "BatchNormReluForwardBlocked",
    "relu(BatchNormForwardBlocked): as BatchNormForwardBlocked, with dst = max(normalised, 0).",
    inputs=["src", "scale", "bias", "running_mean", "running_var"],
    outputs=["dst", "batch_mean", "batch_inv_std", "running_mean_out", "running_var_out"],
    param=BN,
)

op(
    "BatchNormReluBackwardBlocked",
    "BatchNormBackwardBlocked of diff masked by the relu's output: of diff where relu_dst > 0 and "
    "0 elsewhere (SWITCH_GT0(relu_dst, diff)); relu_dst has diff's blocked shape.",
    inputs=["diff", "src", "scale", "saved_mean", "saved_inv_std", "relu_dst"],
    outputs=["grad", "dscale", "dbias"],
    param=BN,
)

# A residual block's end: a blocked BatchNorm whose output only a residual ADD reads, that ADD
# read only by a relu; and the backward of that relu (its mask over the sum of the two gradients
# that reach it), whose masked gradient both the BatchNorm's backward and the residual branch read
# (src/graph/passes/fuse_blocked_batch_norm_add_relu.cpp). Each saves sweeps over the activation.
op(
    "BatchNormAddReluForwardBlocked",
    "relu(BatchNormForwardBlocked + z): as BatchNormForwardBlocked, with dst = max(normalised + "
    "z, 0); z has src's blocked shape.",
    inputs=["src", "scale", "bias", "running_mean", "running_var", "z"],
    outputs=["dst", "batch_mean", "batch_inv_std", "running_mean_out", "running_var_out"],
    param=BN,
)

op(
    "BatchNormAddReluBackwardBlocked",
    "masked_diff = SWITCH_GT0(relu_dst, diff + diff_add) (the relu's backward of the two "
    "gradients' sum), and BatchNormBackwardBlocked of masked_diff; diff, diff_add and relu_dst "
    "have src's blocked shape.",
    inputs=["diff", "diff_add", "src", "scale", "saved_mean", "saved_inv_std", "relu_dst"],
    outputs=["grad", "dscale", "dbias", "masked_diff"],
    param=BN,
)
