"""MS COCO: object detection and keypoints from a COCO-format annotation file."""

from typing import ClassVar

import numpy as np

from ._class_names import COCO_CLASS_NAMES
from ._coco_format import MIN_KEYPOINTS_PER_IMAGE, _CocoFormat

# Category ids that the 80 COCO classes skip, in 1..90.
_UNUSED_COCO_IDS = (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)


class COCO(_CocoFormat):
    r"""`MS COCO <http://cocodataset.org/#home>`_: images with object boxes and keypoints.

    Reads a COCO-format annotation file (``images``, ``annotations``, ``categories``); images are
    ``root/<file_name>``, decoded with OpenCV on access. Items are tuples of the fields named by
    ``order``:

    * ``"image"``: ``uint8`` BGR array of shape ``(H, W, 3)``;
    * ``"boxes"``: ``float32`` array ``(N, 4)`` of ``(x0, y0, x1, y1)`` (the file's
      ``(x, y, w, h)`` converted);
    * ``"boxes_category"``: ``int32`` array ``(N,)`` of contiguous category ids: the file's
      category ids, sorted, numbered from 1 (``json_category_id_to_contiguous_id``);
    * ``"keypoints"``: ``float32`` array ``(N, 17, 3)`` of ``(x, y, visibility)``;
    * ``"info"``: ``[height, width, file_name]`` from the annotation file.

    Images are in increasing id order.

    Args:
        root: folder the images' ``file_name`` paths are relative to.
        ann_file: the COCO-format JSON annotation file.
        remove_images_without_annotations: drop crowd annotations and boxes of zero width or
            height, then images left without annotations; when ``order`` has
            ``"keypoints"``, also images with fewer than 10 visible keypoints.
        order: the fields of each item; ``("image",)`` when ``None``.

    Returns:
        A map-style dataset of tuples in ``order``.

    Examples:
        >>> import json, os, tempfile
        >>> import cv2, numpy as np
        >>> from megengine.data.dataset import COCO
        >>> root = tempfile.mkdtemp()
        >>> _ = cv2.imwrite(os.path.join(root, "a.png"), np.zeros((4, 6, 3), np.uint8))
        >>> ann = {"images": [{"id": 1, "file_name": "a.png", "height": 4, "width": 6}],
        ...        "annotations": [{"image_id": 1, "category_id": 18, "iscrowd": 0,
        ...                         "bbox": [1, 1, 2, 3]}],
        ...        "categories": [{"id": 1, "name": "person"}, {"id": 18, "name": "dog"}]}
        >>> with open(os.path.join(root, "ann.json"), "w") as f:
        ...     json.dump(ann, f)
        >>> ds = COCO(root, os.path.join(root, "ann.json"),
        ...           order=("image", "boxes", "boxes_category", "info"))
        >>> image, boxes, category, info = ds[0]
        >>> image.shape, boxes, category, info
        ((4, 6, 3), array([[1., 1., 3., 4.]], dtype=float32), array([2], dtype=int32), [4, 6, 'a.png'])
    """

    supported_order = ("image", "boxes", "boxes_category", "keypoints", "info")
    class_names = COCO_CLASS_NAMES
    _dropped_image_fields = ("license", "coco_url", "date_captured", "flickr_url")
    # The official category id of each class name (ids 1..90 without the unused ones).
    classes_originID: ClassVar[dict] = dict(
        zip(COCO_CLASS_NAMES, (i for i in range(1, 91) if i not in _UNUSED_COCO_IDS))
    )
    keypoint_names = (
        "nose",
        "left_eye",
        "right_eye",
        "left_ear",
        "right_ear",
        "left_shoulder",
        "right_shoulder",
        "left_elbow",
        "right_elbow",
        "left_wrist",
        "right_wrist",
        "left_hip",
        "right_hip",
        "left_knee",
        "right_knee",
        "left_ankle",
        "right_ankle",
    )

    def _keep_image(self, anno):
        if not anno:
            return False
        if "keypoints" in self.order:
            if "keypoints" not in anno[0]:
                return False
            visible = sum(v > 0 for obj in anno for v in obj["keypoints"][2::3])
            if visible < MIN_KEYPOINTS_PER_IMAGE:
                return False
        return True

    def _field(self, key, img_id, anno):
        if key == "keypoints":
            points = np.array([obj["keypoints"] for obj in anno], dtype=np.float32)
            return points.reshape(-1, len(self.keypoint_names), 3)
        return super()._field(key, img_id, anno)
