"""The pipeline: check files and projects with the enabled rules, in parallel."""
