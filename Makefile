# The two set-up commands the README promises: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint clean tools

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,spark,chaos,registry,connect,sql,rest]'
	touch $(STAMP)

# Debian's kcat is a real client the integration tests drive; iproute2 and nftables make the
# network namespaces and network faults of the cluster tests (as root); PostgreSQL is the database
# of the JDBC and CDC connectors' tests. Install them when we can.
tools:
	@command -v kcat >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq kcat >/dev/null 2>&1) || \
	  echo "kcat not installed: its tests will be skipped"; }
	@command -v jq >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq jq >/dev/null 2>&1) || \
	  echo "jq not installed: docs/rest.md's examples will fail"; }
	@command -v chromedriver >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1) || \
	  echo "chromium not installed: the console's browser tests will be skipped"; }
	@command -v javac >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq openjdk-17-jdk-headless >/dev/null 2>&1) || \
	  echo "JDK not installed: without java the Spark tests are skipped, without javac SQL's AVRO ones"; }
	@command -v ip >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq iproute2 >/dev/null 2>&1) || \
	  echo "ip not installed: the network-fault tests will be skipped"; }
	@command -v nft >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq nftables >/dev/null 2>&1) || \
	  echo "nft not installed: the network-fault tests will be skipped"; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq postgresql >/dev/null 2>&1) || \
	  echo "postgresql not installed: the JDBC and CDC connector tests will be skipped"; }

LISTENER ?= localhost:9092
DATA_DIR ?= ./data

run: $(STAMP)
	$(BIN)/strom server --listener $(LISTENER) --data-dir $(DATA_DIR)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# Two workers (pytest-xdist): most tests wait on brokers and clients, not on the CPU; the Spark
# tests stay together in one worker (one JVM, one session). The slowest tests are listed at
# the end, to watch the suite's time.
test: $(STAMP) tools lint
	$(BIN)/pytest -n 2 --dist loadgroup --durations=20

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
