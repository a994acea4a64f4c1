"""distlint: find the torch.compile and distributed-training bugs before the job hangs."""

__version__ = "0.2.0.dev0"  # 0.2.0 removes DL209 (distlint/rules/removed.py)
