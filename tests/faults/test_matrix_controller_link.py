"""The fault matrix's controller column, part `controller_link` (faults/matrix.py: why three files)."""

from faults import matrix

test_cell = matrix.cell_test(matrix.cells("controller", matrix.CONTROLLER_PARTS["controller_link"]))
