"""Call normalisation: the arguments of a call as MegEngine records them."""

import inspect


def convert_kwargs_to_args(spec, args, kwargs, is_bounded=False):
    """``(args, kwargs)`` with every positional parameter of ``spec`` (a function or FullArgSpec)
    given positionally, defaults filled in, as MegEngine records calls."""
    func_name = "function"
    if callable(spec):
        spec = inspect.unwrap(spec)
        func_name = getattr(spec, "__qualname__", func_name)
        spec = inspect.getfullargspec(spec)
    names = spec.args[1:] if is_bounded else spec.args
    defaults = spec.defaults or ()
    kwonly_defaults = spec.kwonlydefaults or {}
    new_args = list(args)
    repeated = set(names[: len(new_args)]) & set(kwargs)
    if repeated:
        raise TypeError(f"{func_name} got multiple values for argument {', '.join(repeated)}")
    for ind in range(len(new_args), len(names)):
        name = names[ind]
        if name in kwargs:
            new_args.append(kwargs[name])
            continue
        index = ind - len(names) + len(defaults)
        if not 0 <= index < len(defaults):
            raise TypeError(f"{func_name} missing required positional argument: {name}")
        new_args.append(defaults[index])
    new_kwargs = {}
    for name in spec.kwonlyargs:
        if name in kwargs:
            new_kwargs[name] = kwargs[name]
        elif name in kwonly_defaults:
            new_kwargs[name] = kwonly_defaults[name]
        else:
            raise TypeError(f"{func_name} missing required keyword-only argument: {name}")
    for k, v in kwargs.items():
        if k not in names and k not in spec.kwonlyargs:
            if spec.varkw is None:
                raise TypeError(f"{func_name} got an unexpected keyword argument {k}")
            new_kwargs[k] = v
    return tuple(new_args), new_kwargs
