"""DL9xx: what confirm mode observed under the real torch."""
