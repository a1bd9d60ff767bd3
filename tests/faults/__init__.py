"""The fault matrix (issue 16): scenarios x targets with the same invariants after each."""
