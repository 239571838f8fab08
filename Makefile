# SessionMesh build entry points. `make test` is what CI runs.
SWIFT ?= swift
# Release builds link the Swift runtime and Foundation statically: meshd then pages in only what
# it uses (idle RSS ≈ 26 MB instead of ≈ 31 MB) and calls into them directly (≈ 15 % less CPU per
# delivered message). Every release command uses the same flags, so SwiftPM does not rebuild.
RELEASE = -c release --static-swift-stdlib

.PHONY: all deps build release run demo install uninstall test python-test bench bench-compare vectors clean lab-test sim tsan

all: build

deps:
	@bash scripts/install-deps

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build $(RELEASE)

run: release
	.build/release/meshd --user

# Two devices, a shared timer (Swift app on one, Python app on the other) and notes sent while
# one device is down; in network namespaces with Avahi as root, else on loopback.
demo: build
	@bash scripts/demo .build/debug

# PREFIX (default /usr/local) and DESTDIR as usual; completions and man pages are generated from
# the binaries here. scripts/install lists the folders it writes and their variables. install
# builds nothing: `make release` first as yourself, then `sudo make install`, so root never
# writes into the checkout's .build. uninstall removes the same files (same PREFIX and DESTDIR).
PREFIX ?= /usr/local
install:
	PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" bash scripts/install .build/release

uninstall:
	PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" bash scripts/uninstall

# The Swift tests run in three steps. In-process logic (and the simulator) runs in parallel. The
# namespace labs run in parallel with each other: each has its own namespaces and avahi-daemons,
# and they mostly wait on mDNS. Tests of real daemons, child processes and in-process nodes on
# real sockets and timers run one at a time: on 2 cores, overlapping them starves each other's
# deadlines. A new suite of that kind needs a name PROCESS_TESTS matches. About five minutes in
# all on a 2-core machine (docs/TESTING.md).
PROCESS_TESTS = MeshDaemonTests\.(DeliveryIntegration|Process[A-Za-z0-9]*Tests|[A-Za-z]*ProcessTests|Meshd[A-Za-z]*Tests|Meshctl[A-Za-z]*Tests|MeshClientConnectTests|InstallScriptTests|ReadmeDaemonExampleTests|PythonClientTests|StoreCrashTests|Node[A-Za-z]*Tests|Handshake[A-Za-z]*Tests|Delivery(RefusalGate|ReplayBound|HandOutRetry|ReplayInboxBound)Tests|LocalAPI[A-Za-z]*Tests|SocketDescriptorTests|IdleMemoryReleaseTests|SystemdNotifierTests)|SessionMeshClientTests\.
LAB_TESTS = MeshDiscoveryTests\.[A-Za-z]*Lab[A-Za-z]*Tests|MeshDaemonTests\.DemoScriptTests
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --skip '$(PROCESS_TESTS)|$(LAB_TESTS)'
	$(SWIFT) test --skip-build --filter '$(LAB_TESTS)'
	$(SWIFT) test --skip-build --no-parallel --filter '$(PROCESS_TESTS)'
	$(MAKE) --no-print-directory python-test

# Steps 1 and 3 of the Swift tests under ThreadSanitizer, in a build directory of their own
# (.build-tsan): it reports the data races the compiler's checks let through (docs/TESTING.md),
# and a step with a report fails. About 10 minutes to build and 15 to run on 2 cores; the
# simulator runs 40 seeds here instead of 2 000.
TSAN = --sanitize=thread --scratch-path .build-tsan
tsan: deps
	$(SWIFT) build --build-tests $(TSAN)
	MESH_SIM_SEEDS=40 $(SWIFT) test --skip-build $(TSAN) --skip '$(PROCESS_TESTS)|$(LAB_TESTS)'
	$(SWIFT) test --skip-build $(TSAN) --no-parallel --filter '$(PROCESS_TESTS)'

# A long campaign of the deterministic simulator (docs/SIMULATION.md): SEEDS seeds from SEED_BASE
# on SIM_THREADS threads; a failing seed prints the command that replays it (its seed alone decides
# the run). BUG=inbox-hand-out or outbox-delete switches a test-only bug on.
SEEDS ?= 20000
SEED_BASE ?= 1
SIM_THREADS ?= 2
sim: deps
	$(SWIFT) build --build-tests
	MESH_SIM_SEEDS=$(SEEDS) MESH_SIM_SEED_BASE=$(SEED_BASE) MESH_SIM_THREADS=$(SIM_THREADS) \
		MESH_SIM_BUG=$(BUG) $(SWIFT) test --skip-build --filter SimulationCampaign

# The Python client's tests, against real daemons (.build/debug/meshd), through the install step a
# user takes: a fresh venv with `pip install ./clients/python` (offline: the package builds with
# its own standard-library backend); then `mypy --strict` on the package (mypy from PyPI). MESH_TEST_SEED reproduces the randomised encoding test.
PYTHON ?= python3
PY_VENV = .build/python-venv
# The type checker `mypy --strict` runs on the package; the one pip download of the tests (PyPI).
MYPY = mypy==2.4.1
python-test: deps
	$(SWIFT) build --product meshd
	$(SWIFT) build --product meshctl
	@rm -rf $(PY_VENV)
	$(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/python -m pip install --quiet --no-index --disable-pip-version-check ./clients/python
	cd clients/python/tests && MESHD=$(CURDIR)/.build/debug/meshd MESHCTL=$(CURDIR)/.build/debug/meshctl \
		$(CURDIR)/$(PY_VENV)/bin/python -m unittest discover -s . -t . -v
	$(PY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check $(MYPY)
	cd clients/python && $(CURDIR)/$(PY_VENV)/bin/python -m mypy --strict --cache-dir $(CURDIR)/.build/mypy-cache src/sessionmesh

# Discovery lab: test hosts in network namespaces (root). Not being able to run it is a failure
# here (MESH_REQUIRE_LAB=1 unless set otherwise). Prints the measured figures at the end.
lab-test: deps
	$(SWIFT) build --build-tests
	@mkdir -p .build
	@{ MESH_REQUIRE_LAB=$${MESH_REQUIRE_LAB:-1} $(SWIFT) test --skip-build --filter MeshDiscoveryTests; \
	   echo $$? > .build/lab-test.status; } 2>&1 | tee .build/lab-test.log
	@echo "== lab figures =="; grep -h 'lab figure' .build/lab-test.log || true
	@exit $$(cat .build/lab-test.status)

vectors: deps
	$(SWIFT) run mesh-vectors noise Tests/MeshCryptoTests/Vectors/noise-25519-chachapoly-sha256.json
	$(SWIFT) run mesh-vectors cpace Tests/MeshCryptoTests/Vectors/cpace-ristretto255-sha512.json

bench: deps
	$(SWIFT) run $(RELEASE) mesh-bench engine
	$(SWIFT) run $(RELEASE) mesh-bench crypto
	$(SWIFT) build $(RELEASE) --product meshd
	$(SWIFT) run $(RELEASE) mesh-bench delivery
	$(SWIFT) run $(RELEASE) mesh-bench relay

# Two meshd paired on loopback against two bridged Mosquitto brokers, the same workloads from one
# process (docs/BENCHMARKS.md, "Against a Mosquitto bridge"); about 3 minutes, not part of `make
# test`. BENCH_COMPARE_ARGS passes options (`--rounds 5`, `--paced 2000`; `mesh-bench compare-mqtt -h`).
bench-compare: deps
	$(SWIFT) build $(RELEASE) --product meshd
	$(SWIFT) run $(RELEASE) mesh-bench compare-mqtt $(BENCH_COMPARE_ARGS)

clean:
	rm -rf .build
