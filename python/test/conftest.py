"""Shared by every test folder: pytest puts this directory on sys.path (rootdir conftest), so
tests import the common helpers as top-level modules (``from gradcheck import check_grad``)."""


def pytest_configure(config):
    # tests/gpu/check.sh runs `pytest -m gpu` on a machine with a GPU; elsewhere they skip.
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped without one)")
