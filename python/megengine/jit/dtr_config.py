"""``DTRConfig``: MegEngine's settings for dynamic tensor rematerialization."""


class DTRConfig:
    r"""Configuration for DTR memory optimization (evicting and recomputing tensors under memory
    pressure).

    NeoMeg accepts it for MegEngine's API and checks its values as MegEngine does; a traced
    graph's memory is planned statically (``src/graph/memory_planner.cpp``), so nothing is
    evicted.

    Args:
        eviction_threshold: eviction threshold in bytes (must be positive).
        evictee_minimum_size: only tensors at least this large may be evicted. Default: 1048576.
        recomp_memory_factor: weight of a tensor's memory in the eviction heuristic (>= 0).
        recomp_time_factor: weight of a tensor's recomputation time in the heuristic (>= 0).

    Examples:
        >>> from megengine.jit import DTRConfig
        >>> DTRConfig(eviction_threshold=1 << 30).evictee_minimum_size
        1048576
    """

    def __init__(
        self,
        eviction_threshold: int = 0,
        evictee_minimum_size: int = 1 << 20,
        recomp_memory_factor: float = 1,
        recomp_time_factor: float = 1,
    ):
        if not eviction_threshold > 0:
            raise ValueError("DTRConfig: eviction_threshold must be greater than zero")
        if evictee_minimum_size < 0:
            raise ValueError("DTRConfig: evictee_minimum_size must be >= 0")
        if recomp_memory_factor < 0:
            raise ValueError("DTRConfig: recomp_memory_factor must be >= 0")
        if recomp_time_factor < 0:
            raise ValueError("DTRConfig: recomp_time_factor must be >= 0")
        self.eviction_threshold = eviction_threshold
        self.evictee_minimum_size = evictee_minimum_size
        self.recomp_memory_factor = recomp_memory_factor
        self.recomp_time_factor = recomp_time_factor
