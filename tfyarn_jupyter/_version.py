"""The installed distribution's version, in a module of its own so that any part of the
package may read it without importing the package's public API (and all it imports)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tfyarn_jupyter")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
