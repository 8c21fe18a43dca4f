# The two commands of the README: `make run` and `make test`. Both create .venv if missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= build/negt2ibench
PORT ?= 7860

.PHONY: install run test lint browser clean

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

install: $(VENV)/.installed

# Headless browser for the UI test: Debian's chromium (Playwright's own download fails offline).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "chromium missing: install Debian's chromium to run the browser test"; fi; }

# Ends by serving the Space on localhost: the built prompts, a SQLite leaderboard under NEGT2I_HOME
# (default build/home here). Ctrl-C stops it.
run: install
	$(VENV)/bin/negt2ibench build --out $(OUT) --overwrite
	$(VENV)/bin/negt2ibench validate $(OUT)
	NEGT2I_HOME=$${NEGT2I_HOME:-build/home} $(VENV)/bin/negt2ibench serve --dataset $(OUT) --port $(PORT)

# ruff: lint (pyflakes, pycodestyle, isort, bugbear, pyupgrade to py310) and formatting.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: lint browser
	$(PY) -m pytest -q

clean:
	rm -rf build .pytest_cache
