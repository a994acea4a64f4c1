"""distlint: find the torch.compile and distributed-training bugs before the job hangs."""

__version__ = "0.1.0"
