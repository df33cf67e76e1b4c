"""Errors meant for the user: the CLI prints their message, without a traceback."""

from __future__ import annotations


class LoaderError(Exception):
    """A failure the user can act on; ``str(exc)`` is the whole explanation."""

    exit_code = 1


class UsageError(LoaderError):
    """Invalid parameters (a size, a scale factor, an index on an unknown column...)."""

    exit_code = 2


class ConnectError(LoaderError):
    """The target database cannot be reached or refuses the connection."""


class ConflictError(LoaderError):
    """An existing table would be replaced although ``--force`` was not given."""


class LoadFailed(LoaderError):
    """Generating or loading the data failed; no table was replaced by the failed part."""
