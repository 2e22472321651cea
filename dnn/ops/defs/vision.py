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
