# The two commands: `make demo` and `make test`. Each installs what it needs first.
SHELL := /bin/bash
VENV := $(CURDIR)/.venv
export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(VENV)/collections
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH := false
export ANSIBLE_NOCOLOR := 1
export NO_COLOR := 1
PYTEST_ARGS ?=

.PHONY: demo test bootstrap bootstrap-test background-builds background-builds-wait lint sanity unit pytest molecule faults toxiproxy-binary cluster-binaries guest-image galaxy-importer matrix matrix-start matrix-wait clean

demo: bootstrap
	ansible-playbook playbooks/demo.yml

bootstrap:
	@hack/bootstrap.sh demo

bootstrap-test:
	@hack/timed.sh bootstrap hack/bootstrap.sh test

# The test binaries (control plane, Toxiproxy) build in the background from the first step on, so
# a cold build overlaps bootstrap, lint, sanity and the pytest files that do not need them (those
# that do run last and wait for the build on its lock); background-builds-wait reports them.
# The version matrix (every supported ansible-core, tests/matrix/) starts in the background as
# soon as bootstrap has installed Squid and the build tools, and reports last (matrix-wait), so
# its summary, with any cell that could not run and what to install, is in the last lines.
test: background-builds bootstrap-test matrix-start lint sanity galaxy-importer guest-image pytest background-builds-wait molecule faults matrix-wait

background-builds:
	@hack/background.sh start

background-builds-wait:
	@hack/background.sh wait

lint:
	@hack/timed.sh ruff bash -c 'ruff check . && ruff format --check .'
	@hack/timed.sh ansible-lint ansible-lint

sanity:
	@hack/timed.sh sanity hack/sanity.sh

# What Galaxy and Automation Hub run on upload, on the tarball `ansible-galaxy collection build`
# makes: galaxy-importer's ansible-lint and documentation checks (its containerised ansible-test
# off), in a virtualenv of its own cached per machine; any warning or error fails the step.
galaxy-importer:
	@hack/timed.sh "galaxy-importer (the tarball as Galaxy imports it)" hack/galaxy_importer.sh

# The Kubernetes test control plane, built once per machine and version set (tests/cluster/build.sh;
# cold: tens of minutes with progress lines, warm: instant), in the foreground: `make test` builds
# it in the background instead (above), and the pytest fixture would build it too.
cluster-binaries:
	@hack/timed.sh "Kubernetes test control plane binaries" tests/cluster/build.sh

# The libvirt real-guest tests' bootable image, built from Debian's packages once per machine
# (tests/guest/build_image.py; cold: under a minute, warm: a few seconds to check the versions).
guest-image:
	@hack/timed.sh "real-guest test image" python tests/guest/build_image.py

# The molecule scenarios run in a pytest session of their own, after the main one, so their step
# and its duration stand apart in CI's output. Nothing requires it: one session holding both
# works too (the machine-wide libvirt test lock is taken once per process and shared).
# The main session runs on PYTEST_WORKERS pytest-xdist workers, by file, every file that uses the
# libvirt test hypervisors on one worker (tests/xdist_groups.py): most of its time is waiting
# (polls, boots, Lease hand-overs), which the workers overlap. PYTEST_WORKERS=0 runs it serially.
# --durations: the slowest tests in CI's output, so the step's time can be read where it goes.
PYTEST_WORKERS ?= 2
PYTEST_XDIST = $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder --libvirt-on-one-worker)
pytest:
	@hack/timed.sh "pytest ($(if $(PYTEST_XDIST),$(PYTEST_WORKERS) workers,serial))" python -m pytest --durations=30 $(PYTEST_XDIST) $(PYTEST_ARGS) --ignore=tests/roles/test_molecule.py --ignore=tests/faults

molecule:
	@hack/timed.sh "molecule scenarios (pytest tests/roles/test_molecule.py)" python -m pytest tests/roles/test_molecule.py

# Toxiproxy for the fault matrix, built from its Go module once per machine (cold: ~20 s).
toxiproxy-binary:
	@hack/timed.sh "Toxiproxy (fault matrix)" tests/cluster/build_toxiproxy.sh

# The fault matrix (docs/reliability.md) in a session of its own, like molecule: it writes
# tests/output/fault-matrix.json, which hack/fault_matrix_table.py renders into the document.
# Three pytest-xdist workers, one test file each at a time (a column, the controller's in three
# parts): its cells mostly wait on toxics and deadlines, so they overlap (1275 s -> about 600 s
# measured on 2 cores). The main pytest session has workers too (above, docs/testing.md).
FAULT_WORKERS ?= 3
faults:
	@hack/timed.sh "fault matrix (pytest -n $(FAULT_WORKERS) tests/faults)" python -m pytest -n $(FAULT_WORKERS) --dist loadfile tests/faults

# The version matrix in the foreground: every cell of tests/matrix/versions.env (each its own
# cached virtualenv, ansible-test sanity and the end-to-end smoke, tests/matrix/cell.sh), or
# those of MATRIX_ONLY (`make matrix MATRIX_ONLY="2.16 2.21"`). Exits non-zero when a cell failed
# or could not run for want of a Python (the summary says what to install).
matrix:
	@hack/timed.sh "version matrix" hack/matrix.sh run

matrix-start:
	@hack/matrix.sh start

matrix-wait:
	@hack/timed.sh "version matrix (waiting for the background run)" hack/matrix.sh wait

clean:
	rm -rf $(VENV) tests/output .pytest_cache .ruff_cache
