"""Where the benchmarks find their reference, PyTorch 2.x from PyPI (Debian's 1.13 is too old).

``bench/setup_reference.sh`` installs it into a virtual environment outside the project;
``NEOMEG_TORCH_PYTHON`` names another interpreter that has it. Each benchmark runs the PyTorch
side in that interpreter, in a process of its own, with ``torch.set_num_threads`` as it says.
"""

import os

DEFAULT_VENV = os.path.expanduser("~/.cache/neomeg-references/torch-venv")


def torch_python():
    """The interpreter with PyTorch 2.x, and why there is none when it is missing."""
    python = os.environ.get("NEOMEG_TORCH_PYTHON") or os.path.join(DEFAULT_VENV, "bin", "python")
    if not os.path.exists(python):
        return None, f"{python} not found: run bench/setup_reference.sh"
    return python, None
