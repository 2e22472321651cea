"""COCO, Objects365, PascalVOC, Cityscapes, ImageNet and ImageFolder give what MegEngine 1.13
gave on the same files.

The tiny dataset trees under ``fixtures/megengine_1_13/datasets`` and MegEngine's items on them
(``datasets_expected.json``) were written by ``fixtures/make_dataset_fixtures.py``; MegEngine is
not needed here. The trees are copied to a temporary folder so that nothing writes into them.
"""

import json
import os
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from megengine.data.dataset import (
    COCO,
    Cityscapes,
    ImageFolder,
    ImageNet,
    Objects365,
    PascalVOC,
)
from megengine.data.dataset.vision.utils import DatasetFileError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "megengine_1_13")
with open(os.path.join(FIXTURES, "datasets_expected.json")) as f:
    EXPECTED = json.load(f)


@pytest.fixture
def root(tmp_path):
    dst = tmp_path / "datasets"
    shutil.copytree(os.path.join(FIXTURES, "datasets"), dst)
    # An extracted devkit (an empty folder, which git cannot hold): ImageNet needs no archive.
    (dst / "imagenet" / "ILSVRC2012_devkit_t12" / "data").mkdir(parents=True, exist_ok=True)
    return str(dst)


def assert_same(ours, enc, root, where="item"):
    """ours equals the encoded MegEngine value: same types, dtypes, shapes and values."""
    if isinstance(enc, str):
        assert ours == enc.replace("<root>", root), where
    elif isinstance(enc, dict) and "ndarray" in enc:
        assert isinstance(ours, np.ndarray), f"{where}: {type(ours)}"
        assert str(ours.dtype) == enc["dtype"], f"{where}: {ours.dtype} != {enc['dtype']}"
        assert list(ours.shape) == enc["shape"], f"{where}: {ours.shape} != {enc['shape']}"
        want = np.array(enc["ndarray"], dtype=enc["dtype"]).reshape(enc["shape"])
        np.testing.assert_array_equal(ours, want)
    elif isinstance(enc, dict) and "scalar" in enc:
        assert isinstance(ours, np.generic) and str(ours.dtype) == enc["dtype"], where
        assert ours.item() == enc["scalar"], where
    elif isinstance(enc, dict) and ("tuple" in enc or "list" in enc):
        kind = "tuple" if "tuple" in enc else "list"
        assert type(ours).__name__ == kind, f"{where}: {type(ours).__name__} != {kind}"
        assert len(ours) == len(enc[kind]), where
        for i, (o, e) in enumerate(zip(ours, enc[kind])):
            assert_same(o, e, root, f"{where}[{i}]")
    elif isinstance(enc, dict) and "dict" in enc:
        assert isinstance(ours, dict), where
        assert sorted(map(str, ours)) == sorted(enc["dict"]), where
        for k, v in ours.items():
            assert_same(v, enc["dict"][str(k)], root, f"{where}[{k!r}]")
    else:
        assert ours == enc and type(ours) is type(enc), f"{where}: {ours!r} != {enc!r}"


COCO_LIKE = [(COCO, name) for name in ("all", "remove", "keypoints", "keypoints_remove")] + [
    (Objects365, name) for name in ("all", "remove")
]


@pytest.mark.parametrize("cls,case", COCO_LIKE, ids=lambda x: getattr(x, "__name__", x))
def test_coco_format_matches_megengine(root, cls, case):
    exp = EXPECTED[cls.__name__.lower()][case]
    coco = os.path.join(root, "coco")
    ds = cls(coco, os.path.join(coco, "annotations.json"), exp["remove"], order=exp["order"])
    assert len(ds) == exp["len"] and ds.ids == exp["ids"]
    for i in range(len(ds)):
        assert_same(ds[i], exp["items"][i], root, f"{case}[{i}]")
        assert_same(ds.get_img_info(i), exp["img_info"][i], root, f"info {i}")
    assert_same(ds.json_category_id_to_contiguous_id, exp["json_to_contiguous"], root)
    assert_same(ds.contiguous_category_id_to_json_id, exp["contiguous_to_json"], root)


@pytest.mark.parametrize("cls", [COCO, Objects365])
def test_class_names(cls):
    exp = EXPECTED[cls.__name__.lower()]
    assert len(cls.class_names) == exp["class_names_len"]
    assert list(cls.class_names[:3]) == exp["class_names_head"]


def test_coco_classes_origin_id():
    # The official ids skip 12, 26, 29, 30, 45, 66, 68, 69, 71 and 83.
    ids = [COCO.classes_originID[c] for c in COCO.class_names]
    assert ids[:12] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13] and ids[-1] == 90
    assert len(set(ids)) == 80 and COCO.classes_originID["toothbrush"] == 90


def test_coco_remove_without_order(root):
    # MegEngine 1.13 fails here ("boxes" in None); the default order is ("image",).
    coco = os.path.join(root, "coco")
    ds = COCO(coco, os.path.join(coco, "annotations.json"), True)
    assert ds.ids == [1, 3] and ds.order == ("image",) and ds[1][0].shape == (4, 3, 3)


def test_coco_bad_input(root, tmp_path):
    coco = os.path.join(root, "coco")
    ann = os.path.join(coco, "annotations.json")
    with pytest.raises(NotImplementedError, match="polygons"):
        COCO(coco, ann, order=("image", "polygons"))
    with pytest.raises(NotImplementedError, match="keypoints"):
        Objects365(coco, ann, order=("keypoints",))
    bad = tmp_path / "bad.json"
    bad.write_text('{"images": []}')
    with pytest.raises(DatasetFileError, match="annotations, categories"):
        COCO(coco, str(bad))
    bad.write_text("{")
    with pytest.raises(DatasetFileError, match="not valid JSON"):
        COCO(coco, str(bad))
    os.remove(os.path.join(coco, "images", "a.png"))
    with pytest.raises(DatasetFileError, match="a.png"):
        COCO(coco, ann)[0]


@pytest.mark.parametrize("case", ["det", "det_boxes_only", "mask", "mask_aug"])
def test_voc_matches_megengine(root, case):
    exp = EXPECTED["voc"][case]
    voc = os.path.join(root, "voc")
    ds = PascalVOC(voc, exp["image_set"], order=exp["order"])
    assert len(ds) == exp["len"]
    for i in range(len(ds)):
        assert_same(ds[i], exp["items"][i], root, f"{case}[{i}]")
        assert_same(ds.get_img_info(i), exp["img_info"][i], root, f"info {i}")


def test_voc_parse_xml_matches_megengine(root):
    voc = os.path.join(root, "voc")
    ds = PascalVOC(voc, "train", order=("boxes",))
    xml = ET.parse(os.path.join(voc, "Annotations", "2008_000001.xml")).getroot()
    assert_same(ds.parse_voc_xml(xml), EXPECTED["voc"]["parse_voc_xml"], root)
    # No objects: an empty list, as MegEngine gives.
    assert ds.parse_voc_xml(ET.fromstring("<annotation><a>1</a></annotation>")) == {
        "annotation": {"a": "1", "object": []}
    }


def test_voc_bad_input(root):
    voc = os.path.join(root, "voc")
    with pytest.raises(ValueError, match=EXPECTED["voc"]["boxes_and_mask_error"][:30]):
        PascalVOC(voc, "train", order=("boxes", "mask"))
    with pytest.raises(NotImplementedError, match="boxes, boxes_category or mask"):
        PascalVOC(voc, "train", order=("image",))
    with pytest.raises(FileNotFoundError):
        PascalVOC(voc, "nosuchsplit", order=("boxes",))
    with pytest.raises(FileNotFoundError):
        PascalVOC(os.path.join(voc, "nowhere"), "train", order=("boxes",))
    xml = os.path.join(voc, "Annotations", "2008_000002.xml")
    with open(xml, "w") as f:
        f.write("<annotation><object><name>unicorn</name></object></annotation>")
    with pytest.raises(DatasetFileError, match="2008_000002.xml.*unicorn"):
        PascalVOC(voc, "train", order=("boxes_category",))[1]
    with open(xml, "w") as f:
        f.write("<annotation>")
    with pytest.raises(DatasetFileError, match="not valid XML"):
        PascalVOC(voc, "train", order=("boxes",))[1]


def test_voc_class_colors():
    # The VOC palette: class 1 is RGB (128, 0, 0), class 15 (person) RGB (192, 128, 128).
    assert len(PascalVOC.class_colors) == 21
    assert PascalVOC.class_colors[1] == [0, 0, 128]
    assert PascalVOC.class_colors[15] == [128, 128, 192]


def test_cityscapes_matches_megengine(root):
    exp = EXPECTED["cityscapes"]
    city = os.path.join(root, "cityscapes")
    ds = Cityscapes(city, "train", "gtFine", order=("image", "mask", "info"))
    assert len(ds) == exp["len"] == 2
    names = [os.path.basename(p) for p in ds.images]
    assert names == sorted(exp["items"])  # sorted, where MegEngine follows os.listdir
    for i, name in enumerate(names):
        assert_same(ds[i], exp["items"][name], root, name)
    assert len(ds.class_names) == exp["class_names_len"]
    # info alone reads the image for its size.
    assert Cityscapes(city, "train", "gtFine", order=("info",))[0][0][:2] == [3, 4]


def test_cityscapes_bad_input(root):
    city = os.path.join(root, "cityscapes")
    with pytest.raises(FileNotFoundError, match="leftImg8bit"):
        Cityscapes(city, "val", "gtFine")
    with pytest.raises(NotImplementedError, match="boxes"):
        Cityscapes(city, "train", "gtFine", order=("boxes",))
    os.remove(os.path.join(city, "gtFine/train/aachen/aachen_000000_000019_gtFine_labelIds.png"))
    with pytest.raises(DatasetFileError, match="labelIds"):
        Cityscapes(city, "train", "gtFine", order=("mask",))[0]


def _samples(ds):
    return [[p, c] for p, c in ds.samples]


def test_imagenet_matches_megengine(root):
    exp = EXPECTED["image_folder"]
    net = os.path.join(root, "imagenet")
    train = ImageNet(net, train=True)
    assert len(train) == exp["imagenet_train"]["len"]
    assert_same(
        train.samples, {"list": [{"tuple": s} for s in exp["imagenet_train"]["samples"]]}, root
    )
    for i in range(len(train)):
        assert_same(train[i], exp["imagenet_train"]["items"][i], root, f"train[{i}]")
    assert train.check_raw_file() is exp["imagenet_train"]["check_raw_file"]
    assert train.target_folder == exp["imagenet_train"]["target_folder"].replace("<root>", root)
    val = ImageNet(net, train=False)
    assert_same(val.samples, {"list": [{"tuple": s} for s in exp["imagenet_val"]["samples"]]}, root)


def test_image_folder_collect_matches_megengine(root):
    exp = EXPECTED["image_folder"]
    train = os.path.join(root, "imagenet", "train")
    folder = ImageFolder(train)
    assert_same(folder.collect_class(), exp["folder"]["collect_class"], root)
    enc = {"list": [{"tuple": s} for s in exp["folder"]["collect_samples"]]}
    assert_same(folder.collect_samples(), enc, root)
    named = ImageFolder(train, class_name=True)
    enc = {"list": [{"tuple": s} for s in exp["folder_class_name"]["collect_samples"]]}
    assert_same(named.samples, enc, root)


def _tar(path, members, mode="w"):
    """A tar of {name: bytes}."""
    import io
    import tarfile

    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _png(value, shape=(2, 3)):
    import cv2

    return cv2.imencode(".png", np.full(shape + (3,), value, np.uint8))[1].tobytes()


@pytest.fixture
def imagenet_archives(tmp_path, monkeypatch):
    """The three ImageNet archives in miniature, their MD5s patched in."""
    import pickle

    from megengine.data.dataset.vision.utils import calculate_md5

    root = tmp_path / "imagenet"
    root.mkdir()
    class_tars = {}
    for wnid, values in (("n02", (20,)), ("n01", (10, 11))):
        path = tmp_path / f"{wnid}.tar"
        _tar(path, {f"{wnid}_{v}.JPEG": _png(v) for v in values})
        class_tars[f"{wnid}.tar"] = path.read_bytes()
    _tar(root / "ILSVRC2012_img_train.tar", class_tars)
    # Validation images named in order; the ground truth gives ILSVRC ids 2, 1, 2.
    _tar(
        root / "ILSVRC2012_img_val.tar",
        {f"ILSVRC2012_val_{i:08d}.JPEG": _png(30 + i) for i in (1, 2, 3)},
    )
    meta = ({1: "n01", 2: "n02"}, {"n01": ("tench",), "n02": ("goldfish",)})
    _tar(
        root / "ILSVRC2012_devkit_t12.tar.gz",
        {
            "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt": b"2\n1\n2\n",
            "ILSVRC2012_devkit_t12/meta.pkl": pickle.dumps(meta),
        },
        "w:gz",
    )
    md5 = {
        key: (name, calculate_md5(root / name)) for key, (name, _) in ImageNet.raw_file_meta.items()
    }
    monkeypatch.setattr(ImageNet, "raw_file_meta", md5)
    return root


def test_imagenet_prepares_from_archives(imagenet_archives):
    root = str(imagenet_archives)
    train = ImageNet(root, train=True)
    assert train.check_raw_file()
    assert sorted(os.listdir(os.path.join(root, "train"))) == ["n01", "n02"]  # class tars gone
    assert [(os.path.basename(p), int(c)) for p, c in train.samples] == [
        ("n01_10.JPEG", 0),
        ("n01_11.JPEG", 0),
        ("n02_20.JPEG", 1),
    ]
    assert int(train[2][0][0, 0, 0]) == 20 and train[2][0].shape == (2, 3, 3)
    val = ImageNet(root, train=False)
    assert [(os.path.basename(p), int(c)) for p, c in val.samples] == [
        ("ILSVRC2012_val_00000002.JPEG", 0),
        ("ILSVRC2012_val_00000001.JPEG", 1),
        ("ILSVRC2012_val_00000003.JPEG", 1),
    ]
    assert val.meta[1]["n02"] == ("goldfish",) and val.valid_ground_truth == [2, 1, 2]


def test_imagenet_bad_input(imagenet_archives, monkeypatch, tmp_path):
    root = str(imagenet_archives)
    with open(os.path.join(root, "ILSVRC2012_img_val.tar"), "ab") as f:
        f.write(b"damage")
    with pytest.raises(RuntimeError, match="MD5"):
        ImageNet(root, train=False)
    os.remove(os.path.join(root, "ILSVRC2012_img_train.tar"))
    with pytest.raises(FileNotFoundError, match="ILSVRC2012_img_train.tar"):
        ImageNet(root, train=True)
    with pytest.raises(FileNotFoundError, match="not a folder"):
        ImageNet(str(tmp_path / "nowhere"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="devkit"):
        ImageNet(str(empty))
