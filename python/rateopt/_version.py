"""The package version: the one source of rateopt.__version__, ``rateopt --version`` and the
package metadata (pyproject.toml reads it through scikit-build-core's regex metadata provider)."""

__version__ = "0.1.0"
