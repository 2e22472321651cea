"""``Sequential``: modules applied one after another."""

from collections import OrderedDict

from .module import Module

__all__ = ["Sequential"]


class Sequential(Module):
    """Applies its modules in order, each to the previous one's output. Built from positional
    modules (named ``"0"``, ``"1"``, ...) or from one OrderedDict of name -> module.

    Args:
        args: the modules, or a single OrderedDict.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> net = M.Sequential(M.Linear(4, 3), M.ReLU(), M.Linear(3, 2))
        >>> net(mge.Tensor(np.ones((5, 4), dtype=np.float32))).shape
        (5, 2)
        >>> [name for name, _ in net.named_parameters()]
        ['0.bias', '0.weight', '2.bias', '2.weight']
        >>> len(net), type(net[1]).__name__
        (3, 'ReLU')
    """

    def __init__(self, *args, **kwargs):
        super().__init__(**kwargs)
        self.layer_keys = []
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            items = list(args[0].items())
        else:
            items = [(str(i), m) for i, m in enumerate(args)]
        for key, module in items:
            if not isinstance(module, Module):
                raise TypeError(f"Sequential: {key!r} is a {type(module).__name__}, not a Module")
            if key in vars(self) or not str(key).isidentifier() and not str(key).isdigit():
                raise ValueError(f"Sequential: {key!r} cannot name a layer")
            setattr(self, key, module)
            self.layer_keys.append(key)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            keys = self.layer_keys[idx]
            return Sequential(OrderedDict((k, getattr(self, k)) for k in keys))
        return getattr(self, self.layer_keys[idx])

    def __setitem__(self, idx, module):
        setattr(self, self.layer_keys[idx], module)

    def __delitem__(self, idx):
        keys = self.layer_keys[idx] if isinstance(idx, slice) else [self.layer_keys[idx]]
        for key in keys:
            delattr(self, key)
            self.layer_keys.remove(key)

    def __len__(self):
        return len(self.layer_keys)

    def __iter__(self):
        return iter(getattr(self, k) for k in self.layer_keys)

    def _direct(self, ordered=True):
        # Layers in their order (not sorted by name), then any other attribute.
        attrs = vars(self)
        for key in self.layer_keys:
            yield key, attrs[key]
        for key, leaf in super()._direct(ordered):
            if key.split(".")[0] not in self.layer_keys:
                yield key, leaf

    def forward(self, inp):
        # every layer read before the first runs, as MegEngine's layer_values does (the order
        # traced_module records the reads in)
        for layer in [getattr(self, key) for key in self.layer_keys]:
            inp = layer(inp)
        return inp
