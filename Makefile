# The two commands a newcomer needs are `make demo` and `make test` (see README.md).
# Every target installs what it needs first and is safe to run twice.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PROTO_SRC := $(wildcard protos/replog/v1/*.proto)
PROTO_OUT := libs/common/src
PROTO_STAMP := $(PROTO_OUT)/replog/v1/.generated
DISTS := libs/common libs/client services/broker services/controller services/admin-gateway deploy/local spark
PYPROJECTS := $(addsuffix /pyproject.toml,$(DISTS))
NODE_EXAMPLE := examples/node
NODE_STAMP := $(NODE_EXAMPLE)/node_modules/.installed

.PHONY: setup system-deps demo test test-faults test-spark-cluster spark-records-exact fuzz simulate simulate-mutations up down status proto lint docs clean dist constraints image test-deploy

# Then the bytecode of our sources, compiled ahead: where Python is told not to write its caches
# (PYTHONDONTWRITEBYTECODE), every service process would compile them again as it starts (0.7 s of CPU
# of a broker's start); only changed files are compiled again.
setup: system-deps $(STAMP) $(NODE_STAMP)
	@$(BIN)/python -m compileall -q $(addsuffix /src,$(DISTS)) tests > /dev/null

system-deps:
	@bash deploy/local/scripts/install-system-deps.sh

$(VENV)/.dev: requirements-dev.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-dev.txt
	@touch $@

# Generated code is produced here from protos/ and never committed or edited.
$(PROTO_STAMP): $(PROTO_SRC) $(VENV)/.dev
	@rm -rf $(PROTO_OUT)/replog/v1 && mkdir -p $(PROTO_OUT)/replog/v1
	$(BIN)/python -m grpc_tools.protoc -Iprotos --python_out=$(PROTO_OUT) --pyi_out=$(PROTO_OUT) \
		--grpc_python_out=$(PROTO_OUT) $(PROTO_SRC)
	@touch $@

proto: $(PROTO_STAMP)

# The Node.js client example's modules, exactly as its lock file pins them (its test runs in `make test`).
$(NODE_STAMP): $(NODE_EXAMPLE)/package-lock.json $(NODE_EXAMPLE)/package.json
	cd $(NODE_EXAMPLE) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(STAMP): $(PROTO_STAMP) $(PYPROJECTS)
	$(BIN)/pip install -q $(addprefix -e ,$(DISTS))
	@touch $@

# One wheel per distribution in dist/, the protocol code generated into them at build time; the client's
# wheel is whole by itself (deploy/packaging/build_dists.py and partition.py say how and why).
dist: setup
	$(BIN)/python deploy/packaging/build_dists.py --out dist $(DISTS)

# The exact versions of the services' dependencies the image installs (after a dependency change).
constraints: dist
	$(BIN)/python deploy/packaging/pin_constraints.py

# The container images: replog's (one image, the command chooses the role) and Debian's ZooKeeper, built
# with podman from a Debian base made here with debootstrap: no image registry (deploy/image/build.sh).
image: dist
	@bash deploy/image/install-deps.sh
	bash deploy/image/build.sh

# Long (the images take minutes): the compose cluster and the Kubernetes manifests under podman, each
# producing and consuming over mutual TLS with the client installed from dist/ (tests/deploy/).
test-deploy: image
	$(BIN)/python -m pytest tests/deploy -q -p no:cacheprovider --durations=0

# The reference pages drawn from the code (API, configuration, metrics); a unit test fails when they are stale.
docs: setup
	$(BIN)/python docs/generate.py

lint: setup
	$(BIN)/buf lint
	$(BIN)/buf format --exit-code > /dev/null

up: setup
	$(BIN)/replog-local up

down:
	@if [ -x $(BIN)/replog-local ]; then $(BIN)/replog-local down; else echo "nothing to stop (no .venv)"; fi

status: setup
	$(BIN)/replog-local status

demo: setup
	bash deploy/local/scripts/demo.sh

test: setup lint
	bash tests/run.sh

# The fault matrix in its long form: every process, network, ZooKeeper and power-loss cell, REPLOG_FAULT_LOAD_S
# seconds of load each (default 300; docs/testing.md). The default suite runs a short form.
REPLOG_FAULT_LOAD_S ?= 300
test-faults: setup
	REPLOG_FAULT_LOAD_S=$(REPLOG_FAULT_LOAD_S) $(BIN)/python -m pytest tests/fault/test_fault_matrix.py \
		tests/fault/test_fault_matrix_network.py tests/fault/test_power_loss_matrix.py -q \
		-p no:cacheprovider --durations=0

# The Spark jobs on a standalone Spark cluster (a master and two workers as separate processes) through
# spark-submit --master spark://...: minutes of JVMs, so not in the default suite.
test-spark-cluster: setup
	$(BIN)/python -m pytest tests/integration/spark/test_spark_standalone.py -q -p no:cacheprovider --durations=0

# The records source's exactness at full size: 1,000,000 records over 12 partitions counted per partition
# (the default suite runs the same test on 24,000).
spark-records-exact: setup
	REPLOG_SPARK_EXACT_RECORDS=1000000 $(BIN)/python -m pytest tests/integration/spark/test_spark_records.py \
		-k "counted_exactly or split_by_offset_count" -q -p no:cacheprovider --durations=0

# The RPC fuzz in its long form: rounds of random and mutated requests of every method, from every kind of
# identity, against a real secure cluster for FUZZ_MINUTES (default 30), a new seed each run (FUZZ_SEED to
# repeat one); counts and findings print at the end and go to .fuzz/report-<seed>.json (docs/security.md).
# The default suite runs one seeded round.
FUZZ_MINUTES ?= 30
FUZZ_SEED ?= $(shell date +%s)
fuzz: setup
	FUZZ_MINUTES=$(FUZZ_MINUTES) FUZZ_SEED=$(FUZZ_SEED) FUZZ_REPORT=.fuzz/report-$(FUZZ_SEED).json \
		$(BIN)/python -m pytest tests/fuzz/test_fuzz_rpcs.py -q -s -p no:cacheprovider --durations=0

# The broker simulation (tests/scenario/broker): SEEDS fresh seeds from a printed base seed, or SEED=S to replay
# one exactly (SHRINK=1: shrink it if it fails, and write the short schedule as a test under
# tests/scenario/broker/regressions/); a failure prints its replay command, the last line is one JSON object
# of what the run exercised.
# `simulate-mutations` plants eight bugs (five in the broker core, one in its storage-error channel, one in the
# controller's write fence, one in the client's producer) one at a time and reports the first seed finding each.
SEEDS ?= 1000
simulate: setup
	$(BIN)/python -m tests.scenario.broker.simulate $(if $(SEED),--seed $(SEED),--seeds $(SEEDS)) $(if $(SHRINK),--shrink)

simulate-mutations: setup
	$(BIN)/python -m tests.scenario.broker.mutations

clean: down
	rm -rf .state $(VENV) $(PROTO_OUT)/replog/v1 $(NODE_EXAMPLE)/node_modules
