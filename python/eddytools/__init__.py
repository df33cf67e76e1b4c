"""Python tooling of the eddy extension: database helpers, query generators,
and (later) the benchmark runner."""

__all__ = ["db", "querygen"]
