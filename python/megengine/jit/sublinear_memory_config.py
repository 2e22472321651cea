"""``SublinearMemoryConfig``: MegEngine's settings for sublinear memory optimization."""

from ..device import get_device_count


class SublinearMemoryConfig:
    r"""Configuration for sublinear memory optimization (recomputing activations instead of
    keeping them).

    NeoMeg accepts it for MegEngine's API and checks its values as MegEngine does; a traced
    graph keeps every activation in its statically planned arena, so nothing is recomputed.

    Args:
        thresh_nr_try: number of samples when searching the threshold. Default: 10.
        genetic_nr_iter: iterations of the genetic search for checkpoints. Default: 0.
        genetic_pool_size: samples for the genetic search's crossover. Default: 20.
        lb_memory_mb: lower bound of the bottleneck size in MB. Default: 0.
        num_worker: search threads (>= 1). Default: half the CPUs.

    Examples:
        >>> from megengine.jit import SublinearMemoryConfig
        >>> SublinearMemoryConfig(genetic_nr_iter=50).genetic_nr_iter
        50
    """

    def __init__(
        self,
        thresh_nr_try: int = 10,
        genetic_nr_iter: int = 0,
        genetic_pool_size: int = 20,
        lb_memory_mb: int = 0,
        num_worker: int = max(1, get_device_count("cpu") // 2),
    ):
        for name, value in (
            ("thresh_nr_try", thresh_nr_try),
            ("genetic_nr_iter", genetic_nr_iter),
            ("genetic_pool_size", genetic_pool_size),
        ):
            if value < 0:
                raise ValueError(f"SublinearMemoryConfig: {name} must be >= 0, got {value}")
        if num_worker <= 0:
            raise ValueError(f"SublinearMemoryConfig: num_worker must be >= 1, got {num_worker}")
        self.thresh_nr_try = thresh_nr_try
        self.genetic_nr_iter = genetic_nr_iter
        self.genetic_pool_size = genetic_pool_size
        self.lb_memory_mb = lb_memory_mb
        self.num_worker = num_worker
