"""Example distlint plugin: rules for an in-house launcher (codes XYZ...)."""
