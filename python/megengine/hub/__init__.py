"""``megengine.hub``: loading models from repositories with a ``hubconf.py`` (``hub.load``) and
pretrained weights by URL; see ``hub.py``. Fetching is in ``fetcher.py``."""

from .hub import help, import_module, list, load, load_serialized_obj_from_url, pretrained

__all__ = ["help", "import_module", "list", "load", "load_serialized_obj_from_url", "pretrained"]
