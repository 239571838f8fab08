# SessionMesh build entry points. `make test` is what CI runs.
SWIFT ?= swift

.PHONY: all deps build release run test bench vectors clean lab-test

all: build

deps:
	@bash scripts/install-deps

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

run: release
	.build/release/meshd --user

# Tests run one at a time: many start real daemons, child processes and network namespaces, and
# on a 2-core machine parallel runs starve each other's deadlines. About two minutes in all.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --no-parallel

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
	$(SWIFT) run -c release mesh-bench engine
	$(SWIFT) run -c release mesh-bench crypto
	$(SWIFT) build -c release --product meshd
	$(SWIFT) run -c release mesh-bench delivery

clean:
	rm -rf .build
