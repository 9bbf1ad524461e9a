# Shoal's two commands. Each installs what it needs (uv, then the locked dependencies).
#   make run   - Shoal's main job on the embedded default: `shoal up` (REST API, control
#                loop, local executor, SQLite under ./.shoal) on this machine; ARGS=...
#                passes flags to it (e.g. ARGS=--insecure-same-user when not root)
#   make test  - the whole test suite (unit, scenario, property, CLI), as CI runs it
export UV_PYTHON_DOWNLOADS := never
# Installed packages keep their compiled bytecode: without it, where PYTHONDONTWRITEBYTECODE is
# set, every `shoal` command and test process compiles its libraries again (half of a CLI
# command's CPU time, issue 18).
export UV_COMPILE_BYTECODE := 1
PYTHON ?= python3
UV ?= $(PYTHON) -m uv

.PHONY: run test lint bench uv postgresql slurm task-venv compiler browser

uv:
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv

# The store tests start a real PostgreSQL server (initdb + pg_ctl): install Debian's if missing.
postgresql:
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		     apt-get install -y -qq postgresql >/dev/null; }

# The `slurm` member cluster's tests start a real Slurm with slurmrestd and JWT auth (and the
# Slurm benchmarks one without): install Debian's if missing, as for PostgreSQL.
slurm:
	@command -v slurmrestd >/dev/null 2>&1 && ls /usr/lib/*/slurm-wlm/rest_auth_jwt.so >/dev/null 2>&1 \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		     apt-get install -y -qq --no-install-recommends slurm-wlm slurmctld slurmd \
		       slurm-client munge slurmrestd slurm-wlm-jwt-plugin >/dev/null; }

# Tasks that run as their own OS user cannot reach an interpreter under a 0700 home: the
# end-to-end tests then make a venv (torch) from Debian's python3, which needs its venv module.
task-venv:
	@test ! -x /usr/bin/python3 || /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		     apt-get install -y -qq python3-venv >/dev/null; }

# The local executor spawns a compiled task wrapper where a C compiler exists (and forks its
# Python one otherwise): the tests hold both to the same contract, so they need a compiler.
compiler:
	@command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		     apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null; }

# The dashboard's tests drive a real headless Chromium through its WebDriver: install
# Debian's chromium and chromedriver (the same build, so they always match) if missing.
browser:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		     apt-get install -y -qq --no-install-recommends chromium chromium-driver \
		       fonts-dejavu-core >/dev/null; }

run: uv
	$(UV) sync --frozen --quiet
	$(UV) run shoal up $(ARGS)

# The executor contract suite also runs against a real Ray cluster, and the `ray` member
# cluster's tests against a Ray head's Jobs API: the `ray` extra (ray[default]).
# The tests start hundreds of Python processes (`shoal up`, `shoal` commands, benchmarks):
# where PYTHONDONTWRITEBYTECODE is set, each would compile Shoal's own modules from source
# (a fifth of a `shoal up`'s start-up CPU), so they are compiled once first, as
# UV_COMPILE_BYTECODE does for the installed packages.
test: uv postgresql slurm task-venv compiler browser
	$(UV) sync --frozen --extra ray --quiet
	$(UV) run ruff check .
	$(UV) run mypy
	$(UV) run python -m compileall -q shoal bench
	$(UV) run pytest

# bench/api.py compares the local and the Ray engine: the `ray` extra.
bench: uv
	$(UV) sync --frozen --extra ray --quiet
	$(UV) run python bench/cycle.py
	$(UV) run python bench/sim.py
	$(UV) run python bench/api.py
	$(UV) run python bench/elastic.py
	$(UV) run python bench/preempt.py
	$(UV) run python bench/soak.py
