"""The DataLoader's vectorised path (a whole batch gathered and transformed through NumPy at
once) gives exactly what transforming and collating sample by sample gives, and is only taken
where it can."""

import numpy as np
import pytest

import megengine.data.transform as T
from megengine.data import Collator, DataLoader, SequentialSampler
from megengine.data.dataloader import _BatchMaker
from megengine.data.dataset import MNIST, ArrayDataset

rng = np.random.RandomState(0)
N = 23
IMAGES_U8 = rng.randint(0, 256, size=(N, 5, 4, 3)).astype(np.uint8)
IMAGES_F64 = rng.uniform(-3, 300, size=(N, 4, 6, 1))
GREY_2D = rng.randint(0, 256, size=(N, 5, 4)).astype(np.uint8)
MASKS = rng.randint(0, 4, size=(N, 5, 4, 1)).astype(np.uint8)
LABELS = np.arange(N, dtype=np.int32)
INDICES = [[3, 1, 4], [1, 5, 9, 2, 6], [22, 0, -1], [7]]


def per_sample(ds, transform, indices):
    """The batch of the per-sample path, built without the DataLoader."""
    transform = T.PseudoTransform() if transform is None else transform
    return Collator().apply(transform.apply_batch([ds[i] for i in indices]))


def assert_identical(got, want):
    assert type(got) is type(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is np.ndarray and type(w) is np.ndarray
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.flags.c_contiguous and g.flags.writeable
        # Bitwise, NaN included.
        assert g.tobytes() == w.tobytes()


VECTORISED_CASES = {
    "normalize per channel + chw": (
        ArrayDataset(IMAGES_U8, LABELS),
        T.Compose([T.Normalize(mean=[1.5, 20, 300], std=[2, 0.3, 7]), T.ToMode("CHW")]),
    ),
    "normalize scalar, float64 images": (
        ArrayDataset(IMAGES_F64, LABELS),
        T.Compose([T.Normalize(mean=0.2860 * 255, std=0.3530 * 255), T.ToMode("CHW")]),
    ),
    "normalize broadcasting a grey channel to three": (
        ArrayDataset(IMAGES_F64, LABELS),
        T.Normalize(mean=[1, 2, 3], std=[4, 5, 6]),
    ),
    "normalize an (H, W, C) mean": (
        ArrayDataset(IMAGES_U8, LABELS),
        T.Normalize(mean=IMAGES_U8[0].astype(np.float32), std=3.0),
    ),
    "chw of 2-d images": (ArrayDataset(GREY_2D, LABELS), T.ToMode("CHW")),
    "chw before normalize": (
        ArrayDataset(IMAGES_U8, LABELS),
        T.Compose([T.ToMode("CHW"), T.Normalize(mean=3.0, std=0.5)]),
    ),
    "masks and categories": (
        ArrayDataset(IMAGES_U8, MASKS, LABELS),
        T.Compose(
            [T.Normalize(mean=1.0, std=2.0), T.ToMode("CHW")],
            order=("image", "mask", "image_category"),
        ),
    ),
    "batch_compose": (
        ArrayDataset(IMAGES_U8, LABELS),
        T.Compose([T.Normalize(mean=1.0, std=2.0), T.ToMode("CHW")], batch_compose=True),
    ),
    "nested compose": (
        ArrayDataset(IMAGES_U8, LABELS),
        T.Compose([T.Compose([T.Normalize(mean=1.0)]), T.Compose([T.ToMode()])]),
    ),
    "no transform": (ArrayDataset(IMAGES_U8, LABELS), None),
    "pseudo transform": (ArrayDataset(IMAGES_U8, LABELS), T.PseudoTransform()),
    "label dtypes": (
        ArrayDataset(
            IMAGES_U8,
            LABELS.astype(np.float16),
            LABELS % 2 == 0,
            LABELS.astype(np.uint64),
            (LABELS + 1j).astype(np.complex64),
        ),
        T.ToMode(),
    ),
    "nan and inf survive": (
        ArrayDataset(np.where(IMAGES_F64 > 200, np.nan, np.where(IMAGES_F64 < 0, np.inf, 1.0))),
        T.Normalize(mean=1.0, std=3.0),
    ),
    "fortran-ordered source": (
        ArrayDataset(np.asfortranarray(IMAGES_U8), LABELS),
        T.Compose([T.Normalize(mean=1.0), T.ToMode()]),
    ),
}


@pytest.mark.parametrize("case", sorted(VECTORISED_CASES))
def test_vectorised_batches_are_identical(case):
    ds, transform = VECTORISED_CASES[case]
    maker = _BatchMaker(ds, T.PseudoTransform() if transform is None else transform, Collator())
    for indices in INDICES:
        got = maker(False, indices)
        assert maker._vectorise, "the vectorised path should have been taken"
        assert_identical(got, per_sample(ds, transform, indices))
    # Through the DataLoader, with and without workers.
    want = [per_sample(ds, transform, idx) for idx in INDICES]
    for workers in (0, 2):
        loader = DataLoader(ds, INDICES, transform=transform, num_workers=workers)
        got = list(loader)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_identical(g, w)


def test_mnist_and_cifar_gather_like_their_items(mnist_root):
    root, _, _ = mnist_root
    ds = MNIST(root, train=True)
    indices = [4, 0, 2]
    # The columns are a tuple; the DataLoader hands them out as the collator's list.
    got = list(ds._get_batch(indices))
    assert_identical(got, Collator().apply([ds[i] for i in indices]))


class MyNormalize(T.Normalize):
    def _apply_image(self, image):
        return super()._apply_image(image) + 1


class MyCompose(T.Compose):
    pass


class AddOne(T.Transform):
    def apply(self, input):
        return (input[0] + 1,) + tuple(input[1:])


class CountingArrayDataset(ArrayDataset):
    calls = 0

    def __getitem__(self, index):
        CountingArrayDataset.calls += 1
        return super().__getitem__(index)


class CountingCollator(Collator):
    calls = 0

    def apply(self, inputs):
        CountingCollator.calls += 1
        return super().apply(inputs)


PER_SAMPLE_CASES = {
    "random transform": (
        ArrayDataset(IMAGES_U8, LABELS),
        T.Compose([T.RandomHorizontalFlip(0.5), T.Normalize(mean=1.0), T.ToMode()]),
    ),
    "shuffled compose": (
        ArrayDataset(IMAGES_U8, LABELS),
        T.Compose(
            [T.Normalize(mean=1.0), T.Normalize(std=2.0), T.ToMode()], shuffle_indices=[(1, 2)]
        ),
    ),
    "subclassed normalize": (ArrayDataset(IMAGES_U8, LABELS), MyNormalize(mean=2.0)),
    "subclassed compose": (ArrayDataset(IMAGES_U8, LABELS), MyCompose([T.Normalize(mean=2.0)])),
    "user transform": (ArrayDataset(IMAGES_U8, LABELS), AddOne()),
    "boxes field": (
        ArrayDataset(IMAGES_U8, rng.uniform(0, 4, size=(N, 2, 4)).astype(np.float32)),
        T.Normalize(mean=1.0, order=("image", "boxes")),
    ),
    "1-d images (scalar samples)": (
        ArrayDataset(IMAGES_F64[:, 0, 0, 0], LABELS),
        T.Normalize(mean=2.0, std=3.0),
    ),
    "mean with more axes than a sample": (
        ArrayDataset(GREY_2D, LABELS),
        T.Normalize(mean=np.ones((1, 1, 1)), std=2.0),
    ),
    "string labels": (
        ArrayDataset(IMAGES_U8, np.array([f"label{i}" for i in range(N)])),
        T.ToMode(),
    ),
    "lists instead of arrays": (ArrayDataset(IMAGES_U8, list(range(N))), T.ToMode()),
    "object arrays": (
        ArrayDataset(IMAGES_U8, np.array([i for i in range(N)], dtype=object)),
        T.ToMode(),
    ),
}


@pytest.mark.parametrize("case", sorted(PER_SAMPLE_CASES))
def test_per_sample_where_not_vectorisable(case):
    ds, transform = PER_SAMPLE_CASES[case]
    for indices in INDICES:
        columns = ds._get_batch(indices)
        assert columns is None or transform._apply_columns(columns) is None
        np.random.seed(7)
        want = per_sample(ds, transform, indices)
        np.random.seed(7)
        got = _BatchMaker(ds, transform, Collator())(False, indices)
        assert type(got) is type(want)
        for g, w in zip(got, want):
            assert type(g) is type(w)
            np.testing.assert_array_equal(g, w)
            if isinstance(w, np.ndarray):
                assert g.dtype == w.dtype
    np.random.seed(7)
    want = [per_sample(ds, transform, idx) for idx in INDICES]
    np.random.seed(7)
    got = list(DataLoader(ds, INDICES, transform=transform))
    for g, w in zip(got, want):
        for u, v in zip(g, w):
            np.testing.assert_array_equal(u, v)


def test_overridden_getitem_and_collator_are_used():
    CountingArrayDataset.calls = 0
    ds = CountingArrayDataset(IMAGES_U8, LABELS)
    batches = list(DataLoader(ds, INDICES, transform=T.ToMode()))
    assert CountingArrayDataset.calls == sum(len(i) for i in INDICES)
    assert_identical(batches[0], per_sample(ds, T.ToMode(), INDICES[0]))
    CountingCollator.calls = 0
    ds = ArrayDataset(IMAGES_U8, LABELS)
    list(DataLoader(ds, INDICES, transform=T.ToMode(), collator=CountingCollator()))
    # Once per batch and once per field (Collator.apply recurses).
    assert CountingCollator.calls == 3 * len(INDICES)


def test_errors_are_the_per_sample_ones():
    ds = ArrayDataset(IMAGES_U8, LABELS)
    # An index out of range.
    with pytest.raises(IndexError) as serial:
        per_sample(ds, T.ToMode(), [0, N + 5])
    with pytest.raises(IndexError) as loader:
        list(DataLoader(ds, [[0, N + 5]], transform=T.ToMode()))
    assert str(loader.value) == str(serial.value)
    # Normalize whose mean does not broadcast against the images.
    bad = T.Compose([T.Normalize(mean=[1.0, 2.0]), T.ToMode()])
    with pytest.raises(ValueError) as serial:
        per_sample(ds, bad, [0, 1])
    with pytest.raises(ValueError) as loader:
        list(DataLoader(ds, [[0, 1]], transform=bad))
    assert str(loader.value) == str(serial.value)
    # ToMode of images that are not (H, W, C).
    ds = ArrayDataset(rng.uniform(size=(N, 2, 2, 2, 2)))
    with pytest.raises(ValueError) as serial:
        per_sample(ds, T.ToMode(), [0, 1])
    with pytest.raises(ValueError) as loader:
        list(DataLoader(ds, [[0, 1]], transform=T.ToMode()))
    assert str(loader.value) == str(serial.value)


def test_odd_indices_take_the_per_sample_path():
    ds = ArrayDataset(IMAGES_U8, LABELS)
    assert ds._get_batch([]) is None
    assert ds._get_batch([True, False]) is None
    assert ds._get_batch([[0, 1]]) is None
    assert ds._get_batch(np.array([1, 2], np.uint8)) is not None
    # numpy integer indices work like Python ints.
    got = list(DataLoader(ds, [np.array([2, 0])], transform=T.ToMode()))
    assert_identical(got[0], per_sample(ds, T.ToMode(), [2, 0]))


def test_batches_are_fresh_arrays():
    # Writing into a batch changes neither the dataset nor the next batches.
    images = IMAGES_U8.copy()
    ds = ArrayDataset(images, LABELS)
    for batch in DataLoader(ds, SequentialSampler(ds, batch_size=5)):
        batch[0][...] = 0
        batch[1][...] = -1
    np.testing.assert_array_equal(images, IMAGES_U8)
    assert ds[3][1] == 3
