"""``GraphOptimizationConfig``: MegEngine's switches for its JIT fusion passes."""


class GraphOptimizationConfig:
    r"""Configuration for graph optimization: False for OFF, True for ON; None (the default)
    lets ``opt_level`` decide.

    NeoMeg accepts it for MegEngine's API; its compiled graphs fuse no dimshuffles or reductions
    yet, so both switches change nothing.

    Attributes:
        jit_fuse_dimshuffle: whether to fuse dimshuffle in JIT optimization.
        jit_fuse_reduce: whether to fuse reduce in JIT optimization.

    Examples:
        >>> from megengine.jit import GraphOptimizationConfig
        >>> config = GraphOptimizationConfig()
        >>> config.jit_fuse_reduce = True
        >>> config
        GraphOptimizationConfig { jit_fuse_dimshuffle = UNSET, jit_fuse_reduce = ON }
    """

    def __init__(self):
        self.jit_fuse_dimshuffle = None
        self.jit_fuse_reduce = None

    def __repr__(self):
        val2str = {None: "UNSET", False: "OFF", True: "ON"}
        return (
            "GraphOptimizationConfig {"
            + " jit_fuse_dimshuffle = "
            + val2str[self.jit_fuse_dimshuffle]
            + ", jit_fuse_reduce = "
            + val2str[self.jit_fuse_reduce]
            + " }"
        )
