# gpufleet: `make audit` and `make test` do all the setup on a fresh machine.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
VENV_PY := $(VENV)/bin/python
# Two stamps: what running the audit needs (the project's dependencies) and, on top of it, the test and lint
# tools (the test extra). `make audit` installs only the first; every test target the second.
RUNTIME_STAMP := $(VENV)/.installed-runtime
TEST_STAMP := $(VENV)/.installed-test
# ansible-core 2.20+ needs Python 3.12+; the machine's python3 may be older, so look further.
PYTHON_CANDIDATES := python3.12 python3.13 $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python) \
	$(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python) $(wildcard /usr/bin/python3.1[2-9]) python3
BASE_PYTHON ?= $(shell for p in $(PYTHON_CANDIDATES); do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 && { command -v $$p; break; }; done)
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

.PHONY: help venv system-packages audit test test-unit test-integration test-docs corpus-test units sanity lint bench clean \
	fleet-up fleet-down test-fleet ee-context

help:
	@echo "make audit   - set up .venv and audit the demo fleet (reports/latest)"
	@echo "make test    - the whole test suite: unit (pytest and ansible-test units), integration, docs, sanity, lint, simulated fleet"
	@echo "make units   - the unit tests as ansible-test units runs them (tests/unit/requirements.txt)"
	@echo "make corpus-test - only the tests that read the public corpus (GPUFLEET_CORPUS, else ../shared); fails without it"
	@echo "make fleet-up / fleet-down / test-fleet - the simulated fleet of nspawn containers"
	@echo "make ee-context - the execution environment's build context (build/ee/context, docs/cli.md)"

venv: $(TEST_STAMP)

$(RUNTIME_STAMP): pyproject.toml
	@test -n "$(BASE_PYTHON)" || { echo "No Python 3.12+ found (tried: $(PYTHON_CANDIDATES))"; exit 1; }
	@echo "Creating $(VENV) with $(BASE_PYTHON)"
	$(BASE_PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install --quiet --upgrade pip
	$(VENV_PY) -m pip install --quiet .
	touch $@

$(TEST_STAMP): $(RUNTIME_STAMP) pyproject.toml
	$(VENV_PY) -m pip install --quiet ".[test]"
	touch $@

# The demo fleet has critical findings on purpose, so the playbook's exit status 2 (a finding at or above
# the fail severity) is the expected outcome here and only here; 4 (the run could not do its job: no host
# matched, invalid policy, unreachable host, failed collection) and any other failure fail `make audit`.
# AUDIT_ARGS: extra ansible-playbook arguments; REPORT_DIR: where the run folders go.
REPORT_DIR ?= reports
AUDIT_ARGS ?=
audit: $(RUNTIME_STAMP)
	@$(VENV)/bin/ansible-playbook audit.yml -e gpufleet_report_dir='$(REPORT_DIR)' $(AUDIT_ARGS); status=$$?; echo; \
	case $$status in \
	0) echo "The audit passed: every host was audited and nothing is at or above the fail severity.";; \
	2) echo "The audit found problems at or above the fail severity (exit status 2), as the demo fleet is built to.";; \
	4) echo "FAILED: the audit could not do its job (exit status 4): no host matched, a setting or a policy is" \
	     "invalid, or a host was unreachable or its collection failed; see the messages above."; \
	   echo "Reports of this run, if it wrote any: the newest folder under $(abspath $(REPORT_DIR))/"; exit $$status;; \
	99) echo "INTERRUPTED: the audit did not finish (exit status 99)."; exit $$status;; \
	*) echo "FAILED: ansible-playbook exited with status $$status; see the messages above."; exit $$status;; \
	esac; \
	echo "Reports: $(abspath $(REPORT_DIR))/latest/ (report.html, report.json, findings.ndjson, junit.xml, gpufleet.prom, facts/;" \
	     "a --limit run: latest-partial/)"

test: system-packages test-unit units test-docs test-prometheus test-integration sanity lint test-fleet

system-packages:
	tools/ensure_system_packages.sh

# GPUFLEET_POSTGRES_REQUIRED: the run store tests against a real PostgreSQL (tests/support/postgres.py) fail
# instead of skipping when the server cannot start; plain pytest skips them with the reason.
test-unit: $(TEST_STAMP)
	GPUFLEET_POSTGRES_REQUIRED=1 GPUFLEET_PROMETHEUS_REQUIRED=1 $(VENV_PY) -m pytest tests/unit -q

# The BMC test starts OpenIPMI's ipmi_sim, the monitoring test Prometheus and node_exporter: here a missing binary
# fails them (plain pytest skips them).
test-integration: $(TEST_STAMP)
	GPUFLEET_POSTGRES_REQUIRED=1 GPUFLEET_IPMI_SIM_REQUIRED=1 GPUFLEET_PROMETHEUS_REQUIRED=1 \
		$(VENV_PY) -m pytest tests/integration -q

# The tests marked corpus read public captures and researched facts kept outside the repository
# (GPUFLEET_CORPUS, else ../shared beside the checkout). `make test` runs them when the corpus is there and
# skips them otherwise; here a missing corpus is a failure (GPUFLEET_CORPUS_REQUIRED turns the skips into failures).
corpus-test: $(TEST_STAMP)
	$(VENV_PY) -m tests.support.corpus
	GPUFLEET_CORPUS_REQUIRED=1 $(VENV_PY) -m pytest tests/unit tests/integration -q -m corpus

test-docs: $(TEST_STAMP)
	$(VENV_PY) tools/schema_to_return.py --check
	$(VENV_PY) tools/policy_schema.py --check
	$(VENV_PY) tools/xid_table.py --check
	$(VENV)/bin/ansible-doc gpufleet.core.gpu_facts >/dev/null
	$(VENV)/bin/antsibull-changelog lint
	$(VENV)/bin/antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml

# The alert rules (docs/monitoring.md): promtool from Debian's prometheus package (system-packages).
test-prometheus:
	promtool check rules contrib/prometheus/gpufleet-alerts.yml
	promtool test rules contrib/prometheus/tests/gpufleet-alerts.test.yml

units: $(TEST_STAMP)
	tools/units.sh

sanity: $(TEST_STAMP)
	tools/sanity.sh

lint: $(TEST_STAMP)
	tools/lint.sh

# The simulated fleet: Debian containers under systemd-nspawn with a simulated NVIDIA stack (root only).
fleet-up: $(TEST_STAMP)
	$(VENV_PY) tests/fleet/fleet.py up

fleet-down:
	python3 tests/fleet/fleet.py down

# Brings a fresh fleet up, runs the fleet tests, and takes it down again, also when a test fails.
test-fleet: $(TEST_STAMP)
	$(VENV_PY) tests/fleet/fleet.py up --fresh && $(VENV_PY) -m pytest tests/fleet -q; status=$$?; \
	$(VENV_PY) tests/fleet/fleet.py down; exit $$status

# The build context of the execution environment (execution-environment.yml, ansible-builder 3) in build/ee/context,
# with the collection built from this checkout; `ansible-builder build` with podman or docker builds the image.
ee-context: $(TEST_STAMP)
	rm -rf build/ee && mkdir -p build/ee
	$(VENV)/bin/ansible-galaxy collection build --output-path build/ee --force
	mv build/ee/gpufleet-core-*.tar.gz build/ee/gpufleet-core.tar.gz
	$(VENV)/bin/ansible-builder create -f execution-environment.yml -c build/ee/context

bench: $(TEST_STAMP)
	$(VENV_PY) bench/run.py

clean:
	rm -rf $(VENV) .ansible reports build
