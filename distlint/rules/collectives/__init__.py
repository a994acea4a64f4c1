"""DL2xx: collectives that diverge between ranks or cannot be traced."""
