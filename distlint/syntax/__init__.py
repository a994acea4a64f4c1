"""Layer 1, syntax: reading source, the CST walk, positions, imports, suppressions."""
