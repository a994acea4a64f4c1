"""Configuration: [tool.distlint], rule selection, which files are checked."""
