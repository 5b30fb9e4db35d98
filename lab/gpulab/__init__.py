"""gpulab: a learning lab for AI infrastructure, measured on your own machine."""

__version__ = "0.1.0"

__all__ = ["__version__"]
