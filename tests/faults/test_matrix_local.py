"""The fault matrix's local column (faults/matrix.py: why one file per column)."""

from faults import matrix

test_cell = matrix.cell_test(matrix.cells("local"))
