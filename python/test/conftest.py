"""Shared by every test folder: pytest puts this directory on sys.path (rootdir conftest), so
tests import the common helpers as top-level modules (``from gradcheck import check_grad``)."""
