# krypta — the targets CI and developers run. `make ci` = fmt check, clippy, tests, kat.
CARGO ?= cargo
FUZZ_SECONDS ?= 60

.PHONY: build test install lint fmt ci fuzz mutate kat test-vectors verify-vectors bench fixtures clean man

build:
	$(CARGO) build --release

test:
	$(CARGO) test

install:
	$(CARGO) install --path . --locked

# Man pages (krypta.1 and one per command) from the clap definitions, into $(MANDIR).
# KRYPTA= a built binary skips the build. Install: cp $(MANDIR)/*.1 /usr/local/share/man/man1/
MANDIR ?= target/man
KRYPTA ?=
man:
	@if [ -n "$(KRYPTA)" ]; then "$(KRYPTA)" manpage $(MANDIR); \
	else $(CARGO) run --quiet --release -- manpage $(MANDIR); fi

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

ci: lint test test-vectors

# Short fuzz runs of every parser target (needs nightly and cargo-fuzz:
# `cargo install cargo-fuzz`). FUZZ_SECONDS per target.
fuzz:
	cd fuzz && for t in $$($(CARGO) +nightly fuzz list); do \
		$(CARGO) +nightly fuzz run $$t -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 || exit 1; \
	done

# Black-box mutation campaign: MUTATE_N mutations of each kind of archive krypta writes
# through l, t, x, x --stdout, x -, info and repair --check of the release build (flags
# crashes, hangs, memory, silent acceptance, files left or written outside -o; ~4 per second
# on 2 cores). MUTATE_DIR keeps the corpus, findings.txt and the flagged archives.
MUTATE_N ?= 100
MUTATE_DIR ?= target/mutate
mutate:
	$(CARGO) build --release --locked
	python3 scripts/mutate_campaign.py $${CARGO_TARGET_DIR:-target}/release/krypta $(MUTATE_DIR) --per-kind $(MUTATE_N)

# Known-answer vectors through krypta's own code paths (embedded copies), then the files.
kat test-vectors:
	$(CARGO) run --release --quiet -- kat
	$(CARGO) run --release --quiet -- kat --dir test-vectors

# Independent check of our vector files against PyPI's cryptography-vectors (network).
verify-vectors:
	python3 scripts/verify_vectors.py

clean:
	$(CARGO) clean

# Benchmark fixtures (deterministic; see fixtures/README.md) into fixtures/data, and the
# version pairs of table 14 into fixtures/data/pairs (fetched with pip, apt, npm and cargo,
# checked against fixtures/pairs.tsv; a pair that cannot be fetched is named and skipped).
fixtures:
	$(CARGO) run --release --bin krypta -- bench --make-fixtures fixtures/data
	CARGO="$(CARGO)" ./scripts/fetch_pairs.sh fixtures/data

# Regenerates BENCHMARKS.md from `krypta bench` (release build). BENCH_ARGS=--quick for a
# one-minute indicative run.
bench:
	CARGO="$(CARGO)" BENCH_ARGS="$(BENCH_ARGS)" ./scripts/bench_md.sh
