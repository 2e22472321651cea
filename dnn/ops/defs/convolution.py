# Convolutions over NCW / NCHW / NCDHW tensors. The spatial rank (1, 2 or 3) comes from the input's
# ndim; stride, padding and dilation hold one entry per spatial dim (ParamError otherwise).
# The DSL (params, field, enum, op) is documented in dnn/ops/opgen/model.py.

CONV_MODE = enum(
    "mode",
    "Mode",
    ["CROSS_CORRELATION", "CONVOLUTION"],
    "CROSS_CORRELATION",
    "CONVOLUTION flips the kernel in every spatial dim",
)
CONV_STRIDE = field("stride", "int32[]", [1, 1], "step per spatial dim, >= 1")
CONV_PADDING = field("padding", "int32[]", [0, 0], "zeros added at both ends per spatial dim")
CONV_DILATION = field("dilation", "int32[]", [1, 1], "gap between kernel taps per spatial dim")
CONV_GROUP = field(
    "group", "uint32", 1, "channel groups; filter is (OC, IC/group, k...), both divisible"
)

NONLINE_MODE = enum(
    "nonlineMode",
    "NonlineMode",
    ["IDENTITY", "RELU", "SIGMOID", "H_SWISH"],
    "IDENTITY",
    "H_SWISH is x * min(max(x + 3, 0), 6) / 6",
)

CONVOLUTION = params(
    "Convolution",
    "Geometry of a convolution; defaults suit 2-D, other ranks must give 1 or 3 entries.",
    CONV_MODE,
    CONV_STRIDE,
    CONV_PADDING,
    CONV_DILATION,
    CONV_GROUP,
)

op(
    "ConvolutionForward",
    "dst[n, oc, o] = sum over ic in oc's group and k of src[n, ic, o*stride - padding + "
    "k*dilation] * filter[oc, ic, k]; out = (in + 2*padding - dilation*(k-1) - 1) / stride + 1.",
    inputs=["src", "filter"],
    outputs=["dst"],
    param=CONVOLUTION,
    layout_follows={"dst": "src"},
    grad=Grad(saves=("inputs",)),
)

op(
    "ConvolutionBackwardData",
    "Gradient of ConvolutionForward with respect to src (also conv_transpose): grad is "
    "(N, filter[1]*group, in...) with in = (out-1)*stride - 2*padding + dilation*(k-1) + 1 unless "
    "the caller presets grad's shape to any in whose forward output is diff's.",
    inputs=["filter", "diff"],
    outputs=["grad"],
    param=CONVOLUTION,
    layout_follows={"grad": "diff"},
    grad=Grad(saves=("inputs",)),
)

op(
    "ConvolutionBackwardFilter",
    "Gradient of ConvolutionForward with respect to filter: grad is (OC, IC/group, k...) with the "
    "largest k whose forward output is diff's, unless the caller presets grad's shape.",
    inputs=["src", "diff"],
    outputs=["grad"],
    param=CONVOLUTION,
    layout_follows={"grad": "src"},
    grad=Grad(saves=("inputs",)),
)

op(
    "ConvBias",
    "act(conv(src, filter) + bias + z): bias broadcasts to dst (usually 1 x OC x 1...), z is a "
    "residual of dst's shape; an input of ndim 0 is absent.",
    inputs=["src", "filter", "bias", "z"],
    outputs=["dst"],
    param=params(
        "ConvBias",
        "A convolution's geometry and the nonlinearity applied after bias and z.",
        NONLINE_MODE,
        CONV_MODE,
        CONV_STRIDE,
        CONV_PADDING,
        CONV_DILATION,
        CONV_GROUP,
    ),
    layout_follows={"dst": "src"},
    grad=Grad(saves=("inputs", "outputs")),
)

# The channel-blocked form of ConvBias that the graph's layout pass (src/graph/passes/
# propagate_channel_blocked.cpp) runs consecutive convolutions in; see ChannelBlock
# (tensor_shape.py) for the layout.
op(
    "ConvBiasBlocked",
    "ConvBias on channel-blocked tensors (ChannelBlock's layout): src is (N, ceil(IC/block), "
    "in..., block) or plain (N, IC, in...); filter and bias as ConvBias's; z (or ndim 0: absent) "
    "and dst are (N, ceil(OC/block), out..., block). Channels past IC/OC in the last block are "
    "zero in dst and must be zero in src and z.",
    inputs=["src", "filter", "bias", "z"],
    outputs=["dst"],
    param=params(
        "ConvBiasBlocked",
        "ConvBias's params, the channel block of z and dst (and of src when blocked), and whether "
        "the filter is a constant.",
        NONLINE_MODE,
        CONV_MODE,
        CONV_STRIDE,
        CONV_PADDING,
        CONV_DILATION,
        CONV_GROUP,
        field("block", "uint32", 16, "channels per block, >= 1; a blocked src's last dim"),
        field(
            "filter_is_const",
            "bool",
            False,
            "the caller promises that the values at the filter's address never change while the "
            "operator lives, so a kernel may keep a converted copy from its first call",
        ),
    ),
)

# The backward convolutions on ChannelBlock's layout, so that a traced training step keeps its
# activations and their gradients blocked from the first convolution to the head
# (src/graph/passes/propagate_channel_blocked.cpp).
op(
    "ConvolutionBackwardDataBlocked",
    "ConvolutionBackwardData with diff (N, ceil(OC/block), out..., block) and grad (N, "
    "ceil(IC/block), in..., block) in ChannelBlock's layout, block being diff's last dim; filter "
    "is plain. grad's spatial size is ConvolutionBackwardData's unless the caller presets grad's "
    "shape. Channels past OC must be zero in diff; those past IC are zero in grad.",
    inputs=["filter", "diff"],
    outputs=["grad"],
    param=CONVOLUTION,
)

op(
    "ConvolutionBackwardFilterBlocked",
    "ConvolutionBackwardFilter with src (N, ceil(IC/block), in..., block) and diff (N, "
    "ceil(OC/block), out..., block) in ChannelBlock's layout (one block, their last dim); grad is "
    "the plain (OC, IC/group, k...) filter gradient, whose shape the caller presets.",
    inputs=["src", "diff"],
    outputs=["grad"],
    param=CONVOLUTION,
)

# Deformable convolution (MegEngine's DeformableConv, "DCNv2"): each kernel tap of each output
# position reads src bilinearly at its regular place plus a learned offset, scaled by a learned
# mask. The channels of src split into dg deformable groups (dg from offset's channels), each with
# its own offsets and masks.
DEFORMABLE_CONV = params(
    "DeformableConv",
    "Geometry of a 2-D deformable convolution (cross-correlation only, as in MegEngine).",
    CONV_STRIDE,
    CONV_PADDING,
    CONV_DILATION,
    CONV_GROUP,
)

op(
    "DeformableConvForward",
    "dst[n, oc, oh, ow] = sum over ic in oc's group and taps k = (fh, fw) of filter[oc, ic, fh, "
    "fw] * mask[n, d*K + k, oh, ow] * bilinear(src[n, ic], oh*sh - ph + fh*dh + offset[n, "
    "2*(d*K + k), oh, ow], ow*sw - pw + fw*dw + offset[n, 2*(d*K + k) + 1, oh, ow]), K = FH*FW, "
    "d = ic / (IC / dg) the deformable group. offset is (N, 2*dg*K, OH, OW), mask (N, dg*K, OH, "
    "OW). A point with h <= -1, h >= IH, w <= -1 or w >= IW reads 0; its taps outside src read 0.",
    inputs=["src", "filter", "offset", "mask"],
    outputs=["dst"],
    param=DEFORMABLE_CONV,
    grad=Grad(saves=("inputs",)),
)

op(
    "DeformableConvBackwardData",
    "Gradients of DeformableConvForward for src (the adjoint of the bilinear taps), offset (the "
    "bilinear sample's slope, the right derivative at integer points, 0 outside the sampled "
    "range) and mask (the sample times filter times diff, summed), each of its input's shape.",
    inputs=["src", "filter", "offset", "mask", "diff"],
    outputs=["src_grad", "offset_grad", "mask_grad"],
    param=DEFORMABLE_CONV,
)

op(
    "DeformableConvBackwardFilter",
    "Gradient of DeformableConvForward for filter: the masked samples times diff, summed over "
    "batch and output positions. grad's shape (OC, IC/group, FH, FW) is preset by the caller.",
    inputs=["src", "offset", "mask", "diff"],
    outputs=["grad"],
    param=DEFORMABLE_CONV,
)

# Region-restricted convolution (MegEngine's RegionRestrictedConvolution): a tap contributes only
# where the input position's region id equals the output position's.
REGION_RESTRICTED_CONV = params(
    "RegionRestrictedConvolution",
    "Geometry of a 2-D region-restricted convolution (cross-correlation only, as in MegEngine).",
    CONV_STRIDE,
    CONV_PADDING,
    CONV_DILATION,
    CONV_GROUP,
)

op(
    "RegionRestrictedConvolutionForward",
    "dst[n, oc, oh, ow] = sum over ic in oc's group and taps (fh, fw) whose input position (ih, "
    "iw) = (oh*sh - ph + fh*dh, ow*sw - pw + fw*dw) lies in src and has rin[n, ih, iw] == "
    "rout[n, oh, ow] of src[n, ic, ih, iw] * filter[oc, ic, fh, fw]. rin (N, IH, IW) and rout "
    "(N, OH, OW) are region ids, both int32 or both uint8.",
    inputs=["src", "filter", "rin", "rout"],
    outputs=["dst"],
    param=REGION_RESTRICTED_CONV,
    grad=Grad(saves=("inputs",)),
)

op(
    "RegionRestrictedConvolutionBackwardData",
    "Gradient of RegionRestrictedConvolutionForward for src: diff scattered back through the taps "
    "whose regions match. grad's shape (N, IC, IH, IW) is preset by the caller.",
    inputs=["filter", "diff", "rin", "rout"],
    outputs=["grad"],
    param=REGION_RESTRICTED_CONV,
)

op(
    "RegionRestrictedConvolutionBackwardFilter",
    "Gradient of RegionRestrictedConvolutionForward for filter: src times diff over the taps whose "
    "regions match. grad's shape (OC, IC/group, FH, FW) is preset by the caller.",
    inputs=["src", "diff", "rin", "rout"],
    outputs=["grad"],
    param=REGION_RESTRICTED_CONV,
)
