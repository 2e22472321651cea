"""One line naming the machine a benchmark ran on, printed above its table.

The ratios against PyTorch and oneDNN move with the CPU (oneDNN and our Highway kernels pick
different code on AMD Zen 4, Zen 5 and Intel parts with AMX), so a figure read later without
the CPU it came from cannot be compared with another. The line also gives the load average:
on a shared machine a table measured under load says so.
"""

import os


def _cpuinfo():
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields


def describe():
    """The CPU, its vector extensions that our kernels and oneDNN choose by, the cores this
    process may use, and the 1-minute load average.

    Examples:
        >>> import machine
        >>> machine.describe().startswith("machine: ")
        True
    """
    info = _cpuinfo()
    flags = set(info.get("flags", "").split())
    isa = [name for flag, name in _ISA if flag in flags]
    cpu = info.get("model name", "unknown CPU")
    if "cpu family" in info:
        cpu += f" (family {info['cpu family']} model {info.get('model', '?')})"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"machine: {cpu}; {' '.join(isa) or 'no AVX2'}; {cores} cores; "
        f"load average {os.getloadavg()[0]:.2f}"
    )


# The extensions that change which kernels run, in rising order.
_ISA = (
    ("avx2", "AVX2"),
    ("avx512f", "AVX-512"),
    ("avx512_bf16", "AVX-512-BF16"),
    ("avx512_fp16", "AVX-512-FP16"),
    ("amx_tile", "AMX"),
)
