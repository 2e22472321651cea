"""The trace checkers' switches (MegEngine's ``tm_config``)."""

_expr_checker = False
_default_checker = True


def expr_checker_enabled():
    return _expr_checker


def default_checker_enabled():
    return _default_checker


def enable_expr_checker():
    r"""Checks, while tracing, that each recorded expr interpreted gives what the eager call
    gave (slower; for finding which call a trace records wrongly).

    Returns:
        None.

    Examples:
        >>> import megengine.traced_module as tm
        >>> tm.enable_expr_checker()
        >>> from megengine.traced_module import tm_config
        >>> tm_config.expr_checker_enabled()
        True
        >>> tm_config._expr_checker = False
    """
    global _expr_checker
    _expr_checker = True


def disable_default_checker():
    r"""Stops ``trace_module`` from running the traced module once more to compare its
    outputs with the original's.

    Returns:
        None.

    Examples:
        >>> import megengine.traced_module as tm
        >>> tm.disable_default_checker()
        >>> from megengine.traced_module import tm_config
        >>> tm_config.default_checker_enabled()
        False
        >>> tm_config._default_checker = True
    """
    global _default_checker
    _default_checker = False
