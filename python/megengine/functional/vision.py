"""Image functions (``F.vision.nms``, ``F.vision.cvt_color``, ...), as MegEngine's
``megengine.functional.vision``.

``interpolate`` is :func:`megengine.functional.nn.interpolate`. ``nms`` runs the Argsort and
NMSKeep ops and keeps the part of NMSKeep's fixed-size output its count gives (the result's
length depends on the data, also in a traced graph); ``cvt_color`` is composed of elementwise ops and
is differentiable. ``warp_perspective`` runs the WarpPerspective op (``dnn/ops/defs/vision.py``),
differentiable for the image and the matrices; ``warp_affine`` is that warp with the projective
row (0, 0, 1). ``remap`` runs the Remap op, differentiable for the image and the map;
``roi_align`` and ``roi_pooling`` run the ROIAlign and ROIPooling ops, differentiable for the
image. ``correlation`` runs the Correlation op (FlowNet's correlation layer), differentiable for
both images; ``deformable_psroi_pooling`` (exported by ``F.nn``, as MegEngine's) runs the
DeformablePSROIPooling op, differentiable for the image and the offsets.
"""

import numpy as np

from ..core import _imperative_rt as _rt
from ..core.ops import builtin
from ..core.tensor import shape_dim as _shape_dim
from ..core.tensor import symbolic_shape as _symbolic_shape
from ..core.tensor.array_method import Tensor, as_tensor, cached_op
from ..core.tensor.array_method import elemwise as _elemwise
from ..core.tensor.array_method import transpose as _dimshuffle
from .nn import _float_input, _int_input, _tuple, interpolate
from .tensor import broadcast_to, concat

__all__ = [
    "correlation",
    "cvt_color",
    "interpolate",
    "nms",
    "remap",
    "roi_align",
    "roi_pooling",
    "warp_affine",
    "warp_perspective",
]


def nms(boxes, scores, iou_thresh, max_output=None):
    """Greedy non-maximum suppression: visits the boxes from the highest score down and keeps a
    box unless its intersection-over-union with a box already kept is above ``iou_thresh``.

    As MegEngine's: the boxes are sorted by score (Argsort), gathered in that order and given to
    the NMSKeep op (``dnn/ops/defs/vision.py``), whose indices are cut to the count it returns.
    The overlap test is NMSKeep's, ``inter > union * iou_thresh`` in float32. Under
    :func:`~megengine.jit.trace` the ops are recorded, so a trace replays its compiled graph on
    new boxes and scores (the result's length follows the data) and ``trace.dump`` writes them.
    With ``max_output`` None the capacity is the number of boxes of the call that was traced
    (MegEngine's rule), so a dump refuses to declare that dimension dynamic. The result carries
    no gradient. Of equal scores the later box comes first (MegEngine's descending Argsort).

    Args:
        boxes: (N, 4) boxes as (x1, y1, x2, y2), with x1 <= x2 and y1 <= y2; read as float32.
        scores: (N,) score of each box.
        iou_thresh: a box whose IoU with a kept box exceeds this is dropped.
        max_output: keep at most this many boxes; all that survive when None.

    Returns:
        an int32 Tensor of the kept boxes' indices into ``boxes``, highest score first.

    Examples:
        >>> import megengine.functional as F
        >>> boxes = [[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]]
        >>> F.vision.nms(boxes, [0.9, 0.8, 0.7], iou_thresh=0.5).numpy().tolist()
        [0, 2]
        >>> F.vision.nms(boxes, [0.9, 0.8, 0.7], iou_thresh=0.5, max_output=1).numpy().tolist()
        [0]
    """
    fname = "nms"
    b = as_tensor(boxes)
    s = as_tensor(scores)
    if b.ndim != 2 or b.shape[1] != 4:
        raise ValueError(f"{fname}: boxes must have shape (N, 4), got {b.shape}")
    if s.ndim != 1:
        raise ValueError(f"{fname}: scores must have shape (N,), got {s.shape}")
    if b.shape[0] != s.shape[0]:
        raise ValueError(f"{fname}: {b.shape[0]} boxes but {s.shape[0]} scores")
    if max_output is not None and not 0 <= int(max_output) < 2**31:
        raise ValueError(f"{fname}: max_output must be >= 0 and < 2**31, got {max_output}")
    if s._dtype_name == "bool":
        raise TypeError(f"{fname}: scores must be numbers, got dtype bool")
    n = b.shape[0]
    if max_output is None:
        limit = n
        if _shape_dim.follows_shapes():
            # The op holds the traced call's box count: noted, so that trace.dump refuses to
            # make that dimension dynamic rather than cut another call's boxes to it.
            _shape_dim.TracedDim.of(b, 0, n).bake("F.vision.nms's capacity (max_output=None)")
    else:
        limit = int(max_output)
    b = b.detach()
    if b._dtype_name != "float32":
        b = b.astype("float32")
    order = _rt.apply(cached_op(builtin.Argsort, order="DESCENDING"), s.detach())[1]
    ranked = _rt.apply(cached_op(builtin.IndexingMultiAxisVec, axes=(0,)), b, order)[0]
    ranked = _rt.apply(cached_op(builtin.AddAxis, axis=(0,)), ranked)[0]
    op = cached_op(builtin.NMSKeep, iou_thresh=float(iou_thresh), max_output=limit)
    indices, count = _rt.apply(op, ranked)
    row = _rt.apply(cached_op(builtin.RemoveAxis, axis=(0,)), indices)[0]
    # The count read for the kept part's shape: under a trace the graph reads it from the op's
    # output on every run (TakePrefix), so the read steers nothing the replay repeats.
    tracing = _symbolic_shape.active()
    kept = int((count._numpy_untraced() if tracing else count.numpy())[0])
    row = _symbolic_shape.take_prefix(row, count, kept)
    return _rt.apply(cached_op(builtin.IndexingMultiAxisVec, axes=(0,)), order, row)[0]


# Each mode: (input channels, needs a float input, converter). The weights are those of
# MegEngine's float kernels, whose RGB2YUV reads its first channel as blue and whose YUV2RGB writes
# blue first (OpenCV's order), so that one inverts the other.
def _gray(c0, c1, c2):
    return lambda ch: [ch[0] * c0 + ch[1] * c1 + ch[2] * c2]


def _rgb2yuv(ch):
    y = ch[0] * 0.114 + ch[1] * 0.587 + ch[2] * 0.299
    return [y, (ch[0] - y) * 0.492 + 0.5, (ch[2] - y) * 0.877 + 0.5]


def _yuv2rgb(ch):
    y, cr, cb = ch[0], ch[1] - 0.5, ch[2] - 0.5
    return [y + cr * 2.032, y + cb * -0.581 + cr * -0.395, y + cb * 1.140]


_CVT_MODES = {
    "RGB2GRAY": (3, True, _gray(0.299, 0.587, 0.114)),
    "BGR2GRAY": (3, True, _gray(0.114, 0.587, 0.299)),
    "RGB2YUV": (3, True, _rgb2yuv),
    "YUV2RGB": (3, True, _yuv2rgb),
    "RGB2BGR": (3, False, lambda ch: ch[::-1]),
    "BGR2RGB": (3, False, lambda ch: ch[::-1]),
    "GRAY2RGB": (1, False, lambda ch: ch * 3),
    "RGBA2RGB": (4, False, lambda ch: ch[:3]),
    "RGBA2BGR": (4, False, lambda ch: ch[2::-1]),
}


def cvt_color(inp, mode=""):
    """Converts (N, H, W, C) images (channels last) between colour formats.

    Modes: "RGB2GRAY" and "BGR2GRAY" (Y = 0.299 R + 0.587 G + 0.114 B), "RGB2YUV" and
    "YUV2RGB" (the weights of MegEngine's float kernels, which take and give the colour channels
    blue first, so that YUV2RGB inverts RGB2YUV), which need a float input; and the channel
    moves "RGB2BGR", "BGR2RGB", "GRAY2RGB", "RGBA2RGB", "RGBA2BGR", which take any dtype. The result is differentiable.

    Args:
        inp: images of shape (N, H, W, C), C being the mode's input channel count.
        mode: one of the modes above (case-insensitive).

    Returns:
        a Tensor of shape (N, H, W, C_out) and ``inp``'s dtype.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.array([[[[1.0, 0.5, 0.0]]]], dtype="float32")
        >>> print(F.vision.cvt_color(x, "RGB2GRAY").numpy())
        [[[[0.5925]]]]
        >>> F.vision.cvt_color(x, "RGB2BGR").numpy().tolist()
        [[[[0.0, 0.5, 1.0]]]]
    """
    fname = "cvt_color"
    key = str(mode).upper()
    if key not in _CVT_MODES:
        raise ValueError(f"{fname}: mode must be one of {sorted(_CVT_MODES)}, got {mode!r}")
    channels, needs_float, convert = _CVT_MODES[key]
    x = as_tensor(inp)
    if x.ndim != 4 or x.shape[3] != channels:
        raise ValueError(
            f"{fname}: mode {key} needs (N, H, W, {channels}) images, got shape {x.shape}"
        )
    if needs_float and x._dtype_name not in ("float32", "float16", "bfloat16"):
        raise TypeError(f"{fname}: mode {key} needs a float input, got dtype {x._dtype_name}")
    planes = [x[:, :, :, c : c + 1] for c in range(channels)]
    out = convert(planes)
    return out[0] if len(out) == 1 else concat(out, axis=3)


_BORDER_MODES = {
    "replicate": "REPLICATE",
    "reflect": "REFLECT",
    "reflect_101": "REFLECT_101",
    "wrap": "WRAP",
    "constant": "CONSTANT",
}


def _warp(fname, inp, mat, out_shape, mat_idx, border_mode, border_val, format, interp_mode):
    """Checks a warp's arguments and runs WarpPerspective on (N, 3, 3) matrices."""
    x = as_tensor(inp)
    byte_dtype = x._dtype_name if x._dtype_name in ("int8", "uint8") else None
    if byte_dtype:
        # MegEngine warps 8-bit images too: here in float32 (the border value as given),
        # rounded to the nearest value the pixel type holds.
        x = x.astype("float32")
    x = _float_input(x, fname)
    if format not in ("NCHW", "NHWC"):
        raise ValueError(f"{fname}: format must be 'NCHW' or 'NHWC', got {format!r}")
    if x.ndim != 4:
        raise ValueError(f"{fname}: inp must be a 4-dim {format} image batch, got {x.shape}")
    if str(interp_mode).lower() != "linear":
        raise ValueError(f"{fname}: only interp_mode 'linear' is supported, got {interp_mode!r}")
    bmode = _BORDER_MODES.get(str(border_mode).lower())
    if bmode is None:
        raise ValueError(
            f"{fname}: border_mode must be one of {sorted(_BORDER_MODES)}, got {border_mode!r}"
        )
    if isinstance(out_shape, Tensor):
        out_shape = out_shape.numpy().tolist()
    out_h, out_w = _tuple(out_shape, 2, fname, "out_shape")
    if out_h < 0 or out_w < 0:
        raise ValueError(f"{fname}: out_shape must not be negative, got {(out_h, out_w)}")
    if format == "NHWC":
        x = _dimshuffle(x, (0, 3, 1, 2))
    if mat_idx is None:
        if mat.shape[0] != x.shape[0]:
            raise ValueError(
                f"{fname}: {mat.shape[0]} matrices for {x.shape[0]} images; give mat_idx to "
                "pair them otherwise"
            )
        idx = Tensor(np.arange(mat.shape[0], dtype=np.int32), device=x.device)
    else:
        if not isinstance(mat_idx, Tensor) and np.size(mat_idx) == 0:
            mat_idx = np.zeros(0, np.int32)  # an empty list has no integer dtype of its own
        idx = _int_input(mat_idx, fname, "mat_idx")
        if idx.shape != (mat.shape[0],):
            raise ValueError(
                f"{fname}: mat_idx must have shape ({mat.shape[0]},), one per matrix, got "
                f"{idx.shape}"
            )
    op = cached_op(
        builtin.WarpPerspective,
        bmode=bmode,
        border_val=float(border_val),
        out_h=out_h,
        out_w=out_w,
    )
    y = _rt.apply(op, x, mat, idx)[0]
    if byte_dtype:
        info = np.iinfo(byte_dtype)
        y = _elemwise("ROUND", y)
        y = _elemwise("MIN", _elemwise("MAX", y, float(info.min)), float(info.max))
        y = y.astype(byte_dtype)
    return _dimshuffle(y, (0, 2, 3, 1)) if format == "NHWC" else y


def _float32_mat(mat, rows, fname):
    m = as_tensor(mat)
    if m.ndim != 3 or m.shape[1:] != (rows, 3):
        raise ValueError(f"{fname}: mat must have shape (N, {rows}, 3), got {m.shape}")
    return m if m._dtype_name == "float32" else m.astype("float32")


def warp_perspective(
    inp,
    mat,
    out_shape,
    mat_idx=None,
    border_mode="replicate",
    border_val=0.0,
    format="NCHW",
    interp_mode="linear",
):
    r"""Applies a perspective transformation to batched 2D images, sampling bilinearly:

    .. math::
        \text{out}(n, c, h, w) = \text{inp}\left(n, c,
            \frac{M_{10}w + M_{11}h + M_{12}}{M_{20}w + M_{21}h + M_{22}},
            \frac{M_{00}w + M_{01}h + M_{02}}{M_{20}w + M_{21}h + M_{22}}\right)

    with M = mat[n] mapping output pixels to input points (the inverse of the matrix that
    ``cv2.warpPerspective`` takes). Differentiable for ``inp`` and ``mat``.

    Args:
        inp: images, (N, C, H, W) or with format "NHWC" (N, H, W, C); a float dtype, or
            int8/uint8 (warped in float32 and rounded to the nearest value of the type).
        mat: (M, 3, 3) matrices.
        out_shape: (OH, OW), the output's spatial size.
        mat_idx: (M,) index of the image each matrix warps; None pairs matrix i with image i
            (then M must equal N).
        border_mode: where a sample outside the image reads: "replicate", "reflect",
            "reflect_101", "wrap" or "constant" (border_val).
        border_val: the value outside the image in "constant" mode; a pixel whose source point
            is not finite (a zero denominator) is border_val there, NaN in the other modes.
        format: "NCHW" or "NHWC", the layout of inp and of the result.
        interp_mode: "linear" (the only mode).

    Returns:
        the warped images, (M, C, OH, OW) (or (M, OH, OW, C) in NHWC) of inp's dtype.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
        >>> shift = np.array([[[1, 0, 1], [0, 1, 1], [0, 0, 1]]], dtype="float32")
        >>> F.vision.warp_perspective(x, shift, (2, 2)).numpy().tolist()
        [[[[5.0, 6.0], [9.0, 10.0]]]]
    """
    fname = "warp_perspective"
    m = _float32_mat(mat, 3, fname)
    return _warp(fname, inp, m, out_shape, mat_idx, border_mode, border_val, format, interp_mode)


def warp_affine(
    inp,
    mat,
    out_shape,
    border_mode="replicate",
    border_val=0.0,
    format="NHWC",
    interp_mode="linear",
):
    """Applies an affine transformation to batched 2D images, sampling bilinearly: output pixel
    (h, w) of image n reads the input at x = M00 w + M01 h + M02, y = M10 w + M11 h + M12,
    M = mat[n]. It is :func:`warp_perspective` with the matrices' third row (0, 0, 1), and
    differentiable as that is.

    Args:
        inp: images, (N, H, W, C) by default (format "NHWC", MegEngine's default) or
            (N, C, H, W); a float dtype, or int8/uint8 (as in :func:`warp_perspective`).
        mat: (N, 2, 3) matrices, one per image.
        out_shape: (OH, OW), the output's spatial size.
        border_mode: "replicate", "reflect", "reflect_101", "wrap" or "constant".
        border_val: the value outside the image in "constant" mode.
        format: "NHWC" or "NCHW", the layout of inp and of the result.
        interp_mode: "linear" (the only mode).

    Returns:
        the warped images in inp's layout and dtype.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(9, dtype="float32").reshape(1, 3, 3, 1)
        >>> flip = np.array([[[-1, 0, 2], [0, 1, 0]]], dtype="float32")
        >>> F.vision.warp_affine(x, flip, (1, 3))[..., 0].numpy().tolist()
        [[[2.0, 1.0, 0.0]]]
    """
    fname = "warp_affine"
    m = _float32_mat(mat, 2, fname)
    last = Tensor(np.array([[[0, 0, 1]]], np.float32), device=m.device)
    m = concat([m, broadcast_to(last, (m.shape[0], 1, 3))], axis=1)
    return _warp(fname, inp, m, out_shape, None, border_mode, border_val, format, interp_mode)


def _rois(rois, fname):
    """rois as a (K, 5) float tensor (float32 unless already float)."""
    r = as_tensor(rois)
    if r._dtype_name not in ("float32", "float16", "bfloat16"):
        r = r.astype("float32")
    if r.ndim != 2 or r.shape[1] != 5:
        raise ValueError(
            f"{fname}: rois must have shape (K, 5), rows (batch index, x1, y1, x2, y2), got "
            f"{r.shape}"
        )
    return r


def _pooled_shape(output_shape, fname):
    ph, pw = _tuple(output_shape, 2, fname, "output_shape")
    if ph < 0 or pw < 0:
        raise ValueError(f"{fname}: output_shape must not be negative, got {(ph, pw)}")
    return ph, pw


def _nchw(inp, fname):
    if inp.ndim != 4:
        raise ValueError(f"{fname}: inp must be a 4-dim (N, C, H, W) feature map, got {inp.shape}")
    return inp


def roi_align(
    inp,
    rois,
    output_shape,
    mode="average",
    spatial_scale=1.0,
    sample_points=2,
    aligned=True,
):
    r"""Applies RoI (Region of Interest) align on input feature, as described in Mask R-CNN.

    Each roi (idx, x1, y1, x2, y2) spans ``x1 * spatial_scale - offset`` to
    ``x2 * spatial_scale - offset`` (likewise in y; offset 0.5 when ``aligned``, else 0; an
    inverted roi is empty), cut into ``output_shape`` bins. Each bin is sampled on a regular
    grid of ``sample_points`` at the centres of equal sub-bins, bilinearly from the four pixels
    around each point, a pixel outside the image reading 0; the bin's value is the samples'
    mean ("average") or maximum ("max"). Differentiable for ``inp``.

    Args:
        inp: the input feature, ``(n, c, h, w)``; computed in float32 (other dtypes are
            converted, as MegEngine does).
        rois: ``(K, 5)`` boxes ``(idx, x1, y1, x2, y2)``; ``idx`` (truncated to an integer) is
            the image of the batch the box is taken from, in ``[0, n - 1]``.
        output_shape: ``(height, width)`` of each roi's output, or one int for both.
        mode: "max" or "average", how a bin's samples combine. Default: "average"
        spatial_scale: scales the boxes into the feature's pixels. Default: 1.0
        sample_points: samples per bin, ``(down, across)`` or one int for both; 0 takes about
            one sample per pixel of the bin (``ceil(bin size)``, at least 1; MegEngine 1.13
            gives zeros there). Default: 2
        aligned: shift the scaled boxes by -0.5, so that pixel centres sit at integer + 0.5.
            Default: True

    Returns:
        a float32 tensor ``(K, c, height, width)``.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
        >>> rois = np.array([[0, 0, 0, 2, 2], [0, 1, 1, 3, 4]], dtype="float32")
        >>> F.vision.roi_align(x, rois, (1, 2)).numpy().tolist()
        [[[[1.875, 3.0]]], [[[9.0, 10.0]]]]
        >>> y = F.vision.roi_align(x, rois, 1, mode="max", sample_points=(1, 2), aligned=False)
        >>> y.numpy().ravel().tolist()
        [5.5, 12.5]
    """
    fname = "roi_align"
    x = _nchw(as_tensor(inp), fname)
    if x._dtype_name != "float32":
        x = x.astype("float32")
    r = _rois(rois, fname)
    key = str(mode).lower()
    if key not in ("max", "average"):
        raise ValueError(f"{fname}: mode must be 'max' or 'average', got {mode!r}")
    ph, pw = _pooled_shape(output_shape, fname)
    sh, sw = _tuple(sample_points, 2, fname, "sample_points")
    if sh < 0 or sw < 0:
        raise ValueError(f"{fname}: sample_points must not be negative, got {(sh, sw)}")
    op = cached_op(
        builtin.ROIAlign,
        mode=key.upper(),
        spatial_scale=float(spatial_scale),
        offset=0.5 if aligned else 0.0,
        pooled_height=ph,
        pooled_width=pw,
        sample_height=sh,
        sample_width=sw,
    )
    return _rt.apply(op, x, r)[0]


def roi_pooling(inp, rois, output_shape, mode="max", scale=1.0):
    r"""Applies RoI (Region of Interest) pooling on input feature, as described in Faster RCNN.

    Each roi (idx, x1, y1, x2, y2) covers the pixels ``round(x1 * scale)`` to
    ``round(x2 * scale)`` (inclusive; likewise in y; at least one pixel), cut into
    ``output_shape`` bins of whole pixels (MegEngine's integer bins); a bin's value is its
    pixels' maximum ("max") or mean ("average"), 0 for a bin outside the image. Differentiable
    for ``inp``.

    Args:
        inp: the input feature, ``(n, c, h, w)``, a float dtype.
        rois: ``(K, 5)`` boxes ``(idx, x1, y1, x2, y2)``; ``idx`` (truncated to an integer) is
            the image of the batch the box is taken from, in ``[0, n - 1]``.
        output_shape: ``(height, width)`` of each roi's output, or one int for both.
        mode: "max" or "average", the pooling mode to be used. Default: "max"
        scale: maps the boxes onto the feature's pixels (0.5 for a feature of half the image's
            size). Default: 1.0

    Returns:
        a tensor ``(K, c, height, width)`` of inp's dtype.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
        >>> rois = np.array([[0, 0, 0, 2, 2], [0, 1, 1, 3, 4]], dtype="float32")
        >>> F.vision.roi_pooling(x, rois, (1, 2)).numpy().tolist()
        [[[[9.0, 10.0]]], [[[14.0, 15.0]]]]
        >>> F.vision.roi_pooling(x, rois, 2, mode="average").numpy()[1, 0].tolist()
        [[7.5, 8.5], [13.5, 14.5]]
    """
    fname = "roi_pooling"
    x = _nchw(_float_input(inp, fname), fname)
    r = _rois(rois, fname)
    key = str(mode).lower()
    if key not in ("max", "average"):
        raise ValueError(f"{fname}: mode must be 'max' or 'average', got {mode!r}")
    ph, pw = _pooled_shape(output_shape, fname)
    op = cached_op(
        builtin.ROIPooling,
        mode=key.upper(),
        scale=float(scale),
        pooled_height=ph,
        pooled_width=pw,
    )
    return _rt.apply(op, x, r)[0]


_INTERP_MODES = {"linear": "LINEAR", "nearest": "NEAREST"}


def remap(inp, map_xy, border_mode="replicate", scalar=0.0, interp_mode="linear"):
    r"""Applies remap transformation to batched 2D images: output pixel ``(h, w)`` of image n
    reads the input at the point ``(x, y) = map_xy[n, h, w]``.

    "linear" interpolates bilinearly between the four pixels around the point; "nearest" reads
    the pixel its coordinates round to (halves to even). A pixel outside the image reads by
    ``border_mode``. Differentiable for ``inp`` and (linear) for ``map_xy``.

    Args:
        inp: input images, ``(b, c, in_h, in_w)``, a float dtype.
        map_xy: ``(b, o_h, o_w, 2)`` points, ``map_xy[..., 0]`` the column (x, in
            ``[0, in_w - 1]`` inside the image) and ``map_xy[..., 1]`` the row (y); one map per
            image.
        border_mode: "replicate" (the edge pixel, default), "reflect", "reflect_101", "wrap"
            or "constant" (``scalar``). A point that is not finite reads ``scalar`` in
            "constant" mode, NaN otherwise.
        scalar: the value outside the image in "constant" mode. Default: 0
        interp_mode: "linear" (default) or "nearest".

    Returns:
        a tensor ``(b, c, o_h, o_w)`` of inp's dtype.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> inp = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> map_xy = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [0.0, 1.0]]],
        ...                   dtype=np.float32).reshape(1, 2, 2, 2)
        >>> F.vision.remap(inp, map_xy).numpy().tolist()
        [[[[1.0, 4.0], [4.0, 4.0]]]]
        >>> F.vision.remap(inp, map_xy + 0.5, interp_mode="nearest").numpy().tolist()
        [[[[2.0, 8.0], [8.0, 8.0]]]]
    """
    fname = "remap"
    x = _nchw(_float_input(inp, fname), fname)
    m = _float_input(map_xy, fname, "map_xy")
    if m._dtype_name != "float32":
        m = m.astype("float32")
    if m.ndim != 4 or m.shape[3] != 2 or m.shape[0] != x.shape[0]:
        raise ValueError(
            f"{fname}: map_xy must have shape ({x.shape[0]}, o_h, o_w, 2), one map per image, "
            f"got {m.shape}"
        )
    bmode = _BORDER_MODES.get(str(border_mode).lower())
    if bmode is None:
        raise ValueError(
            f"{fname}: border_mode must be one of {sorted(_BORDER_MODES)}, got {border_mode!r}"
        )
    imode = _INTERP_MODES.get(str(interp_mode).lower())
    if imode is None:
        raise ValueError(f"{fname}: interp_mode must be 'linear' or 'nearest', got {interp_mode!r}")
    op = cached_op(builtin.Remap, imode=imode, border_type=bmode, scalar=float(scalar))
    return _rt.apply(op, x, m)[0]


def _uint_param(value, fname, name, minimum=0):
    if isinstance(value, bool) or int(value) != value or int(value) < minimum:
        raise ValueError(f"{fname}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def correlation(
    data1,
    data2,
    kernel_size=1,
    max_displacement=1,
    stride1=1,
    stride2=1,
    pad_size=0,
    is_multiply=True,
):
    r"""Applies correlation to inputs: FlowNet's correlation layer, comparing windows of
    ``data1`` with windows of ``data2`` displaced by up to ``max_displacement`` pixels.

    Output channel ``d`` is one displacement ``(dy, dx)``, multiples of ``stride2`` in
    ``[-R * stride2, R * stride2]`` with ``R = max_displacement // stride2``, row-major
    (``d = (dy / stride2 + R) * (2R + 1) + dx / stride2 + R``). Output pixel ``(y, x)`` compares
    the ``kernel_size`` square window of ``data1`` centred at ``(y, x) * stride1 + r +
    max_displacement - pad_size`` (``r = (kernel_size - 1) // 2``) with the window of ``data2``
    moved by ``(dy, dx)``: the sum over the windows and the channels of the products (or of the
    absolute differences) divided by ``kernel_size ** 2 * C``; a pixel outside the image reads 0.
    Differentiable for both inputs.

    Args:
        data1: the first input, ``(N, C, H, W)`` float32 (NCHW only, as MegEngine's).
        data2: the second input, of data1's shape.
        kernel_size: the side of the windows compared, odd. Default: 1
        max_displacement: the largest displacement of data2's window, in pixels. Default: 1
        stride1: the step between the windows of data1 (output pixels). Default: 1
        stride2: the step between the displacements compared. Default: 1
        pad_size: zeros added on every side of both inputs. Default: 0
        is_multiply: compare by products (True) or by absolute differences (False).
            Default: True

    Returns:
        a tensor ``(N, (2R + 1) ** 2, OH, OW)`` with ``OH = ceil((H + 2 * pad_size - 2 *
        (max_displacement + r)) / stride1)``, likewise ``OW``.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> a = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
        >>> b = np.ones((1, 1, 4, 4), dtype="float32")
        >>> out = F.vision.correlation(a, b, max_displacement=1, pad_size=0)
        >>> out.shape
        (1, 9, 2, 2)
        >>> out[0, 4].numpy().tolist()
        [[5.0, 6.0], [9.0, 10.0]]
        >>> F.vision.correlation(a, 2 * b, is_multiply=False)[0, 0].numpy().tolist()
        [[3.0, 4.0], [7.0, 8.0]]
    """
    fname = "correlation"
    x1 = _float_input(data1, fname, "data1")
    x2 = _float_input(data2, fname, "data2")
    for name, x in (("data1", x1), ("data2", x2)):
        if x.ndim != 4:
            raise ValueError(f"{fname}: {name} must be a 4-dim (N, C, H, W) tensor, got {x.shape}")
    if x1.shape != x2.shape:
        raise ValueError(f"{fname}: data1 {x1.shape} and data2 {x2.shape} must have one shape")
    if x1._dtype_name != "float32":
        x1 = x1.astype("float32")
    if x2._dtype_name != "float32":
        x2 = x2.astype("float32")
    k = _uint_param(kernel_size, fname, "kernel_size", 1)
    if k % 2 == 0:
        raise ValueError(f"{fname}: kernel_size must be odd, got {kernel_size}")
    op = cached_op(
        builtin.Correlation,
        format="NCHW",
        kernel_size=k,
        max_displacement=_uint_param(max_displacement, fname, "max_displacement"),
        stride1=_uint_param(stride1, fname, "stride1", 1),
        stride2=_uint_param(stride2, fname, "stride2", 1),
        pad_size=_uint_param(pad_size, fname, "pad_size"),
        is_multiply=bool(is_multiply),
    )
    return _rt.apply(op, x1, x2)[0]


def deformable_psroi_pooling(
    inp,
    rois,
    trans,
    no_trans,
    part_size,
    pooled_h,
    pooled_w,
    sample_per_part,
    spatial_scale,
    trans_std=0.1,
):
    r"""Deformable PSROI (Position Sensitive Region of Interest) Pooling, as MegEngine's: each
    roi is cut into ``pooled_h x pooled_w`` bins, and each bin of each channel is the mean of
    ``sample_per_part ** 2`` bilinear samples of ``inp``, moved by learned offsets ``trans``
    unless ``no_trans``.

    MegDNN's geometry: roi ``(idx, x1, y1, x2, y2)`` spans ``round(x1) * spatial_scale - 0.5``
    to ``(round(x2) + 1) * spatial_scale - 0.5`` (likewise in y; at least 0.1 wide); a bin's
    samples start at its corner, one ``bin / sample_per_part`` apart, all moved by
    ``trans[k, 0, i, j] * trans_std`` times the roi's width across and ``trans[k, 1, i, j] *
    trans_std`` times its height down, ``(i, j)`` the bin's part. A sample more than half a
    pixel outside the image is skipped and the others are clamped into it; a bin without
    samples is 0. Differentiable for ``inp`` and ``trans`` (zero for trans when ``no_trans``).

    Args:
        inp: input feature map ``(N, C, H, W)`` float32.
        rois: the rois for feature pooling, ``(K, 5)`` rows ``(idx, x1, y1, x2, y2)``, ``idx``
            (truncated to an integer) an image of the batch.
        trans: input offset to psroi_pooling, 4-dim; read only when ``no_trans`` is False,
            when it must be ``(K or more, 2, pooled_h, pooled_w)``.
        no_trans: False to move the samples by ``trans``, True to ignore it.
        part_size: part size, the side of the grid of parts trans gives offsets for; with
            trans, it must equal ``pooled_h`` and ``pooled_w`` (what MegEngine checks of
            trans's shape).
        pooled_h: output height.
        pooled_w: output width.
        sample_per_part: sample points of each bin along each axis.
        spatial_scale: the spatial_scale w.r.t input image.
        trans_std: multiplier of trans. Default: 0.1

    Returns:
        a tensor ``(K, C, pooled_h, pooled_w)``.

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
        >>> rois = np.array([[0, 0, 0, 3, 3]], dtype="float32")
        >>> trans = np.zeros((1, 2, 2, 2), dtype="float32")
        >>> y = F.deformable_psroi_pooling(x, rois, trans, True, 2, 2, 2, 2, 1.0)
        >>> y.numpy().tolist()
        [[[[1.25, 3.0], [8.25, 10.0]]]]
        >>> trans[0, 0] = 0.25  # samples move right by 0.25 * 0.1 * 4 = 0.1 pixels
        >>> y = F.deformable_psroi_pooling(x, rois, trans, False, 2, 2, 2, 2, 1.0)
        >>> [round(v, 2) for v in y.numpy().ravel().tolist()]  # left samples stay clamped
        [1.3, 3.1, 8.3, 10.1]
    """
    fname = "deformable_psroi_pooling"
    x = _float_input(inp, fname)
    if x.ndim != 4:
        raise ValueError(f"{fname}: inp must be a 4-dim (N, C, H, W) feature map, got {x.shape}")
    if x._dtype_name != "float32":
        x = x.astype("float32")
    r = _rois(rois, fname)
    if r._dtype_name != "float32":
        r = r.astype("float32")
    t = _float_input(trans, fname, "trans")
    if t.ndim != 4:
        raise ValueError(f"{fname}: trans must be a 4-dim tensor, got {t.shape}")
    if t._dtype_name != "float32":
        t = t.astype("float32")
    ph = _uint_param(pooled_h, fname, "pooled_h", 1)
    pw = _uint_param(pooled_w, fname, "pooled_w", 1)
    part = _uint_param(part_size, fname, "part_size", 1)
    if not no_trans and (part != ph or part != pw):
        raise ValueError(
            f"{fname}: with trans (no_trans=False), part_size {part} must equal pooled_h {ph} "
            f"and pooled_w {pw}"
        )
    op = cached_op(
        builtin.DeformablePSROIPooling,
        no_trans=bool(no_trans),
        spatial_scale=float(spatial_scale),
        trans_std=float(trans_std),
        pooled_h=ph,
        pooled_w=pw,
        part_size=part,
        sample_per_part=_uint_param(sample_per_part, fname, "sample_per_part", 1),
    )
    return _rt.apply(op, x, r, t)[0]
