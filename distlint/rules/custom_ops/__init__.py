"""DL4xx: custom operators and autograd functions."""
