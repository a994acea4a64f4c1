"""DL5xx: torch API usage checked against the shipped torch tables."""
