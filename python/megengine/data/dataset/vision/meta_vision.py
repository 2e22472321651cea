"""Base class of the vision datasets."""

from ..meta_dataset import Dataset


class VisionDataset(Dataset):
    r"""A map-style dataset of images and their annotations.

    Args:
        root: folder that holds the dataset's files.
        order: names of the fields of each item, in item order (e.g. ``("image",
            "image_category")``); the vision transforms use the same names.
        supported_order: names this dataset can produce; ``order`` must be a subset.

    Examples:
        >>> import numpy as np
        >>> from megengine.data.dataset import VisionDataset
        >>> class OneImage(VisionDataset):
        ...     def __getitem__(self, index):
        ...         return (np.zeros((2, 2, 3), np.uint8), 0)
        ...     def __len__(self):
        ...         return 1
        >>> OneImage("/tmp", order=("image", "image_category")).order
        ('image', 'image_category')
    """

    def __init__(self, root, *, order=None, supported_order=None):
        if order is None:
            order = ("image",)
        if not isinstance(order, (tuple, list)):
            raise TypeError(f"order should be a tuple or list of field names, got {order!r}")
        if supported_order is not None:
            for k in order:
                if k not in supported_order:
                    raise NotImplementedError(
                        f"{type(self).__name__} does not support field {k!r} in order; "
                        f"supported: {tuple(supported_order)}"
                    )
        self.root = root
        self.order = tuple(order)
        self.supported_order = tuple(supported_order) if supported_order else self.order
