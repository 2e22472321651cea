"""Pascal VOC: object detection or semantic segmentation from the VOCdevkit folder layout."""

import collections
import os
import xml.etree.ElementTree as ET

import cv2
import numpy as np

from .meta_vision import VisionDataset
from .utils import DatasetFileError, _imread


def _voc_colormap(n):
    # The VOC palette: the bits of the class index spread over the three channels, high bit
    # first. Returned in BGR order, as OpenCV reads the mask PNGs.
    colors = []
    for i in range(n):
        r = g = b = 0
        c = i
        for j in range(8):
            r |= ((c >> 0) & 1) << (7 - j)
            g |= ((c >> 1) & 1) << (7 - j)
            b |= ((c >> 2) & 1) << (7 - j)
            c >>= 3
        colors.append([b, g, r])
    return colors


def _read_split(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


class PascalVOC(VisionDataset):
    r"""`Pascal VOC <http://host.robots.ox.ac.uk/pascal/VOC/>`_: detection or segmentation.

    ``root`` is a VOC year folder (e.g. ``VOCdevkit/VOC2012``). For detection (``order`` with
    ``"boxes"`` or ``"boxes_category"``) the names come from ``ImageSets/Main/<image_set>.txt``,
    annotations from ``Annotations/<name>.xml``; for segmentation (``"mask"``) from
    ``ImageSets/Segmentation/<image_set>.txt`` and ``SegmentationClass/<name>.png`` (or
    ``SegmentationClass_aug`` when ``image_set`` contains ``"aug"``). Images are
    ``JPEGImages/<name>.jpg``. Items are tuples of the fields named by ``order``:

    * ``"image"``: ``uint8`` BGR array ``(H, W, 3)``;
    * ``"boxes"``: ``float32`` array ``(N, 4)`` of ``(xmin, ymin, xmax, ymax)`` as in the XML;
    * ``"boxes_category"``: ``int32`` array ``(N,)``, the index in ``class_names`` plus 1;
    * ``"mask"``: ``uint8`` array ``(H, W, 1)`` of class indices (0 is the background), 255
      where the colour is no class's (the object borders); ``_aug`` masks are read as they are;
    * ``"info"``: ``[height, width, name]``.

    Args:
        root: the VOC year folder.
        image_set: the split's name, e.g. ``"train"``, ``"val"``, ``"trainval"``.
        order: the fields of each item: boxes or a mask, not both.

    Returns:
        A map-style dataset of tuples in ``order``.

    Examples:
        >>> import os, tempfile
        >>> import cv2, numpy as np
        >>> from megengine.data.dataset import PascalVOC
        >>> root = tempfile.mkdtemp()
        >>> for d in ("JPEGImages", "Annotations", "ImageSets/Main"):
        ...     os.makedirs(os.path.join(root, d))
        >>> _ = cv2.imwrite(os.path.join(root, "JPEGImages", "x.jpg"), np.zeros((4, 5, 3), np.uint8))
        >>> with open(os.path.join(root, "ImageSets/Main/train.txt"), "w") as f:
        ...     _ = f.write("x\n")
        >>> with open(os.path.join(root, "Annotations", "x.xml"), "w") as f:
        ...     _ = f.write("<annotation><object><name>dog</name><bndbox><xmin>1</xmin>"
        ...                 "<ymin>0</ymin><xmax>3</xmax><ymax>2</ymax></bndbox></object>"
        ...                 "</annotation>")
        >>> ds = PascalVOC(root, "train", order=("boxes", "boxes_category", "info"))
        >>> ds[0]
        (array([[1., 0., 3., 2.]], dtype=float32), array([12], dtype=int32), [4, 5, 'x'])
    """

    supported_order = ("image", "boxes", "boxes_category", "mask", "info")
    class_names = (
        "aeroplane",
        "bicycle",
        "bird",
        "boat",
        "bottle",
        "bus",
        "car",
        "cat",
        "chair",
        "cow",
        "diningtable",
        "dog",
        "horse",
        "motorbike",
        "person",
        "pottedplant",
        "sheep",
        "sofa",
        "train",
        "tvmonitor",
    )
    # BGR colour of each class in the SegmentationClass PNGs, the background first.
    class_colors = _voc_colormap(len(class_names) + 1)

    def __init__(self, root, image_set, *, order=None):
        super().__init__(root, order=order, supported_order=self.supported_order)
        detection = "boxes" in self.order or "boxes_category" in self.order
        if detection and "mask" in self.order:
            raise ValueError("PascalVOC only supports boxes & boxes_category or mask, not both.")
        if not detection and "mask" not in self.order:
            raise NotImplementedError(
                f"PascalVOC needs boxes, boxes_category or mask in order, got {self.order}"
            )
        if not os.path.isdir(self.root):
            raise FileNotFoundError(f"PascalVOC: {self.root} is not a folder")
        self.image_set = image_set
        split = image_set.rstrip("\n") + ".txt"
        if detection:
            self.file_names = _read_split(os.path.join(self.root, "ImageSets", "Main", split))
            self.annotations = [
                os.path.join(self.root, "Annotations", x + ".xml") for x in self.file_names
            ]
        else:
            mask_dir = "SegmentationClass_aug" if "aug" in image_set else "SegmentationClass"
            self.file_names = _read_split(
                os.path.join(self.root, "ImageSets", "Segmentation", split)
            )
            self.masks = [os.path.join(self.root, mask_dir, x + ".png") for x in self.file_names]
        self.images = [os.path.join(self.root, "JPEGImages", x + ".jpg") for x in self.file_names]
        self.img_infos = {}

    def _objects(self, index):
        path = self.annotations[index]
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as e:
            raise DatasetFileError(path, f"not valid XML ({e})") from e
        return self.parse_voc_xml(root)["annotation"]["object"]

    def _class_index(self, name, index):
        try:
            return self.class_names.index(name) + 1
        except ValueError:
            raise DatasetFileError(
                self.annotations[index], f"unknown VOC class {name!r}; classes: {self.class_names}"
            ) from None

    def __getitem__(self, index: int) -> tuple:
        target = []
        image = None
        for k in self.order:
            if k == "image":
                image = _imread(self.images[index], cv2.IMREAD_COLOR)
                target.append(image)
            elif k == "boxes":
                boxes = [obj["bndbox"] for obj in self._objects(index)]
                boxes = [(b["xmin"], b["ymin"], b["xmax"], b["ymax"]) for b in boxes]
                target.append(np.array(boxes, dtype=np.float32).reshape(-1, 4))
            elif k == "boxes_category":
                ids = [self._class_index(obj["name"], index) for obj in self._objects(index)]
                target.append(np.array(ids, dtype=np.int32))
            elif k == "mask":
                if "aug" in self.image_set:
                    mask = _imread(self.masks[index], cv2.IMREAD_GRAYSCALE)
                else:
                    mask = self._trans_mask(_imread(self.masks[index], cv2.IMREAD_COLOR))
                target.append(mask[:, :, np.newaxis])
            elif k == "info":
                info = self.get_img_info(index, image)
                target.append([info["height"], info["width"], info["file_name"]])
        return tuple(target)

    def __len__(self) -> int:
        return len(self.images)

    def get_img_info(self, index: int, image=None) -> dict:
        r"""Height, width and name of image ``index``, cached after the first call.

        Args:
            index: the item's index.
            image: the decoded image when the caller has it already; read from disk otherwise.

        Returns:
            A dict with ``height``, ``width`` and ``file_name`` (the name in the split file).

        Examples:
            >>> import os, tempfile
            >>> import cv2, numpy as np
            >>> from megengine.data.dataset import PascalVOC
            >>> root = tempfile.mkdtemp()
            >>> for d in ("JPEGImages", "ImageSets/Segmentation"):
            ...     os.makedirs(os.path.join(root, d))
            >>> with open(os.path.join(root, "ImageSets/Segmentation/val.txt"), "w") as f:
            ...     _ = f.write("y\n")
            >>> _ = cv2.imwrite(os.path.join(root, "JPEGImages/y.jpg"), np.zeros((3, 7, 3), np.uint8))
            >>> PascalVOC(root, "val", order=("mask",)).get_img_info(0)
            {'height': 3, 'width': 7, 'file_name': 'y'}
        """
        if index not in self.img_infos:
            if image is None:
                image = _imread(self.images[index], cv2.IMREAD_COLOR)
            self.img_infos[index] = {
                "height": image.shape[0],
                "width": image.shape[1],
                "file_name": self.file_names[index],
            }
        return self.img_infos[index]

    def _trans_mask(self, mask):
        label = np.full(mask.shape[:2], 255, dtype=np.uint8)
        for i, color in enumerate(self.class_colors):
            label[(mask == np.array(color, dtype=mask.dtype)).all(axis=2)] = i
        return label

    def parse_voc_xml(self, node):
        r"""Turns a VOC annotation XML element into nested dicts.

        Leaves become ``{tag: text}``; an element with children becomes ``{tag: {child_tag:
        value}}``, a list where a tag repeats. Under ``annotation``, ``object`` is always a
        list, of one object or several.

        Args:
            node: an :class:`xml.etree.ElementTree.Element`, usually the file's root.

        Returns:
            A dict keyed by the element's tag.

        Examples:
            >>> import xml.etree.ElementTree as ET
            >>> from megengine.data.dataset import PascalVOC
            >>> xml = ("<annotation><filename>a.jpg</filename><object><name>cat</name>"
            ...        "</object></annotation>")
            >>> voc = PascalVOC.__new__(PascalVOC)  # parsing needs no dataset files
            >>> voc.parse_voc_xml(ET.fromstring(xml))
            {'annotation': {'filename': 'a.jpg', 'object': [{'name': 'cat'}]}}
        """
        children = list(node)
        if not children:
            return {node.tag: node.text.strip()} if node.text else {}
        grouped = collections.defaultdict(list)
        for child in children:
            for tag, value in self.parse_voc_xml(child).items():
                grouped[tag].append(value)
        if node.tag == "annotation":
            # One object or many: a list either way.
            grouped["object"] = [grouped["object"]]
        return {node.tag: {tag: v[0] if len(v) == 1 else v for tag, v in grouped.items()}}
