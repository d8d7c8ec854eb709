"""ootleak: a leaky extension built out of tree (see setup.py)."""
