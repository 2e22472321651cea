"""DataLoader.check_memory_rationality and the abstract bases' MegEngine constructors."""

import io

import numpy as np
import pytest

from megengine.data import DataLoader, Sampler
from megengine.data import dataloader as dl
from megengine.data.dataset import ArrayDataset, Dataset, StreamDataset
from megengine.logger import set_log_file


def _loader(num_workers):
    return DataLoader(ArrayDataset(np.zeros((4, 2), np.float32)), num_workers=num_workers)


@pytest.fixture
def log():
    buf = io.StringIO()
    set_log_file(buf)
    yield buf
    set_log_file(None)


def test_estimate_is_workers_plus_one_times_resident(monkeypatch):
    monkeypatch.setattr(dl, "_resident_bytes", lambda: 2**30)
    monkeypatch.setattr(dl, "_cgroup_memory_limit_bytes", lambda: None)
    assert _loader(0).check_memory_rationality() == 1.0
    assert _loader(3).check_memory_rationality() == 4.0


def test_warns_only_above_the_cgroup_limit(monkeypatch, log):
    monkeypatch.setattr(dl, "_resident_bytes", lambda: 2**30)
    monkeypatch.setattr(dl, "_cgroup_memory_limit_bytes", lambda: 3 * 2**30)
    _loader(2)  # 3 GiB: at the limit, no warning
    assert "copy-on-write" not in log.getvalue()
    _loader(3)  # the constructor checks with workers: 4 GiB
    assert "memory use may grow to 4.00 GiB, above this process's limit of 3.00 GiB" in (
        log.getvalue()
    )


def test_unreadable_sizes_are_no_estimate(monkeypatch, log):
    monkeypatch.setattr(dl, "_resident_bytes", lambda: None)
    assert _loader(2).check_memory_rationality() is None
    assert log.getvalue() == ""


def test_cgroup_files_parse(tmp_path, monkeypatch):
    v2 = tmp_path / "memory.max"
    monkeypatch.setattr(dl, "_CGROUP_LIMIT_FILES", (str(tmp_path / "absent"), str(v2)))
    assert dl._cgroup_memory_limit_bytes() is None
    v2.write_text("max\n")
    assert dl._cgroup_memory_limit_bytes() is None
    v2.write_text("1073741824\n")
    assert dl._cgroup_memory_limit_bytes() == 2**30
    assert dl._resident_bytes() > 0


def test_abstract_bases_take_megengine_constructor():
    class Two(Dataset):
        def __getitem__(self, i):
            return (i,)

        def __len__(self):
            return 2

    class Own(Dataset):
        def __init__(self):
            super().__init__()

        def __getitem__(self, i):
            return (i,)

        def __len__(self):
            return 1

    class Stream(StreamDataset):
        def __init__(self):
            super().__init__()

        def __iter__(self):
            yield (0,)

    class Pairs(Sampler):
        def __init__(self):
            super().__init__()

        def __iter__(self):
            return iter([[0, 1]])

        def __len__(self):
            return 1

    assert Two()[1] == (1,) and Own()[0] == (0,) and list(Stream()) == [(0,)]
    assert list(Pairs()) == [[0, 1]]
    with pytest.raises(TypeError):
        Dataset()  # still abstract in __getitem__/__len__
