"""tfyarn_jupyter: distributed TensorFlow on Hadoop YARN, from a Jupyter notebook."""

__version__ = "0.1.0"
