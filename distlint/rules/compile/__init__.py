"""DL1xx: graph breaks, recompiles and other hazards inside torch.compile regions."""
