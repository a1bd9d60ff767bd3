"""The fault matrix's gcp column (faults/matrix.py: why one file per column)."""

from faults import matrix

test_cell = matrix.cell_test(matrix.cells("gcp"))
