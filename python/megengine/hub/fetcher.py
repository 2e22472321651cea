"""Fetching a hub repository into the local cache: by HTTPS (the host's zip archive of a branch or
commit, GitHub's URL scheme) or by SSH (``git clone``).

The cache folder of a repository is named as MegEngine 1.13 names it
(``<version>_<sha1(owner_name_branch[_commit])[:16]>`` under ``$MGE_HOME/hub``), so a cache that
MegEngine filled is used as it is.
"""

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import zipfile

from ..utils.http_download import download_from_url
from ..version import __version__
from .exceptions import GitCheckoutError, GitPullError, InvalidGitHost, InvalidRepo

DEFAULT_BRANCH_NAME = "master"

_DOMAIN = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-_]{0,61}[a-z0-9])?\.)+[a-z0-9][a-z0-9-_]{0,61}[a-z]$")


def parse_repo_info(repo_info):
    r"""Splits ``"owner/name[:branch]"`` into (owner, name, branch); the branch is ``master``
    when not given.

    Args:
        repo_info: the repository, e.g. ``"megengine/models:v1"``.

    Returns:
        (owner, name, branch).

    Examples:
        >>> from megengine.hub.fetcher import parse_repo_info
        >>> parse_repo_info("megengine/models"), parse_repo_info("a/b:dev/x")
        (('megengine', 'models', 'master'), ('a', 'b', 'dev/x'))
    """
    prefix, _, branch = repo_info.partition(":")
    parts = prefix.split("/")
    if len(parts) != 2 or not all(parts) or (_ and not branch):
        raise InvalidRepo(f"repo_info: '{repo_info}' is invalid, expected 'owner/name[:branch]'")
    return parts[0], parts[1], branch or DEFAULT_BRANCH_NAME


def check_git_host(git_host):
    r"""Whether ``git_host`` is a domain name or a dotted IPv4 address.

    Args:
        git_host: e.g. ``"github.com"``.

    Returns:
        bool.

    Examples:
        >>> from megengine.hub.fetcher import check_git_host
        >>> check_git_host("github.com"), check_git_host("10.0.0.1"), check_git_host("a b")
        (True, True, False)
    """
    try:
        if _DOMAIN.match(git_host.encode("idna").decode("ascii")):
            return True
    except UnicodeError:
        return False
    nums = git_host.split(".")
    return len(nums) == 4 and all(n.isdigit() and int(n) < 256 for n in nums)


def cache_dir_name(owner, name, branch, commit=None):
    r"""The cache folder's name of a repository, as MegEngine 1.13 names it.

    Args:
        owner: repository owner.
        name: repository name.
        branch: branch or tag.
        commit: commit id, or None.

    Returns:
        The folder name (relative to the hub cache).

    Examples:
        >>> from megengine.hub.fetcher import cache_dir_name
        >>> cache_dir_name("megengine", "models", "master")
        '1_13_0_e093aa62cdf8f313'
    """
    raw = f"{owner}_{name}_{branch.replace('/', '_')}" + (f"_{commit}" if commit else "")
    return "_".join(__version__.split(".")) + "_" + hashlib.sha1(raw.encode()).hexdigest()[:16]


def archive_url(git_host, owner, name, branch, commit=None):
    r"""The URL of the zip archive of a branch (or commit), in GitHub's scheme.

    Args:
        git_host: e.g. ``"github.com"``.
        owner: repository owner.
        name: repository name.
        branch: branch or tag, used when ``commit`` is None.
        commit: commit id, or None.

    Returns:
        The URL.

    Examples:
        >>> from megengine.hub.fetcher import archive_url
        >>> archive_url("github.com", "megengine", "models", "master")
        'https://github.com/megengine/models/archive/master.zip'
    """
    return f"https://{git_host}/{owner}/{name}/archive/{commit or branch}.zip"


def _locate(cache, git_host, repo_info, commit):
    # The checked parts of a request and the cache folder they map to.
    if not check_git_host(git_host):
        raise InvalidGitHost(f"git_host: '{git_host}' is malformed")
    owner, name, branch = parse_repo_info(repo_info)
    return owner, name, branch, os.path.join(cache, cache_dir_name(owner, name, branch, commit))


def _replace_dir(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.move(src, dst)


def fetch_https(cache, git_host, repo_info, use_cache=True, commit=None):
    r"""Makes the repository's files available under ``cache`` from the host's zip archive.

    Args:
        cache: the hub cache folder.
        git_host: e.g. ``"github.com"``.
        repo_info: ``"owner/name[:branch]"``.
        use_cache: take a cached copy when there is one, instead of downloading again.
        commit: commit id, or None for the branch's head.

    Returns:
        The repository's folder.
    """
    owner, name, branch, repo_dir = _locate(cache, git_host, repo_info, commit)
    if use_cache and os.path.isdir(repo_dir):
        return repo_dir
    url = archive_url(git_host, owner, name, branch, commit)
    os.makedirs(cache, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        archive = os.path.join(tmp, "repo.zip")
        try:
            download_from_url(url, archive)
        except OSError as e:
            raise GitPullError(f"cannot download {url}: {e}") from e
        try:
            with zipfile.ZipFile(archive) as z:
                tops = {n.split("/", 1)[0] for n in z.namelist()}
                root = os.path.realpath(os.path.join(tmp, "x"))
                for member in z.namelist():  # no member may land outside the folder
                    target = os.path.realpath(os.path.join(root, member))
                    if os.path.commonpath([root, target]) != root:
                        raise GitPullError(f"{url}: unsafe member {member!r} in the archive")
                z.extractall(root)
        except zipfile.BadZipFile as e:
            raise GitPullError(f"{url}: not a zip archive ({e})") from e
        if len(tops) != 1:
            raise GitPullError(f"{url}: expected one top folder in the archive, got {sorted(tops)}")
        _replace_dir(os.path.join(root, tops.pop()), repo_dir)
    return repo_dir


def _git(args, cwd=None):
    p = subprocess.run(["git", *args], check=False, cwd=cwd, capture_output=True, text=True)
    return p.returncode, p.stderr


def fetch_ssh(cache, git_host, repo_info, use_cache=True, commit=None):
    r"""Makes the repository's files available under ``cache`` by ``git clone`` over SSH
    (``git@host:owner/name.git``; a private repository works where the SSH key does).

    Args:
        cache: the hub cache folder.
        git_host: e.g. ``"github.com"``.
        repo_info: ``"owner/name[:branch]"``.
        use_cache: take a cached copy when there is one, instead of cloning again.
        commit: commit id to check out, or None for the branch's head.

    Returns:
        The repository's folder (without its ``.git``).
    """
    owner, name, branch, repo_dir = _locate(cache, git_host, repo_info, commit)
    if use_cache and os.path.isdir(repo_dir):
        return repo_dir
    return _clone(f"git@{git_host}:{owner}/{name}.git", cache, repo_dir, branch, commit)


def _clone(url, cache, repo_dir, branch, commit):
    os.makedirs(cache, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        work = os.path.join(tmp, "repo")
        if commit is None:
            rc, err = _git(["clone", "--depth=1", "-b", branch, url, work])
        else:
            rc, err = _git(["clone", url, work])
        if rc:
            raise GitPullError(f"git clone {url} failed:\n{err}")
        if commit is not None:
            rc, err = _git(["checkout", commit], cwd=work)
            if rc:
                raise GitCheckoutError(f"cannot check out {commit} of {url}:\n{err}")
        shutil.rmtree(os.path.join(work, ".git"))
        _replace_dir(work, repo_dir)
    return repo_dir


PROTOCOLS = {"HTTPS": fetch_https, "SSH": fetch_ssh}
