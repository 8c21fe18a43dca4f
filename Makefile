# The two commands of the README: `make run` and `make test`. Both create .venv if missing.
# `make install` sets up .venv; `make browser` adds the headless browser the browser tests need, and
# `make test` runs it first (as root it installs Debian's chromium; otherwise the browser tests are
# reported NOT RUN, with the command that installs it). `make docs` serves the manual.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= build/negt2ibench
PORT ?= 7860

.PHONY: install run test test-space test-py310 lint browser docs screenshots device-kit device-dryrun clean

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

install: $(VENV)/.installed

# A headless browser for the browser tests, Debian's chromium (Playwright's own download fails
# offline); `make test` runs this first. As root it installs it; otherwise it says what to do.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "chromium missing: the browser tests will not run (as root, \`make browser\` installs Debian's chromium)"; fi; }

# Ends by serving the Space on localhost: the built prompts, a SQLite leaderboard under NEGT2I_HOME
# (default build/home here). Ctrl-C stops it.
run: install
	$(VENV)/bin/negt2ibench build --out $(OUT) --overwrite
	$(VENV)/bin/negt2ibench validate $(OUT)
	NEGT2I_HOME=$${NEGT2I_HOME:-build/home} $(VENV)/bin/negt2ibench serve --dataset $(OUT) --port $(PORT)

# ruff: lint (pyflakes, pycodestyle, isort, bugbear, pyupgrade to py310) and formatting;
# deptry: every import of the product code declared in pyproject, nothing declared unused;
# mypy: the product packages' types (pyproject's [tool.mypy]; the wheel ships py.typed);
# mkdocs --strict: the manual builds with no broken link or anchor and no page left out of the nav.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/deptry .
	$(VENV)/bin/mypy
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir build/site

# Every test, over the machine's cores (pytest-xdist; TEST_WORKERS=1 runs them one at a time): tests
# marked `serial` (the browser tests too) run while no other test runs (tests/conftest.py). One worker
# more than the cores: many tests wait on a server, a subprocess or a browser, and a third worker on two
# cores fills that wait (figures in benchmarks/RESULTS.md, "The test gate").
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: lint browser
	$(PY) -m pytest -q $(if $(filter 1,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist worksteal)

# The Space as ZeroGPU installs it: a Python 3.12 venv (pyenv's 3.12.1, PY312; ZeroGPU runs 3.12.12)
# with the Space's requirements.txt exactly as `deploy-space` writes it (ZeroGPU's torch 2.11.0 and
# torchvision 0.26.0 among them) and gradio[oauth] at its README's sdk_version, as the Space's build adds
# it, in one resolve; then the test tools, constrained to those pins so that they move none, and this
# checkout without dependencies (tests start `python -m negt2ibench serve`; the Space runs the same
# packages from its folder). `make
# test-space` runs the Space's tests there: the real models built tiny, the app served and driven by
# gradio_client (the browser tests need playwright: `make test` runs them). Made once per change of the
# pins (5.9 GB; 2-3 minutes here, figures in docs/install.md). CI runs it after `make test`.
PY312 ?= /root/.pyenv/versions/3.12.1/bin/python
VENV_SPACE ?= build/space-venv
SPACE_FOLDER ?= build/space-ci
# The Space's tests; not the wheel's install (test_install: the Space installs no wheel of ours).
SPACE_TESTS ?= tests/space tests/leaderboard --ignore=tests/leaderboard/test_install.py

$(VENV_SPACE)/.installed: requirements.txt space/deploy.py | $(VENV)/.installed
	test -x $(PY312) || { echo "no Python 3.12 at $(PY312) (set PY312=...)"; exit 1; }
	rm -rf $(VENV_SPACE) && $(PY312) -m venv $(VENV_SPACE)
	$(VENV_SPACE)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/negt2ibench deploy-space --repo-id ci/negt2ibench --dry-run --out $(SPACE_FOLDER) > /dev/null
	$(VENV_SPACE)/bin/python -m pip install -q -r $(SPACE_FOLDER)/requirements.txt \
	  "gradio[oauth]==$$(sed -n 's/^sdk_version: //p' $(SPACE_FOLDER)/README.md)"
	$(VENV_SPACE)/bin/python -m pip install -q -c $(SPACE_FOLDER)/requirements.txt \
	  $$(grep -E '^(pytest|pytest-timeout|pytest-xdist|scikit-image)==' requirements.txt | sed 's/ *#.*//')
	$(VENV_SPACE)/bin/python -m pip install -q --no-deps -e .
	touch $@

test-space: $(VENV_SPACE)/.installed
	PYTHONPATH=$(CURDIR) NEGT2I_SPACE_REQUIREMENTS=$(CURDIR)/$(SPACE_FOLDER)/requirements.txt \
	  $(VENV_SPACE)/bin/python -m pytest -q \
	  -m "not browser" $(if $(filter 1,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist worksteal) $(SPACE_TESTS)

# The project's oldest Python (requires-python >= 3.10; 3.10.13, as pyenv installs it): the fast tests
# in their own venv, pinned as .ci/requirements_py310.py derives from requirements.txt (the last 3.10
# releases where a pin needs 3.11, no torch: the tests that need it are skipped there and run under
# 3.11 and, for the Space, 3.12). CI runs it after `make test-space`.
PY310 ?= /root/.pyenv/versions/3.10.13/bin/python
VENV310 ?= .venv310

$(VENV310)/.installed: requirements.txt .ci/requirements_py310.py | $(VENV)/.installed
	test -x $(PY310) || { echo "no Python 3.10 at $(PY310) (set PY310=...)"; exit 1; }
	test -x $(VENV310)/bin/python || $(PY310) -m venv $(VENV310)
	$(VENV310)/bin/python -m pip install -q --upgrade pip
	$(PY) .ci/requirements_py310.py > $(VENV310)/requirements.txt
	$(VENV310)/bin/python -m pip install -q -r $(VENV310)/requirements.txt
	touch $@

test-py310: $(VENV310)/.installed
	$(VENV310)/bin/python -m pytest -q -m "not slow" $(if $(filter 1,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist worksteal)

# The GPU machine's missing wheels (benchmarks/device_kit.py against benchmarks/device_image.txt):
# build/device-kit/, at most 48 MiB. `bash benchmarks/gpu.sh --kit build/device-kit` installs it there.
device-kit: $(VENV)/.installed
	$(PY) benchmarks/device_kit.py build --out build/device-kit

# The GPU run rehearsed on the CPU before a machine is lent: a Python 3.12 venv holding only our torch
# and torchvision pins and the image's other packages the benchmark imports (at the image's versions
# where its list records them; `device_kit.py image-only` refuses anything the image lacks), then
# gpu.sh with the kit installed as on the machine. The venv (≈ 5.5 GB) is made once. The image's own
# torch: make device-dryrun DRYRUN_TORCH="torch==2.11.0 torchvision==0.26.0" VENV312=build/device-dryrun/venv-torch2.11
VENV312 ?= build/device-dryrun/venv
DRYRUN_TORCH ?= $(shell grep -E '^(torch|torchvision)==' requirements.txt)

$(VENV312)/.installed: requirements.txt benchmarks/device_image.txt benchmarks/device_kit.py | device-kit
	test -x $(PY312) || { echo "no Python 3.12 at $(PY312) (set PY312=...)"; exit 1; }
	test -x $(VENV312)/bin/python || $(PY312) -m venv $(VENV312)
	$(PY) benchmarks/device_kit.py constraints > $(VENV312)/constraints.txt
	$(VENV312)/bin/python -m pip install -q -c $(VENV312)/constraints.txt \
	  $(DRYRUN_TORCH) $$($(PY) benchmarks/device_kit.py standins --kit build/device-kit)
	$(VENV312)/bin/python benchmarks/device_kit.py image-only
	touch $@

# Then the same with a wheel taken out of the kit: it must stop before the benchmark, naming it.
PLANTED = build/device-dryrun/planted
device-dryrun: device-kit $(VENV312)/.installed
	PYTHON=$(VENV312)/bin/python bash benchmarks/gpu.sh --device cpu --images 8 --kit build/device-kit \
	  --out $(VENV312)-gpu-results.json
	rm -rf $(PLANTED) && mkdir -p $(PLANTED) && cp build/device-kit/*.whl $(PLANTED)/ && rm $(PLANTED)/pydantic_core-*.whl
	! PYTHON=$(VENV312)/bin/python bash benchmarks/gpu.sh --device cpu --images 8 --kit $(PLANTED) 2> $(PLANTED).err
	grep "pydantic-core==.*, which is neither in the kit nor installed" $(PLANTED).err

# The manual (docs/, mkdocs.yml) on http://127.0.0.1:8000, rebuilt on every change.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

# The pictures of the README and the manual (docs/img/): every tab of the Space in headless Chromium
# (the two browser tests; `make browser` first), the corpus figures, Table 3's paper rows and a verdict
# drawn on a synthetic scene (tests/project/test_doc_pictures.py), each PNG palette-reduced under 200 KB.
screenshots: install
	NEGT2I_DOC_IMAGES=$(CURDIR)/docs/img $(PY) -m pytest -q tests/space/test_browser.py \
	  tests/space/test_annotate_browser.py tests/project/test_doc_pictures.py

clean:
	rm -rf build .pytest_cache
