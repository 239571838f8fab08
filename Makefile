# SessionMesh build entry points. `make test` is what CI runs.
SWIFT ?= swift

.PHONY: all deps build release run test bench vectors clean

all: build

deps:
	@bash scripts/install-deps

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

run: release
	.build/release/meshd --user

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test

vectors: deps
	$(SWIFT) run mesh-vectors noise Tests/MeshCryptoTests/Vectors/noise-25519-chachapoly-sha256.json
	$(SWIFT) run mesh-vectors cpace Tests/MeshCryptoTests/Vectors/cpace-ristretto255-sha512.json

bench: deps
	$(SWIFT) run -c release mesh-bench engine
	$(SWIFT) run -c release mesh-bench crypto

clean:
	rm -rf .build
