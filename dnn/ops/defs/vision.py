# Image-geometry operators (MegEngine's F.vision): perspective warps of NCHW images.
# The DSL (params, field, enum, op) is documented in dnn/ops/opgen/model.py.

WARP_PERSPECTIVE = params(
    "WarpPerspective",
    "Output size and border handling of a bilinear perspective warp (MegEngine's "
    "F.vision.warp_perspective in NCHW).",
    enum(
        "bmode",
        "BorderMode",
        ["REPLICATE", "REFLECT", "REFLECT_101", "WRAP", "CONSTANT"],
        "REPLICATE",
        "where a tap outside src reads (OpenCV's names): REPLICATE the edge (aaa|abc|ccc), REFLECT "
        "mirrors with the edge (cba|abc|cba), REFLECT_101 without it (cb|abc|ba), WRAP tiles "
        "(abc|abc|abc), CONSTANT reads border_val",
    ),
    field("border_val", "float32", 0.0, "value of taps outside src in CONSTANT mode"),
    field("out_h", "uint32", 1, "output height"),
    field("out_w", "uint32", 1, "output width"),
)

op(
    "WarpPerspective",
    "dst[n, c, h, w] is src[mat_idx[n], c] sampled bilinearly at ((M00 w + M01 h + M02) / d, "
    "(M10 w + M11 h + M12) / d), d = M20 w + M21 h + M22, M = mat[n] (N, 3, 3) float32, mat_idx "
    "(N,) int32 in [0, src batch). A pixel whose source point is not finite is border_val in "
    "CONSTANT mode and NaN otherwise.",
    inputs=["src", "mat", "mat_idx"],
    outputs=["dst"],
    param=WARP_PERSPECTIVE,
    grad=Grad(saves=("inputs",)),
)

op(
    "WarpPerspectiveBackwardData",
    "Gradient of WarpPerspective for src: scatters diff (N, C, out_h, out_w) onto grad, whose "
    "shape (src batch, C, H, W) the caller sets, with the forward taps' weights.",
    inputs=["mat", "mat_idx", "diff"],
    outputs=["grad"],
    param=WARP_PERSPECTIVE,
)

op(
    "WarpPerspectiveBackwardMat",
    "Gradient of WarpPerspective for mat (N, 3, 3): the bilinear sample's slope along the source "
    "point, through the projection, summed over channels and pixels.",
    inputs=["src", "mat", "mat_idx", "diff"],
    outputs=["grad"],
    param=WARP_PERSPECTIVE,
)

ROI_ALIGN = params(
    "ROIAlign",
    "Output size, sampling grid and pooling of RoI align (MegEngine's F.vision.roi_align, NCHW).",
    enum(
        "mode",
        "Mode",
        ["MAX", "AVERAGE"],
        "MAX",
        "how a bin's bilinear samples combine: their maximum or their mean",
    ),
    field("spatial_scale", "float32", 1.0, "factor from roi coordinates to src pixels"),
    field("offset", "float32", 0.0, "subtracted from the scaled coordinates (0.5 when aligned)"),
    field("pooled_height", "uint32", 1, "output height"),
    field("pooled_width", "uint32", 1, "output width"),
    field(
        "sample_height",
        "uint32",
        2,
        "samples per bin down; 0: ceil(roi height / pooled_height), at least 1, per roi",
    ),
    field(
        "sample_width",
        "uint32",
        2,
        "samples per bin across; 0: ceil(roi width / pooled_width), at least 1, per roi",
    ),
)

op(
    "ROIAlign",
    "dst[k, c, ph, pw] pools the bilinear samples of bin (ph, pw) of roi k over src[b, c], rois "
    "(K, 5) float rows (b, x1, y1, x2, y2), b truncated to an integer in [0, src batch). The roi "
    "spans x1 s - offset to max(x2 s - offset, its start) (s = spatial_scale), likewise in y, "
    "cut into pooled_height x pooled_width bins with a regular grid of samples at the centres "
    "of equal sub-bins; a sample reads zero beyond the image (MegDNN's rule: a tap outside "
    "counts as 0). index (K, C, ph, pw) int32 is the argmax sample's position in its bin's "
    "grid (row-major) in MAX mode, -1 in AVERAGE mode.",
    inputs=["src", "rois"],
    outputs=["dst", "index"],
    param=ROI_ALIGN,
    grad=Grad(saves=("inputs", "outputs")),
)

op(
    "ROIAlignBackward",
    "Gradient of ROIAlign for src: scatters diff (K, C, ph, pw) onto grad, whose shape the "
    "caller sets, through the argmax sample's taps (MAX, from the forward's index) or every "
    "sample's taps divided by their count (AVERAGE).",
    inputs=["diff", "rois", "index"],
    outputs=["grad"],
    param=ROI_ALIGN,
)

ROI_POOLING = params(
    "ROIPooling",
    "Output size, scale and pooling of RoI pooling (MegEngine's F.vision.roi_pooling, NCHW).",
    enum("mode", "Mode", ["MAX", "AVERAGE"], "MAX", "a bin's maximum or mean"),
    field("scale", "float32", 1.0, "factor from roi coordinates to src pixels"),
    field("pooled_height", "uint32", 1, "output height"),
    field("pooled_width", "uint32", 1, "output width"),
)

op(
    "ROIPooling",
    "dst[k, c, ph, pw] pools src[b, c] over bin (ph, pw) of roi k, rois (K, 5) float rows (b, "
    "x1, y1, x2, y2), b truncated to an integer in [0, src batch). MegDNN's integer bins: the "
    "roi's corners are round(x s) (s = scale, float32, halves away from zero), its extent end - "
    "start + 1 pixels (at least 1), bin ph the rows floor(ph e / pooled_height) to ceil((ph + 1) "
    "e / pooled_height) past the start, clipped to the image; an empty bin is 0. index (K, C, "
    "ph, pw) int32 is the argmax pixel's h * W + w in MAX mode (-1 for an empty bin), -1 in "
    "AVERAGE mode.",
    inputs=["src", "rois"],
    outputs=["dst", "index"],
    param=ROI_POOLING,
    grad=Grad(saves=("inputs", "outputs")),
)

op(
    "ROIPoolingBackward",
    "Gradient of ROIPooling for src: scatters diff (K, C, ph, pw) onto grad, whose shape the "
    "caller sets, at the argmax pixel (MAX, from the forward's index) or spread evenly over the "
    "bin (AVERAGE).",
    inputs=["diff", "rois", "index"],
    outputs=["grad"],
    param=ROI_POOLING,
)

REMAP = params(
    "Remap",
    "Interpolation and border handling of a remap (MegEngine's F.vision.remap, NCHW).",
    enum(
        "imode",
        "InterpolationMode",
        ["LINEAR", "NEAREST"],
        "LINEAR",
        "LINEAR: bilinear from the four pixels around the point; NEAREST: the pixel at the "
        "point's coordinates rounded half to even",
    ),
    enum(
        "border_type",
        "BorderMode",
        ["REPLICATE", "REFLECT", "REFLECT_101", "WRAP", "CONSTANT"],
        "REPLICATE",
        "where a tap outside src reads, as WarpPerspective's bmode (OpenCV's names); CONSTANT "
        "reads scalar",
    ),
    field("scalar", "float32", 0.0, "value of taps outside src in CONSTANT mode"),
)

op(
    "Remap",
    "dst[n, c, h, w] is src[n, c] sampled at (x, y) = map_xy[n, h, w] (map_xy (N, OH, OW, 2) "
    "float32, one map per image). A point that is not finite is scalar in CONSTANT mode and NaN "
    "otherwise.",
    inputs=["src", "map_xy"],
    outputs=["dst"],
    param=REMAP,
    grad=Grad(saves=("inputs",)),
)

op(
    "RemapBackwardData",
    "Gradient of Remap for src: scatters diff (N, C, OH, OW) onto grad, whose shape (N, C, H, W) "
    "the caller sets, with the forward taps' weights.",
    inputs=["map_xy", "diff"],
    outputs=["grad"],
    param=REMAP,
)

op(
    "RemapBackwardMat",
    "Gradient of Remap for map_xy (N, OH, OW, 2) float32: the bilinear sample's slope along x "
    "and y summed over channels (LINEAR); zero for NEAREST, piecewise constant in the point.",
    inputs=["src", "map_xy", "diff"],
    outputs=["grad"],
    param=REMAP,
)

CORRELATION = params(
    "Correlation",
    "Window, displacements and comparison of FlowNet's correlation layer (MegEngine's "
    "F.vision.correlation).",
    enum(
        "format",
        "Format",
        ["NCHW", "NHWC"],
        "NCHW",
        "layout of data1, data2 and dst; only NCHW is implemented (MegDNN's rule), NHWC is "
        "rejected",
    ),
    field("kernel_size", "uint32", 1, "side of the square window compared, odd"),
    field("max_displacement", "uint32", 1, "largest offset of data2's window from data1's"),
    field("stride1", "uint32", 1, "step between the windows of data1 (output pixels)"),
    field("stride2", "uint32", 1, "step between the displacements compared"),
    field("pad_size", "uint32", 0, "zeros added around data1 and data2 on every side"),
    field(
        "is_multiply",
        "bool",
        True,
        "compare by products (true) or absolute differences (false)",
    ),
)

op(
    "Correlation",
    "dst[n, d, y, x] = sum over window taps (i, j) in [-r, r]^2 and channels c of f(data1[n, c, "
    "y1 + j, x1 + i], data2[n, c, y1 + dy + j, x1 + dx + i]) / (k^2 C), k = kernel_size, r = (k "
    "- 1) / 2, (y1, x1) = (y, x) stride1 + r + max_displacement - pad_size, displacement d = (dy "
    "/ stride2 + R) (2R + 1) + dx / stride2 + R with R = max_displacement / stride2 and dy, dx "
    "multiples of stride2 in [-R stride2, R stride2]; a pixel outside the image reads 0; f(a, b) "
    "= a b (is_multiply) or |a - b|. data1 and data2 (N, C, H, W) alike, dst (N, (2R + 1)^2, "
    "ceil((H + 2 pad_size - 2 (max_displacement + r)) / stride1), likewise in W).",
    inputs=["data1", "data2"],
    outputs=["dst"],
    param=CORRELATION,
    grad=Grad(saves=("inputs",)),
)

op(
    "CorrelationBackwardData1",
    "Gradient of Correlation for data1: diff (the forward's dst shape) through every tap, "
    "times data2's pixel (is_multiply) or the sign of data1's minus data2's (+1 where data1 is "
    "greater, -1 otherwise, MegDNN's choice at a tie).",
    inputs=["diff", "data1", "data2"],
    outputs=["grad1"],
    param=CORRELATION,
)

op(
    "CorrelationBackwardData2",
    "Gradient of Correlation for data2: diff through every tap, times data1's pixel "
    "(is_multiply, 0 outside the image) or -1 where data1's pixel is at least data2's, +1 "
    "otherwise.",
    inputs=["diff", "data1", "data2"],
    outputs=["grad2"],
    param=CORRELATION,
)

DEFORMABLE_PSROI_POOLING = params(
    "DeformablePSROIPooling",
    "Bins, samples and offsets of deformable RoI pooling (MegEngine's "
    "F.deformable_psroi_pooling, NCHW).",
    field("no_trans", "bool", True, "ignore trans: bins are not moved"),
    field("spatial_scale", "float32", 1.0, "factor from roi coordinates to src pixels"),
    field("trans_std", "float32", 1.0, "factor of trans's offsets"),
    field("pooled_h", "uint32", 1, "output height"),
    field("pooled_w", "uint32", 1, "output width"),
    field("part_size", "uint32", 1, "side of the grid of parts trans gives offsets for"),
    field("sample_per_part", "uint32", 1, "samples per bin along each axis"),
)

op(
    "DeformablePSROIPooling",
    "dst[k, c, ph, pw] is the mean of src[b, c] sampled bilinearly at a sample_per_part^2 grid "
    "of points of bin (ph, pw) of roi k, rois (K, 5) float rows (b, x1, y1, x2, y2), b "
    "truncated to an integer in [0, src batch). MegDNN's geometry: the roi spans round(x1) s - "
    "0.5 to (round(x2) + 1) s - 0.5 (s = spatial_scale, round halves away from zero; width at "
    "least 0.1), likewise in y, cut into pooled_h x pooled_w bins; the samples start at the "
    "bin's corner, one sub-bin (bin / sample_per_part) apart, all moved by (trans[k, 0, i, j], "
    "trans[k, 1, i, j]) trans_std times the roi's width and height unless no_trans, (i, j) = "
    "(floor(ph part_size / pooled_h), floor(pw part_size / pooled_w)). A sample more than half "
    "a pixel outside the image is skipped, the others clamped into it. count (K, C, pooled_h, "
    "pooled_w) of src's dtype is the number of samples taken, dst 0 where none. trans is 4-D; "
    "unless no_trans it is (at least K, 2, pooled_h, pooled_w) with part_size equal to pooled_h "
    "and pooled_w.",
    inputs=["src", "rois", "trans"],
    outputs=["dst", "count"],
    param=DEFORMABLE_PSROI_POOLING,
    grad=Grad(saves=("inputs", "outputs")),
)

op(
    "DeformablePSROIPoolingBackward",
    "Gradients of DeformablePSROIPooling for src and trans: diff / count spread over each "
    "sample's four taps, and (unless no_trans) each sample's bilinear slope at its clamped "
    "point times diff / count, trans_std and the roi's width (x) or height (y) added into its "
    "part's offsets; zero for trans when no_trans.",
    inputs=["src", "rois", "trans", "diff", "count"],
    outputs=["src_grad", "trans_grad"],
    param=DEFORMABLE_PSROI_POOLING,
)

op(
    "NMSKeep",
    "Greedy non-maximum suppression of boxes already sorted by score (MegEngine's NMSKeep): in "
    "each batch item of boxes (B, N, 4) float32 rows (x1, y1, x2, y2), box i is kept unless "
    "a box kept before it overlaps it, inter > (area_i + area_j - inter) * iou_thresh in "
    "float32 (no division: a zero union suppresses nothing), until max_output are kept. "
    "indices (B, max_output) int32 lists the kept boxes in input order, its entries past the "
    "count repeating the last kept index (0 where none is); count (B,) int32 is the number kept. "
    "The output shapes follow from the input's shape and the param (static); the count gives "
    "the data-dependent part.",
    inputs=["boxes"],
    outputs=["indices", "count"],
    param=params(
        "NMSKeep",
        "IoU threshold and output capacity of NMSKeep (MegEngine's param, the same order).",
        field(
            "iou_thresh", "float32", 0.0, "a box whose IoU with a kept box exceeds this is dropped"
        ),
        field("max_output", "uint32", 0, "boxes kept at most per batch item: indices' last axis"),
    ),
)
