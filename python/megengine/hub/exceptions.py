"""Errors of fetching a hub repository (MegEngine's names)."""


class FetcherError(Exception):
    r"""A hub repository could not be fetched; the base of the errors below.

    Examples:
        >>> from megengine.hub.exceptions import FetcherError, InvalidRepo
        >>> issubclass(InvalidRepo, FetcherError)
        True
    """


class InvalidRepo(FetcherError):
    r"""``repo_info`` is not ``"owner/name[:branch]"``."""


class InvalidGitHost(FetcherError):
    r"""``git_host`` is neither a domain name nor an IPv4 address."""


class GitPullError(FetcherError):
    r"""Cloning or downloading the repository failed."""


class GitCheckoutError(FetcherError):
    r"""The requested commit could not be checked out."""


class InvalidProtocol(FetcherError):
    r"""``protocol`` is neither ``"HTTPS"`` nor ``"SSH"``."""
