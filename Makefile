# The two set-up commands are `make run` and `make test`; both install what they need.
SWIFT ?= swift
FUZZ_SECONDS ?= 300
ARGS ?=
# Test cases running at once. Unbounded, all ~600 start together: the test process holds
# ~3,800 descriptors in its first seconds (the in-process servers' databases), and Foundation's
# Process.run() then crashes reading /proc/self/fd (it copies each entry's whole 256-byte name,
# past the end of readdir's buffer); tests queued behind the rest also wait out their time
# limits before they get a thread. With 8 the process stays near 150 descriptors.
TEST_WIDTH ?= 8
# A bound on each pass of the Swift tests (scripts/run-swift-tests.sh; ~1 min here, a few in CI).
TEST_TIMEOUT ?= 1200

.PHONY: run test build release bench bench-ab fuzz weaknet clean

run: release
	.build/release/switchboard serve $(ARGS)

test:
	scripts/ensure-deps.sh nftables iproute2 nginx curl espeak-ng sox chromium chromium-driver
	scripts/ensure-python-tools.sh
	scripts/with-private-tmp.sh $(SWIFT) build --build-tests
	SWIFT=$(SWIFT) TEST_TIMEOUT=$(TEST_TIMEOUT) scripts/with-private-tmp.sh scripts/with-postgres.sh scripts/run-swift-tests.sh --parallel --num-workers 2 --experimental-maximum-parallelization-width $(TEST_WIDTH)
	scripts/with-private-tmp.sh scripts/check-lean-server.sh .build/debug/switchboard .build/debug/switchboard-dev
	scripts/check-public-testing-api.sh .build/debug
	scripts/with-private-tmp.sh scripts/check-systemd-unit.sh .build/debug/switchboard
	scripts/with-private-tmp.sh scripts/api-contract.sh .build/debug/switchboard
	CONTRACT_ADMIN=off CONTRACT_SECONDS=30 scripts/with-private-tmp.sh scripts/api-contract.sh .build/debug/switchboard
	scripts/with-private-tmp.sh scripts/demo-smoke.sh .build/debug/switchboard-dev
	scripts/with-private-tmp.sh scripts/browser-tests.sh .build/debug/switchboard .build/browser
	scripts/with-private-tmp.sh .build/debug/switchboard-dev bench wakeup --phones 8 --profiles good,poor_4g,wifi_30_loss --thresholds bench/wakeup-smoke-thresholds.json --out .build/weaknet-smoke
	scripts/with-private-tmp.sh scripts/fuzz.sh --smoke

build:
	scripts/ensure-deps.sh
	$(SWIFT) build

# Both binaries: the server, switchboard, and the developer tools, switchboard-dev.
release:
	scripts/ensure-deps.sh
	$(SWIFT) build -c release --product switchboard
	$(SWIFT) build -c release --product switchboard-dev
	scripts/check-lean-server.sh .build/release/switchboard .build/release/switchboard-dev

# Every benchmark beside its anchor (nginx, nginx + nchan, aioapns), then one summary table,
# which also rewrites the generated section of docs/benchmarks.md (bench/summary.py), and the
# audio table (speech quality per network profile), which also rewrites the README's.
bench: release
	$(SWIFT) build -c release --product push-bench
	scripts/ensure-python-tools.sh bench
	rm -rf .build/bench-summary && mkdir -p .build/bench-summary
	python3 -c 'import sys; sys.path.insert(0, "bench"); import summary; print(summary.commit("."))' > .build/bench-summary/commit
	scripts/with-private-tmp.sh .build/release/switchboard-dev bench audio --out $(CURDIR)/.build/bench-summary/bench-audio.tsv
	BENCH_SUMMARY_DIR=$(CURDIR)/.build/bench-summary scripts/bench-http.sh .build/release/switchboard
	BENCH_SEED_SOURCES=$(CURDIR) BENCH_SUMMARY_DIR=$(CURDIR)/.build/bench-summary scripts/bench-events.sh .build/release/switchboard
	BENCH_SUMMARY_DIR=$(CURDIR)/.build/bench-summary scripts/bench-calls.sh .build/release/switchboard
	BENCH_SUMMARY_DIR=$(CURDIR)/.build/bench-summary scripts/bench-push.sh .build/release/switchboard-dev .build/release/push-bench
	BENCH_SUMMARY_DIR=$(CURDIR)/.build/bench-summary scripts/with-postgres.sh scripts/bench-scaleout.sh .build/release/switchboard
	BENCH_SUMMARY_DIR=$(CURDIR)/.build/bench-summary scripts/bench-relay.sh .build/release/switchboard .build/release/switchboard-dev
	scripts/bench-summary.sh .build/bench-summary --write docs/benchmarks.md
	scripts/bench-summary.sh .build/bench-summary --only bench-audio --write README.md --markers audio

# A change against a base revision: builds BASE beside the working tree and runs BENCHES
# alternately (base, ours, ours, base, ...), ROUNDS rounds, printing each figure's ratio and spread.
#   make bench-ab BASE=main~3 BENCHES=events,calls ROUNDS=5
BASE ?= HEAD
BENCHES ?= events,calls
ROUNDS ?= 5
bench-ab:
	scripts/ensure-deps.sh
	scripts/with-private-tmp.sh scripts/bench-ab.sh $(BASE) $(BENCHES) $(ROUNDS)

# The full wake-up regression harness: 200 phones, every network profile, gated, under the
# proxy's loss model; then under real kernel packet loss (nftables in a network namespace):
# gated on the profiles it can meet, reported on the lossy Wi-Fi ones (docs/weak-networks.md: real TCP with
# lost ACKs backs off far longer than the model's stalls; one push's p95 exceeds 1.5 s there).
# Exits 1 when a gated run fails.
weaknet: release
	scripts/ensure-deps.sh nftables iproute2
	model=0; kernel=0; \
	.build/release/switchboard-dev bench wakeup --out .build/weaknet $(ARGS) || model=1; \
	.build/release/switchboard-dev bench wakeup --impairment kernel --profiles good,poor_4g,poor_3g --out .build/weaknet-kernel || kernel=1; \
	.build/release/switchboard-dev bench wakeup --impairment kernel --profiles wifi_30_loss,wifi_50_loss --out .build/weaknet-kernel-wifi \
		|| echo "weaknet: kernel impairment on the lossy Wi-Fi profiles: reported, not gated (see docs/weak-networks.md)"; \
	exit $$((model | kernel))

fuzz:
	scripts/ensure-deps.sh
	scripts/fuzz.sh $(FUZZ_SECONDS)

clean:
	rm -rf .build Fuzz/build
	git worktree prune
