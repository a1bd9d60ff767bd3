"""The fault matrix's libvirt column (faults/matrix.py: why one file per column)."""

import pytest

from faults import matrix

pytestmark = pytest.mark.libvirt

test_cell = matrix.cell_test(matrix.cells("libvirt"))
