# The two commands: `make demo` and `make test`. Each installs what it needs first.
SHELL := /bin/bash
VENV := $(CURDIR)/.venv
export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(VENV)/collections
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH := false
export ANSIBLE_NOCOLOR := 1
PYTEST_ARGS ?=

.PHONY: demo test bootstrap bootstrap-test lint sanity unit pytest clean

demo: bootstrap
	ansible-playbook playbooks/demo.yml

bootstrap:
	@hack/bootstrap.sh demo

bootstrap-test:
	@hack/bootstrap.sh test

test: bootstrap-test lint sanity pytest

lint:
	@echo "==> ruff"
	ruff check .
	ruff format --check .
	@echo "==> ansible-lint"
	ansible-lint

sanity:
	@hack/sanity.sh

pytest:
	@echo "==> pytest"
	python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) tests/output .pytest_cache .ruff_cache
