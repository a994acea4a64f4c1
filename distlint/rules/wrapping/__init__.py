"""DL3xx: torch.compile around DDP/FSDP wrappers."""
