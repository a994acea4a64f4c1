"""DL000-DL001: findings about distlint's own input (syntax errors, unused suppressions)."""
