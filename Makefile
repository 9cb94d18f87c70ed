# The two commands of the README:
#   make bench   install what is missing, build, run `baton info` and the
#                default benchmark comparison (every kind and peer, 1/2/8
#                threads), write results/micro.json
#   make test    build and run every test through ctest: the normal build,
#                the ThreadSanitizer build of the stress suite, the default
#                kind's, combining and barrier tests, the AddressSanitizer
#                build of the unit, server and barrier tests (built without
#                the hardware-transaction path: -DBATON_HTM=OFF), and the
#                UndefinedBehaviorSanitizer build of the unit, stress,
#                server and barrier tests
#
# Other targets: build, install (PREFIX=/usr/local), test-fast (normal build
# only), torture (baton torture for SECONDS seconds, default 60, every kind
# under every fault: make torture SECONDS=1800), clean.

BUILD   ?= build
PREFIX  ?= /usr/local
JOBS    ?= $(shell nproc)
CMAKE_GEN := -G Ninja
BATON   := $(BUILD)/src/cli/baton
BENCH_ARGS ?= --locks all --threads 1,2,8 --duration 0.5 --repeat 3 --json results/micro.json
SECONDS ?= 60

.PHONY: all build bench test test-fast test-tsan test-asan test-ubsan torture install clean deps deps-bench

all: build

deps:
	@tools/deps.sh

deps-bench:
	@tools/deps.sh --bench

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

bench: deps-bench
	@# reconfigure so that peers installed just now are found
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	@mkdir -p results
	$(BATON) info --json results/machine.json
	$(BATON) bench micro $(BENCH_ARGS)

test-fast: build
	cd $(BUILD) && ctest --output-on-failure -j 1

build-tsan/build.ninja:
	cmake -S . -B build-tsan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_SANITIZE=thread -DBATON_PEERS=OFF

test-tsan: deps build-tsan/build.ninja
	@# Not test_server: TSan cannot follow its fork tests (a child that starts
	@# threads after a multi-threaded fork dies or reuses thread ids).
	cmake --build build-tsan -j $(JOBS) --target stress stress_chaos test_default test_combining test_barrier test_hpp example_hpp_demo
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --output-on-failure -R '^(stress|default$$|combining$$|barrier$$|hpp$$|example_hpp_demo$$)'

build-asan/build.ninja:
	cmake -S . -B build-asan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DBATON_SANITIZE=address -DBATON_PEERS=OFF -DBATON_HTM=OFF

test-asan: deps build-asan/build.ninja
	cmake --build build-asan -j $(JOBS) --target test_api test_typed test_rcl test_combining example_critical_section test_elide test_server test_barrier
	cd build-asan && ASAN_OPTIONS="detect_leaks=1" ctest --output-on-failure -R '^(api|typed|rcl|combining|example_critical_section|elide.*|server|barrier)$$'

build-ubsan/build.ninja:
	cmake -S . -B build-ubsan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_SANITIZE=undefined -DBATON_PEERS=OFF

# UndefinedBehaviorSanitizer over the unit tests, the stress suite, the
# default kind's test, barriers and servers: the first report stops the test.
test-ubsan: deps build-ubsan/build.ninja
	cmake --build build-ubsan -j $(JOBS) --target test_api test_typed test_rcl test_combining test_default test_barrier test_server stress example_critical_section
	cd build-ubsan && UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1" ctest --output-on-failure -R '^(api|typed|rcl|combining|default|barrier|server|stress|example_critical_section)$$'

test: test-fast test-tsan test-asan test-ubsan

torture: build
	$(BATON) torture --seconds $(SECONDS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-tsan build-asan build-ubsan
