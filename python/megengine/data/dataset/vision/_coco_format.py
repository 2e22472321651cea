"""What COCO and Objects365 share: a COCO-format annotation file read into per-image items."""

import json
import os
from collections import defaultdict

import cv2
import numpy as np

from .meta_vision import VisionDataset
from .utils import DatasetFileError, _imread

# COCO keypoint images need this many visible keypoints to count as annotated (MegEngine's and
# maskrcnn-benchmark's rule).
MIN_KEYPOINTS_PER_IMAGE = 10


def _read_json(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise DatasetFileError(path, f"not valid JSON ({e})") from e
    missing = [k for k in ("images", "annotations", "categories") if k not in data]
    if missing:
        raise DatasetFileError(path, f"COCO-format file lacks {', '.join(missing)}")
    return data


class _CocoFormat(VisionDataset):
    # Subclasses set supported_order and class_names, and may override _keep_image.
    supported_order = ()
    class_names = ()
    # Image fields that items never use, dropped on loading to save memory.
    _dropped_image_fields = ()
    # Annotation fields an item may use, by the order names that need them.
    _fields = (("bbox", ("boxes", "boxes_category")), ("keypoints", ("keypoints",)))

    def __init__(self, root, ann_file, remove_images_without_annotations=False, *, order=None):
        super().__init__(root, order=order, supported_order=self.supported_order)
        dataset = _read_json(ann_file)
        self.imgs = {}
        for img in dataset["images"]:
            for k in self._dropped_image_fields:
                img.pop(k, None)
            self.imgs[img["id"]] = img
        # Boxes stay while remove_images_without_annotations needs them to filter.
        keep = {f for f, names in self._fields if set(names) & set(self.order)}
        if remove_images_without_annotations:
            keep.add("bbox")
        self.img_to_anns = defaultdict(list)
        for ann in dataset["annotations"]:
            for field in ("bbox", "keypoints", "segmentation"):
                if field not in keep:
                    ann.pop(field, None)
            self.img_to_anns[ann["image_id"]].append(ann)
        self.cats = {cat["id"]: cat for cat in dataset["categories"]}
        self.ids = sorted(self.imgs)
        if remove_images_without_annotations:
            self._remove_images_without_annotations()
        # Category ids of the file, sorted, numbered from 1 (0 is the background).
        self.json_category_id_to_contiguous_id = {v: i + 1 for i, v in enumerate(sorted(self.cats))}
        self.contiguous_category_id_to_json_id = {
            v: k for k, v in self.json_category_id_to_contiguous_id.items()
        }

    def _remove_images_without_annotations(self):
        ids = []
        for img_id in self.ids:
            anno = [
                obj
                for obj in self.img_to_anns[img_id]
                if obj["iscrowd"] == 0 and obj["bbox"][2] > 0 and obj["bbox"][3] > 0
            ]
            if self._keep_image(anno):
                ids.append(img_id)
                self.img_to_anns[img_id] = anno
            else:
                del self.imgs[img_id]
                self.img_to_anns.pop(img_id, None)
        self.ids = ids

    def _keep_image(self, anno):
        return len(anno) > 0

    def _field(self, key, img_id, anno):
        if key == "image":
            return _imread(
                os.path.join(self.root, self.imgs[img_id]["file_name"]), cv2.IMREAD_COLOR
            )
        if key == "boxes":
            boxes = np.array([obj["bbox"] for obj in anno], dtype=np.float32).reshape(-1, 4)
            boxes[:, 2:] += boxes[:, :2]  # xywh -> xyxy
            return boxes
        if key == "boxes_category":
            ids = [self.json_category_id_to_contiguous_id[obj["category_id"]] for obj in anno]
            return np.array(ids, dtype=np.int32)
        if key == "info":
            info = self.imgs[img_id]
            return [info["height"], info["width"], info["file_name"]]
        raise NotImplementedError(f"{type(self).__name__} cannot produce {key!r}")

    def __getitem__(self, index: int) -> tuple:
        img_id = self.ids[index]
        anno = self.img_to_anns[img_id]
        return tuple(self._field(k, img_id, anno) for k in self.order)

    def __len__(self) -> int:
        return len(self.ids)

    def get_img_info(self, index: int) -> dict:
        r"""The image record of the annotation file for item ``index``.

        Args:
            index: the item's index.

        Returns:
            The image's dict of the annotation file (``id``, ``file_name``, ``height``,
            ``width``, ...); :class:`COCO` drops the fields ``license``, ``coco_url``,
            ``date_captured`` and ``flickr_url`` on loading, as MegEngine does.

        Examples:
            >>> import json, os, tempfile
            >>> from megengine.data.dataset import COCO
            >>> root = tempfile.mkdtemp()
            >>> ann = {"images": [{"id": 4, "file_name": "a.jpg", "height": 2, "width": 3,
            ...                    "license": 1}],
            ...        "annotations": [], "categories": []}
            >>> with open(os.path.join(root, "ann.json"), "w") as f:
            ...     json.dump(ann, f)
            >>> COCO(root, os.path.join(root, "ann.json"), order=("info",)).get_img_info(0)
            {'id': 4, 'file_name': 'a.jpg', 'height': 2, 'width': 3}
        """
        return self.imgs[self.ids[index]]
