"""Objects365: object detection in 365 classes, from a COCO-format annotation file."""

from ._class_names import OBJECTS365_CLASS_NAMES
from ._coco_format import _CocoFormat


class Objects365(_CocoFormat):
    r"""`Objects365 <https://www.objects365.org/overview.html>`_: images with object boxes.

    Reads a COCO-format annotation file; images are ``root/<file_name>``, decoded with OpenCV on
    access. Items are tuples of the fields named by ``order``: ``"image"`` (``uint8`` BGR
    ``(H, W, 3)``), ``"boxes"`` (``float32`` ``(N, 4)`` of ``(x0, y0, x1, y1)``),
    ``"boxes_category"`` (``int32`` ``(N,)``: the file's category ids, sorted, numbered from 1)
    and ``"info"`` (``[height, width, file_name]``). Images are in increasing id order.

    Args:
        root: folder the images' ``file_name`` paths are relative to.
        ann_file: the COCO-format JSON annotation file.
        remove_images_without_annotations: drop crowd annotations and boxes of zero width or
            height, then images left without annotations.
        order: the fields of each item; ``("image",)`` when ``None``.

    Returns:
        A map-style dataset of tuples in ``order``.

    Examples:
        >>> import json, os, tempfile
        >>> from megengine.data.dataset import Objects365
        >>> root = tempfile.mkdtemp()
        >>> ann = {"images": [{"id": 2, "file_name": "a.jpg", "height": 4, "width": 6},
        ...                   {"id": 1, "file_name": "b.jpg", "height": 5, "width": 5}],
        ...        "annotations": [{"image_id": 2, "category_id": 7, "iscrowd": 0,
        ...                         "bbox": [0, 0, 2, 2]}],
        ...        "categories": [{"id": 7, "name": "hat"}]}
        >>> with open(os.path.join(root, "ann.json"), "w") as f:
        ...     json.dump(ann, f)
        >>> ds = Objects365(root, os.path.join(root, "ann.json"), order=("boxes", "info"))
        >>> len(ds), ds[0][1]
        (2, [5, 5, 'b.jpg'])
        >>> ds = Objects365(root, os.path.join(root, "ann.json"), True, order=("boxes", "info"))
        >>> len(ds), ds[0]
        (1, (array([[0., 0., 2., 2.]], dtype=float32), [4, 6, 'a.jpg']))
    """

    supported_order = ("image", "boxes", "boxes_category", "info")
    class_names = OBJECTS365_CLASS_NAMES
