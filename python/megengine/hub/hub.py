"""``megengine.hub``: models published as a repository with a ``hubconf.py``, and pretrained
weights fetched by URL (MegEngine 1.13's API and cache layout).

A repository's ``hubconf.py`` defines entry points, functions that build a model (decorated with
:class:`pretrained` to fill it with published weights), and optionally ``dependencies``, a list
of module names it needs. Repositories are cached under ``$MGE_HOME/hub`` and weights under
``$MGE_HOME/serialized``; ``MGE_HOME`` defaults to ``$XDG_CACHE_HOME/megengine`` (that is,
``~/.cache/megengine``).
"""

import functools
import hashlib
import importlib.util
import os
import sys
import urllib.parse

from ..logger import get_logger
from ..serialization import load as _load_serialized
from ..utils.http_download import download_from_url
from .exceptions import InvalidProtocol
from .fetcher import PROTOCOLS

__all__ = ["help", "import_module", "list", "load", "load_serialized_obj_from_url", "pretrained"]

DEFAULT_GIT_HOST = "github.com"
DEFAULT_PROTOCOL = "HTTPS"
HUBCONF = "hubconf.py"

_logger = get_logger(__name__)


def _megengine_home():
    cache = os.getenv("XDG_CACHE_HOME", "~/.cache")
    return os.path.expanduser(os.getenv("MGE_HOME", os.path.join(cache, "megengine")))


def _load_hubconf(repo_dir):
    path = os.path.join(repo_dir, HUBCONF)
    if not os.path.isfile(path):
        raise RuntimeError(f"the repository has no {HUBCONF} (looked in {repo_dir})")
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    # The repository's own modules are importable while hubconf runs, as they are in MegEngine.
    # The repository's modules leave sys.modules again once hubconf has run (hubconf keeps its
    # references): another repository's module of the same name, or this one's fetched again
    # (use_cache=False), must not be served from the cache of imports.
    before = set(sys.modules)
    root = os.path.realpath(repo_dir) + os.sep
    sys.path.insert(0, repo_dir)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_dir)
        for name in set(sys.modules) - before:
            file = getattr(sys.modules[name], "__file__", None)
            if file and os.path.realpath(file).startswith(root):
                del sys.modules[name]
    return module


def import_module(repo_info, git_host, use_cache=True, commit=None, protocol=DEFAULT_PROTOCOL):
    r"""Fetches a repository (or takes its cached copy) and imports its ``hubconf.py``.

    Args:
        repo_info: ``"owner/name[:branch]"``; the branch defaults to ``master``.
        git_host: the git server, e.g. ``"github.com"``.
        use_cache: take the cached copy when there is one, instead of fetching again.
        commit: a commit id to fetch instead of the branch's head.
        protocol: ``"HTTPS"`` (the host's zip archive; public repositories) or ``"SSH"``
            (``git clone``).

    Returns:
        The ``hubconf`` module.

    Examples:
        >>> import os, tempfile, hashlib
        >>> from megengine import hub
        >>> from megengine.hub.fetcher import cache_dir_name
        >>> os.environ["MGE_HOME"] = home = tempfile.mkdtemp()
        >>> repo = os.path.join(home, "hub", cache_dir_name("me", "zoo", "master"))
        >>> os.makedirs(repo)
        >>> with open(os.path.join(repo, "hubconf.py"), "w") as f:
        ...     _ = f.write("def answer():\n    return 42\n")
        >>> hub.import_module("me/zoo", "github.com").answer()
        42
        >>> del os.environ["MGE_HOME"]
    """
    if protocol not in PROTOCOLS:
        raise InvalidProtocol(
            f"invalid protocol {protocol!r}, expected one of {', '.join(PROTOCOLS)}"
        )
    cache = os.path.join(_megengine_home(), "hub")
    repo_dir = PROTOCOLS[protocol](cache, git_host, repo_info, use_cache, commit)
    return _load_hubconf(repo_dir)


def _entry(hubconf, entry):
    fn = getattr(hubconf, entry, None)
    if not callable(fn):
        raise RuntimeError(f"Cannot find callable {entry} in hubconf.py")  # noqa: TRY004 (MegEngine's)
    return fn


def list(
    repo_info, git_host=DEFAULT_GIT_HOST, use_cache=True, commit=None, protocol=DEFAULT_PROTOCOL
):
    r"""Names the entry points (callables) of a repository's ``hubconf.py``.

    Args:
        repo_info: ``"owner/name[:branch]"``; the branch defaults to ``master``.
        git_host: the git server.
        use_cache: take the cached copy when there is one.
        commit: a commit id to fetch instead of the branch's head.
        protocol: ``"HTTPS"`` or ``"SSH"``.

    Returns:
        The entry points' names, sorted.

    Examples:
        >>> import os, tempfile
        >>> from megengine import hub
        >>> from megengine.hub.fetcher import cache_dir_name
        >>> os.environ["MGE_HOME"] = home = tempfile.mkdtemp()
        >>> repo = os.path.join(home, "hub", cache_dir_name("me", "zoo", "master"))
        >>> os.makedirs(repo)
        >>> with open(os.path.join(repo, "hubconf.py"), "w") as f:
        ...     _ = f.write("def net_a():\n    pass\ndef net_b():\n    pass\n")
        >>> hub.list("me/zoo")
        ['net_a', 'net_b']
        >>> del os.environ["MGE_HOME"]
    """
    hubconf = import_module(repo_info, git_host, use_cache, commit, protocol)
    return [n for n in dir(hubconf) if not n.startswith("__") and callable(getattr(hubconf, n))]


def load(
    repo_info,
    entry,
    *args,
    git_host=DEFAULT_GIT_HOST,
    use_cache=True,
    commit=None,
    protocol=DEFAULT_PROTOCOL,
    **kwargs,
):
    r"""Builds a model by calling the entry point ``entry`` of a repository's ``hubconf.py``.

    ``pretrained=True`` among ``kwargs`` fills it with the published weights where the entry is
    decorated with :class:`pretrained`. Modules named in the hubconf's ``dependencies`` must be
    importable.

    Args:
        repo_info: ``"owner/name[:branch]"``, e.g. ``"megengine/models"``.
        entry: the entry point's name, e.g. ``"resnet18"``.
        args: positional arguments of the entry point.
        git_host: the git server.
        use_cache: take the cached copy when there is one.
        commit: a commit id to fetch instead of the branch's head.
        protocol: ``"HTTPS"`` or ``"SSH"``.
        kwargs: keyword arguments of the entry point.

    Returns:
        What the entry point returns (a module).

    Examples:
        >>> import os, tempfile
        >>> from megengine import hub
        >>> from megengine.hub.fetcher import cache_dir_name
        >>> os.environ["MGE_HOME"] = home = tempfile.mkdtemp()
        >>> repo = os.path.join(home, "hub", cache_dir_name("me", "zoo", "master"))
        >>> os.makedirs(repo)
        >>> with open(os.path.join(repo, "hubconf.py"), "w") as f:
        ...     _ = f.write("import megengine.module as M\n"
        ...                 "def linear(n=2):\n    return M.Linear(n, 1)\n")
        >>> hub.load("me/zoo", "linear", n=3).weight.shape
        (1, 3)
        >>> del os.environ["MGE_HOME"]
    """
    hubconf = import_module(repo_info, git_host, use_cache, commit, protocol)
    fn = _entry(hubconf, entry)
    deps = getattr(hubconf, "dependencies", None) or []
    missing = [m for m in deps if importlib.util.find_spec(m) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return fn(*args, **kwargs)


def help(
    repo_info,
    entry,
    git_host=DEFAULT_GIT_HOST,
    use_cache=True,
    commit=None,
    protocol=DEFAULT_PROTOCOL,
):
    r"""The docstring of the entry point ``entry`` of a repository's ``hubconf.py``.

    Args:
        repo_info: ``"owner/name[:branch]"``.
        entry: the entry point's name.
        git_host: the git server.
        use_cache: take the cached copy when there is one.
        commit: a commit id to fetch instead of the branch's head.
        protocol: ``"HTTPS"`` or ``"SSH"``.

    Returns:
        The docstring (None where it has none).

    Examples:
        >>> import os, tempfile
        >>> from megengine import hub
        >>> from megengine.hub.fetcher import cache_dir_name
        >>> os.environ["MGE_HOME"] = home = tempfile.mkdtemp()
        >>> repo = os.path.join(home, "hub", cache_dir_name("me", "zoo", "master"))
        >>> os.makedirs(repo)
        >>> with open(os.path.join(repo, "hubconf.py"), "w") as f:
        ...     _ = f.write('def net():\n    "A tiny net."\n')
        >>> hub.help("me/zoo", "net")
        'A tiny net.'
        >>> del os.environ["MGE_HOME"]
    """
    hubconf = import_module(repo_info, git_host, use_cache, commit, protocol)
    return _entry(hubconf, entry).__doc__


def load_serialized_obj_from_url(url, model_dir=None):
    r"""Loads an object saved by :func:`megengine.save` (a state dict, usually) from a URL,
    downloading it once into ``model_dir``.

    The cached file is named ``<first 6 hex digits of sha256(url)>_<file name>``, as in
    MegEngine, so files that MegEngine downloaded are reused.

    Args:
        url: where the file is (``https://``, ``http://``, ``file://``).
        model_dir: the cache folder; ``$MGE_HOME/serialized`` when None.

    Returns:
        The loaded object.

    Examples:
        >>> import os, pathlib, tempfile
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine import hub
        >>> folder = tempfile.mkdtemp()
        >>> path = os.path.join(folder, "w.pkl")
        >>> mge.save({"w": mge.tensor([1.0, 2.0])}, path)
        >>> state = hub.load_serialized_obj_from_url(pathlib.Path(path).as_uri(),
        ...                                          os.path.join(folder, "cache"))
        >>> state["w"].numpy().tolist()
        [1.0, 2.0]
    """
    if model_dir is None:
        model_dir = os.path.join(_megengine_home(), "serialized")
    os.makedirs(model_dir, exist_ok=True)
    name = os.path.basename(urllib.parse.urlparse(url).path)
    digest = hashlib.sha256(url.encode()).hexdigest()[:6]
    cached = os.path.join(model_dir, f"{digest}_{name}")
    if not os.path.exists(cached):
        _logger.info("downloading %s to %s", url, cached)
        download_from_url(url, cached)
    return _load_serialized(cached)


class pretrained:
    r"""Decorates a model-building function so that ``pretrained=True`` fills the model with
    the weights (a state dict saved by :func:`megengine.save`) at ``url``.

    Args:
        url: where the weights are (``https://``, ``http://``, ``file://``); downloaded once
            into ``$MGE_HOME/serialized``.

    Examples:
        >>> import os, pathlib, tempfile
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> from megengine import hub
        >>> os.environ["MGE_HOME"] = tempfile.mkdtemp()
        >>> path = os.path.join(tempfile.mkdtemp(), "lin.pkl")
        >>> src = M.Linear(2, 1)
        >>> mge.save(src.state_dict(), path)
        >>> @hub.pretrained(pathlib.Path(path).as_uri())
        ... def linear():
        ...     return M.Linear(2, 1)
        >>> bool((linear(pretrained=True).weight.numpy() == src.weight.numpy()).all())
        True
        >>> del os.environ["MGE_HOME"]
    """

    def __init__(self, url):
        self.url = url

    def __call__(self, func):
        @functools.wraps(func)
        def build(pretrained=False, **kwargs):
            model = func(**kwargs)
            if pretrained:
                model.load_state_dict(load_serialized_obj_from_url(self.url))
            return model

        return build
