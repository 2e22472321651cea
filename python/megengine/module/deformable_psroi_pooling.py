"""DeformablePSROIPooling: the layer of :func:`~.functional.nn.deformable_psroi_pooling`."""

from ..functional import deformable_psroi_pooling
from .module import Module

__all__ = ["DeformablePSROIPooling"]


class DeformablePSROIPooling(Module):
    """Deformable PSROI pooling with fixed settings; the feature map, rois and offsets are given
    to each call. It has no parameters.

    Args:
        no_trans: False to move the samples by the offsets, True to ignore them.
        part_size: side of the grid of parts the offsets are given for (with offsets, equal to
            pooled_h and pooled_w).
        pooled_h: output height.
        pooled_w: output width.
        sample_per_part: sample points of each bin along each axis.
        spatial_scale: factor from roi coordinates to the feature map's pixels.
        trans_std: multiplier of the offsets. Default: 0.1
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine.module as M
        >>> m = M.DeformablePSROIPooling(False, 2, 2, 2, 2, 1.0)
        >>> x = np.arange(32, dtype="float32").reshape(1, 2, 4, 4)
        >>> rois = np.array([[0, 0, 0, 3, 3]], dtype="float32")
        >>> trans = np.zeros((1, 2, 2, 2), dtype="float32")
        >>> m(x, rois, trans).numpy()[0, 1].tolist()
        [[17.25, 19.0], [24.25, 26.0]]
    """

    def __init__(
        self,
        no_trans,
        part_size,
        pooled_h,
        pooled_w,
        sample_per_part,
        spatial_scale,
        trans_std: float = 0.1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.no_trans = no_trans
        self.part_size = part_size
        self.pooled_h = pooled_h
        self.pooled_w = pooled_w
        self.sample_per_part = sample_per_part
        self.spatial_scale = spatial_scale
        self.trans_std = trans_std

    def forward(self, inp, rois, trans):
        """Pools each roi of ``inp`` (see :func:`~.functional.nn.deformable_psroi_pooling`).

        Examples:
            >>> import numpy as np
            >>> import megengine.module as M
            >>> m = M.DeformablePSROIPooling(True, 1, 1, 1, 1, 1.0)
            >>> x = np.ones((1, 3, 4, 4), dtype="float32")
            >>> rois = np.array([[0, 0, 0, 2, 2]], dtype="float32")
            >>> m.forward(x, rois, np.zeros((1, 2, 1, 1), dtype="float32")).shape
            (1, 3, 1, 1)
        """
        return deformable_psroi_pooling(
            inp,
            rois,
            trans,
            self.no_trans,
            self.part_size,
            self.pooled_h,
            self.pooled_w,
            self.sample_per_part,
            self.spatial_scale,
            self.trans_std,
        )
