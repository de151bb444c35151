"""Post-processing: exact rate-constrained threshold rules on given scores, and held-out certificates."""
