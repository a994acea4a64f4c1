"""Output: reporters, fingerprints, headlines, baselines and the rule docs."""
