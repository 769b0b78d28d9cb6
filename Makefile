# NG12 Assessor: the two commands are `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test chaos install proto proto-check lint typecheck bench eval-dev eval-blind eval-blind-dev calibrate-tier3 calibrate-scope eval-retrieval ng12-pdf compose-check clean

$(STAMP): constraints.txt requirements-dev.txt libs/ng12_common/pyproject.toml services/*/pyproject.toml
	PYTHON=$(PYTHON) VENV=$(VENV) scripts/bootstrap.sh
	touch $(STAMP)

install: $(STAMP) ## create/refresh the virtual environment

run: $(STAMP) ## start the whole system on http://127.0.0.1:8000 (PORT overrides)
	$(PY) deploy/run_stack.py

test: $(STAMP) ## the whole test suite (needs Redis at 127.0.0.1:6379 and the NG12 PDF; installs Chromium and promtool if missing)
	scripts/ensure_chromium.sh
	scripts/ensure_promtool.sh
	npm ci --prefix tests/ui --no-audit --no-fund --loglevel=error  # axe-core for the accessibility scans
	$(PY) -m pytest -q

chaos: $(STAMP) ## the fault suite: each fault injected into a real stack under load, then a table (own Redis on a free port)
	$(PY) deploy/chaos.py

proto: $(STAMP) ## regenerate gRPC stubs into libs/ng12_common with the pinned grpcio-tools
	PYTHON=$(PY) scripts/gen_proto.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy libs/ng12_common/src/ng12_common services/*/src

bench: $(STAMP) ## benchmarks: print numbers, no pass/fail
	$(PY) bench/run_all.py

eval-dev: $(STAMP) ## score the development cases in ../shared/eval-dev
	$(PY) bench/eval_dev.py

eval-blind: $(STAMP) ## the LOCKED blind sets through the gateway (score only when the work is done)
	$(PY) bench/eval_blind.py --part locked2

eval-blind-dev: $(STAMP) ## the development parts of the blind sets (dev to dev8), one line per case
	$(PY) bench/eval_blind.py --part dev -v
	$(PY) bench/eval_blind.py --part dev2 -v
	$(PY) bench/eval_blind.py --part dev3 -v
	$(PY) bench/eval_blind.py --part dev4 -v
	$(PY) bench/eval_blind.py --part dev5 -v
	$(PY) bench/eval_blind.py --part dev6 -v
	$(PY) bench/eval_blind.py --part dev7 -v
	$(PY) bench/eval_blind.py --part dev8 -v

calibrate-tier3: $(STAMP) ## recalibrate the semantic tier's threshold (writes assessment/data/semantic_calibration.json)
	$(PY) bench/calibrate_tier3.py --write

calibrate-scope: $(STAMP) ## recalibrate chat's scope classifier by 5-fold cross-validation of its training set (prints C and both thresholds; set them in chat/scope.py)
	$(PY) bench/calibrate_scope.py

eval-retrieval: $(STAMP) ## recall@k / MRR of retrieval configurations on the development cases
	$(PY) bench/eval_retrieval.py

compose-check: $(STAMP)
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.compose-spec deploy/docker-compose.yml

ng12-pdf: ## download the NG12 PDF from NICE into data/ng12.pdf (needs internet)
	mkdir -p data
	curl -fL --retry 3 -o data/ng12.pdf.tmp "https://www.nice.org.uk/guidance/ng12/resources/suspected-cancer-recognition-and-referral-pdf-1837268071621"
	mv data/ng12.pdf.tmp data/ng12.pdf

clean:
	rm -rf var .pytest_cache .mypy_cache .ruff_cache
