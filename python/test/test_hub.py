"""megengine.hub against local repositories: zip archives served by file:// URLs (the HTTPS
path), local git repositories (the clone path), and weights by URL."""

import hashlib
import os
import pathlib
import shutil
import subprocess
import zipfile

import numpy as np
import pytest

import megengine as mge
import megengine.module as M
from megengine import hub
from megengine.hub import fetcher
from megengine.hub.exceptions import (
    GitCheckoutError,
    GitPullError,
    InvalidGitHost,
    InvalidProtocol,
    InvalidRepo,
)

HUBCONF = '''
import megengine.module as M
from zoo_layers import width  # a module of the repository itself

dependencies = ["numpy"]


def tiny(n=2):
    """A tiny linear model."""
    return M.Linear(n, width())


NOT_AN_ENTRY = 3
'''


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("MGE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _zip(path, files, top="zoo-master"):
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(f"{top}/{name}" if top else name, text)
    return path


@pytest.fixture
def served(tmp_path, monkeypatch):
    """Archive URLs point at tmp_path/<owner>_<name>_<ref>.zip."""
    urls = []

    def url(git_host, owner, name, branch, commit=None):
        urls.append((git_host, owner, name, branch, commit))
        return (tmp_path / f"{owner}_{name}_{commit or branch}.zip").as_uri()

    monkeypatch.setattr(fetcher, "archive_url", url)
    files = {"hubconf.py": HUBCONF, "zoo_layers.py": "def width():\n    return 3\n"}
    _zip(tmp_path / "me_zoo_master.zip", files)
    return urls


def test_list_load_help_through_the_archive(home, served):
    # every callable of hubconf, imported ones too, as MegEngine lists them
    assert hub.list("me/zoo") == ["tiny", "width"]
    m = hub.load("me/zoo", "tiny", n=4)
    assert isinstance(m, M.Linear) and m.weight.shape == (3, 4)
    assert hub.help("me/zoo", "tiny") == "A tiny linear model."
    # MegEngine 1.13's cache layout: <version>_<sha1("owner_name_branch")[:16]>
    digest = hashlib.sha1(b"me_zoo_master").hexdigest()[:16]
    assert (home / "hub" / f"1_13_0_{digest}" / "hubconf.py").is_file()
    assert served == [("github.com", "me", "zoo", "master", None)]  # fetched once, then cached
    assert hub.import_module("me/zoo", "github.com").NOT_AN_ENTRY == 3


def test_use_cache_false_fetches_again(home, served, tmp_path):
    assert hub.load("me/zoo", "tiny").weight.shape == (3, 2)
    files = {"hubconf.py": HUBCONF, "zoo_layers.py": "def width():\n    return 5\n"}
    _zip(tmp_path / "me_zoo_master.zip", files)
    assert hub.load("me/zoo", "tiny").weight.shape == (3, 2)  # the cached copy
    assert hub.load("me/zoo", "tiny", use_cache=False).weight.shape == (5, 2)
    assert len(served) == 2


def test_branch_and_commit_are_separate_caches(home, served, tmp_path):
    files = {"hubconf.py": "def v():\n    return 'dev'\n"}
    _zip(tmp_path / "me_zoo_dev.zip", files, top="zoo-dev")
    _zip(tmp_path / "me_zoo_abc123.zip", {"hubconf.py": "def v():\n    return 'c'\n"})
    assert hub.load("me/zoo:dev", "v") == "dev"
    assert hub.load("me/zoo", "v", commit="abc123") == "c"
    assert served[-1] == ("github.com", "me", "zoo", "master", "abc123")


def test_bad_input_is_a_clear_error(home, served, tmp_path):
    with pytest.raises(InvalidRepo):
        hub.list("no-slash")
    with pytest.raises(InvalidRepo):
        hub.list("a/b/c")
    with pytest.raises(InvalidGitHost):
        hub.list("me/zoo", git_host="not a host")
    with pytest.raises(InvalidProtocol):
        hub.list("me/zoo", protocol="FTP")
    with pytest.raises(RuntimeError, match="Cannot find callable missing"):
        hub.load("me/zoo", "missing")
    with pytest.raises(RuntimeError, match="Cannot find callable NOT_AN_ENTRY"):
        hub.load("me/zoo", "NOT_AN_ENTRY")
    with pytest.raises(GitPullError, match="cannot download"):
        hub.list("me/absent")
    assert not (home / "hub" / fetcher.cache_dir_name("me", "absent", "master")).exists()


def test_missing_dependency_and_hubconf(home, served, tmp_path):
    conf = "dependencies = ['surely_not_a_module_xyz']\ndef f():\n    return 1\n"
    _zip(tmp_path / "me_dep_master.zip", {"hubconf.py": conf}, top="dep-master")
    with pytest.raises(RuntimeError, match="Missing dependencies: surely_not_a_module_xyz"):
        hub.load("me/dep", "f")
    _zip(tmp_path / "me_bare_master.zip", {"README": "x"}, top="bare-master")
    with pytest.raises(RuntimeError, match="no hubconf.py"):
        hub.list("me/bare")


def test_unsafe_or_bad_archives_are_refused(home, served, tmp_path):
    _zip(tmp_path / "me_evil_master.zip", {"../escaped.py": "x = 1\n"}, top=None)
    with pytest.raises(GitPullError, match="unsafe member"):
        hub.list("me/evil")
    (tmp_path / "me_junk_master.zip").write_bytes(b"not a zip")
    with pytest.raises(GitPullError, match="not a zip"):
        hub.list("me/junk")
    assert not list((home / "hub").glob("1_13_0_*")) or all(
        p.name != fetcher.cache_dir_name("me", "evil", "master") for p in (home / "hub").iterdir()
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_clone_checks_out_branch_and_commit(tmp_path):
    src = tmp_path / "src"
    src.mkdir()

    def git(*args):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=src,
            check=True,
            capture_output=True,
        )

    git("init", "-q", "-b", "master")
    (src / "hubconf.py").write_text("def v():\n    return 1\n")
    git("add", ".")
    git("commit", "-q", "-m", "one")
    first = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True, check=True
    ).stdout.strip()
    (src / "hubconf.py").write_text("def v():\n    return 2\n")
    git("commit", "-q", "-am", "two")
    cache = tmp_path / "cache"
    head = fetcher._clone(str(src), str(cache), str(cache / "head"), "master", None)
    assert "return 2" in pathlib.Path(head, "hubconf.py").read_text()
    assert not pathlib.Path(head, ".git").exists()
    old = fetcher._clone(str(src), str(cache), str(cache / "old"), "master", first)
    assert "return 1" in pathlib.Path(old, "hubconf.py").read_text()
    with pytest.raises(GitCheckoutError):
        fetcher._clone(str(src), str(cache), str(cache / "bad"), "master", "0" * 40)
    with pytest.raises(GitPullError):
        fetcher._clone(str(tmp_path / "none"), str(cache), str(cache / "x"), "master", None)
    assert sorted(p.name for p in cache.iterdir()) == ["head", "old"]


def test_pretrained_weights_by_url(home, tmp_path):
    src = M.Linear(3, 2)
    path = tmp_path / "weights.pkl"
    mge.save(src.state_dict(), str(path))
    url = path.as_uri()

    @hub.pretrained(url)
    def linear(**kwargs):
        return M.Linear(3, 2, **kwargs)

    fresh = linear()
    assert not np.array_equal(fresh.weight.numpy(), src.weight.numpy())
    loaded = linear(pretrained=True)
    np.testing.assert_array_equal(loaded.weight.numpy(), src.weight.numpy())
    np.testing.assert_array_equal(loaded.bias.numpy(), src.bias.numpy())
    # Cached as MegEngine names it; a second load needs no source.
    cached = home / "serialized" / f"{hashlib.sha256(url.encode()).hexdigest()[:6]}_weights.pkl"
    assert cached.is_file()
    os.remove(path)
    np.testing.assert_array_equal(linear(pretrained=True).weight.numpy(), src.weight.numpy())
    assert linear.__name__ == "linear"


def test_download_errors(tmp_path):
    from megengine.utils.http_download import HTTPDownloadError, download_from_url

    src = tmp_path / "a.bin"
    src.write_bytes(b"abc")
    md5 = hashlib.md5(b"abc").hexdigest()
    assert download_from_url(src.as_uri(), str(tmp_path / "d" / "b.bin"), md5=md5) == md5
    with pytest.raises(HTTPDownloadError, match="MD5"):
        download_from_url(src.as_uri(), str(tmp_path / "c.bin"), md5="0" * 32)
    with pytest.raises(OSError):
        download_from_url((tmp_path / "missing").as_uri(), str(tmp_path / "m.bin"))
    assert sorted(os.listdir(tmp_path)) == ["a.bin", "d"]
