# The two commands of the README:
#   make bench   install what is missing, build, run `baton info` and the
#                default benchmark comparison (every kind and peer, 1/2/8
#                threads), write results/micro.json, and end with
#                results/report.html (machine, tables, figures; the
#                plotting environment comes from tools/plot-deps.sh, and
#                the report says why when it cannot be made)
#   make test    build and run every test through ctest: the normal build,
#                the ThreadSanitizer build of the stress suite, the default
#                kind's, combining and barrier tests, the AddressSanitizer
#                build of the unit, server and barrier tests (built without
#                the hardware-transaction path: -DBATON_HTM=OFF), and the
#                UndefinedBehaviorSanitizer build of the unit, stress,
#                server and barrier tests; the plotting environment first
#                (the plot tests skip only where it cannot be made); and the
#                Debian packages' test
#
# Other targets: build, install (PREFIX=/usr/local), test-fast (normal build
# only), plot-deps (the plotting environment, $(BUILD)/plot-venv), torture (baton torture for SECONDS seconds, default 60, every kind
# under every fault: make torture SECONDS=1800), deb (the Debian packages,
# in build-deb/), test-deb (make deb, then tests/deb/test.sh), clean.

BUILD   ?= build
DEB_BUILD ?= build-deb
PREFIX  ?= /usr/local
JOBS    ?= $(shell nproc)
CMAKE_GEN := -G Ninja
BATON   := $(BUILD)/src/cli/baton
BENCH_ARGS ?= --locks all --threads 1,2,8 --duration 0.5 --repeat 3 --json results/micro.json
SECONDS ?= 60
PLOT_VENV := $(BUILD)/plot-venv
# Recipes that pipe into tee keep the bench's exit status.
SHELL := /bin/bash

.PHONY: all build bench test test-fast test-tsan test-asan test-ubsan test-deb deb torture install clean deps \
        deps-bench deps-deb plot-deps

all: build

deps:
	@tools/deps.sh

deps-bench:
	@tools/deps.sh --bench

deps-deb:
	@tools/deps.sh --deb

# Never fails: without it `baton plot` says why, the report too, and the
# plot tests skip.
plot-deps:
	@tools/plot-deps.sh $(PLOT_VENV) || echo "make: no plotting environment ($$(cat $(PLOT_VENV).why 2>/dev/null)); the report will have no figures" >&2

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

bench: deps-bench
	@# reconfigure so that peers installed just now are found
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	@mkdir -p results
	set -o pipefail; $(BATON) info --json results/machine.json | tee results/info.txt
	set -o pipefail; $(BATON) bench micro $(BENCH_ARGS) | tee results/micro.txt
	@$(MAKE) --no-print-directory plot-deps
	@# Exit 3: no matplotlib (the report says why); 127: no Python at all.
	$(BATON) plot results/micro.json -o results/figures --report results/report.html \
	  --info results/info.txt --machine results/machine.json --text results/micro.txt || \
	  { rc=$$?; [[ $$rc -eq 3 ]] || { printf '<!DOCTYPE html><meta charset="utf-8"><title>baton report</title><h1>baton report</h1><p><b>Figures are missing:</b> baton plot exited %s (see make'"'"'s output); the tables are results/micro.txt, the machine results/info.txt.</p>\n' $$rc > results/report.html; }; }
	@echo "make bench: wrote results/report.html"

test-fast: build plot-deps
	cd $(BUILD) && ctest --output-on-failure -j 1

build-tsan/build.ninja:
	cmake -S . -B build-tsan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_SANITIZE=thread -DBATON_PEERS=OFF

test-tsan: deps build-tsan/build.ninja
	@# Not test_server: TSan cannot follow its fork tests (a child that starts
	@# threads after a multi-threaded fork dies or reuses thread ids).
	cmake --build build-tsan -j $(JOBS) --target stress stress_chaos test_default test_combining test_barrier test_timed test_cond test_hpp example_hpp_demo
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --output-on-failure -R '^(stress|default$$|combining$$|barrier$$|timed$$|cond$$|hpp$$|example_hpp_demo$$)'

build-asan/build.ninja:
	cmake -S . -B build-asan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DBATON_SANITIZE=address -DBATON_PEERS=OFF -DBATON_HTM=OFF

test-asan: deps build-asan/build.ninja
	cmake --build build-asan -j $(JOBS) --target test_api test_typed test_rcl test_combining example_critical_section test_elide test_server test_barrier test_timed test_cond
	cd build-asan && ASAN_OPTIONS="detect_leaks=1" ctest --output-on-failure -R '^(api|typed|rcl|combining|example_critical_section|elide.*|server|barrier|timed|cond)$$'

build-ubsan/build.ninja:
	cmake -S . -B build-ubsan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_SANITIZE=undefined -DBATON_PEERS=OFF

# UndefinedBehaviorSanitizer over the unit tests, the stress suite, the
# default kind's test, barriers and servers: the first report stops the test.
test-ubsan: deps build-ubsan/build.ninja
	cmake --build build-ubsan -j $(JOBS) --target test_api test_typed test_rcl test_combining test_default test_barrier test_server stress example_critical_section test_timed test_cond
	cd build-ubsan && UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1" ctest --output-on-failure -R '^(api|typed|rcl|combining|default|barrier|server|stress|example_critical_section|timed|cond)$$'

# Debian packages (cmake/packaging.cmake): libbaton0, libbaton-dev and
# baton-tools, from a tree of their own configured for /usr (the build/ tree
# is for `make install PREFIX=...`).  The peer libraries are installed first
# so that every baton-tools has the same `baton bench`.
$(DEB_BUILD)/build.ninja:
	cmake -S . -B $(DEB_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_INSTALL_PREFIX=/usr -DBATON_TESTS=OFF

deb: deps-deb $(DEB_BUILD)/build.ninja
	cmake --build $(DEB_BUILD) -j $(JOBS)
	rm -f $(DEB_BUILD)/*.deb
	cd $(DEB_BUILD) && cpack -G DEB
	@ls -l $(DEB_BUILD)/*.deb

# The packages unpacked into a scratch root: the examples build against them
# (pkg-config, find_package) and run, the interposer works; and a package
# missing a file must fail (tests/deb/test.sh).
test-deb: deb
	bash tests/deb/test.sh $(DEB_BUILD)

test: test-fast test-tsan test-asan test-ubsan test-deb

torture: build
	$(BATON) torture --seconds $(SECONDS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-tsan build-asan build-ubsan $(DEB_BUILD)
