# faultline - top-level build.
#
#   make            build everything into $(OUT)/ (default build/)
#   make run        the main job on this host: own redis-server, the probe,
#                   a live summary until Ctrl-C
#   make test       install what is missing, build, run every test
#   make asan       build and test under AddressSanitizer + UBSan
#   make chaos      the fault suite with minute-long outages (CHAOS_SECONDS)
#   make fuzz       build the libFuzzer targets and run each for FUZZ_TIME s
#   make bench      benchmarks, each printing ratios against a peer
#   make install    install binaries, etc/ and runbooks under PREFIX
#   make deb        a Debian package of the same (OUT/faultline_VERSION_ARCH.deb)
#   make vmlinux    regenerate bpf/vmlinux.h from this kernel's BTF
#
# vmlinux.h is checked in (bpf/vmlinux.h), not generated at build time.
# CO-RE relocates every field access at load time against the running
# kernel's BTF, so the header only has to declare the types we use; building
# from a checked-in copy keeps builds reproducible and lets them run on
# build hosts without /sys/kernel/btf/vmlinux (containers, CI builders).
# `make vmlinux` refreshes it when a probe needs a type from a newer kernel.

OUT ?= build
PREFIX ?= /usr/local
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
VERSION := 0.1.0
, := ,
# Seconds each fuzz target runs: 5 min by default (21 targets: 1 h 45 min);
# FUZZ_TIME=100 is the 35-minute round of docs/tests.md, FUZZ_TIME=30 a
# quick pass after a change.
FUZZ_TIME ?= 300
# Real drive outputs (../shared/testdata) seed the drive parsers' fuzzers.
SHARED ?= ../shared

CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
LLVM_STRIP ?= llvm-strip
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

WARN := -Wall -Wextra -Werror -Wno-missing-field-initializers
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 $(WARN) -D_GNU_SOURCE -DFL_VERSION='"$(VERSION)"' -I/usr/include/libnl3
# Includes are path-qualified: "core/strbuf.h", "model/snapshot.h",
# "store/store.h" (lib/), "rules/engine/engine.h", "bpf/block.h" (the tree), and
# generated headers (skeletons, protoc-c) from $(OUT) and $(OUT)/gen.
INCS := -iquote . -Ilib -I$(OUT) -I$(OUT)/gen
# Each binary records only the shared libraries it calls.
LDFLAGS += -Wl,--as-needed
# Debian's hardening (lintian checks the package for it): stack protector,
# fortified libc calls, read-only relocations bound at start.
CFLAGS += -fstack-protector-strong
LDFLAGS += -Wl,-z,relro,-z,now
ifneq ($(SAN),1)
CFLAGS += -D_FORTIFY_SOURCE=2
endif
LDLIBS := -lbpf -lelf -lz -lzstd -lhiredis -lmsgpackc -lyaml -lnl-route-3 -lnl-3 -latasmart -ljson-c -lpcre2-8 -ldw -lelf -lprotobuf-c -lcurl -lssl -lcrypto -lmicrohttpd -lcrypt -lsnappy -lstdc++ -lpthread -lm
ifeq ($(SAN),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif
# The one C++ file (web/float_text.cc: libstdc++'s std::to_chars behind a C
# function), built with the C files' warnings and hardening.
CXX ?= g++
CXXFLAGS ?= -O2 -g
CXXFLAGS += -std=c++17 $(WARN) -D_GNU_SOURCE -fstack-protector-strong \
	$(if $(filter 1,$(SAN)),-fsanitize=address$(,)undefined -fno-omit-frame-pointer,-D_FORTIFY_SOURCE=2)

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -Ibpf -Ilib

# lib/ in strata, each a static library: core (utilities, no faultline
# types), model (the data model and its wire formats: snapshots, alerts,
# drives, profiles), store (Redis-backed features).  A stratum may include
# only itself and those below it; the build enforces it by compiling each
# with an include path that holds nothing else ($(OUT)/strata/NAME).
LIB_SRCS := $(wildcard lib/*/*.c)
CORE_OBJS := $(patsubst %.c,$(OUT)/%.o,$(wildcard lib/core/*.c))
MODEL_OBJS := $(patsubst %.c,$(OUT)/%.o,$(wildcard lib/model/*.c)) $(OUT)/gen/profile.pb-c.o
STORE_OBJS := $(patsubst %.c,$(OUT)/%.o,$(wildcard lib/store/*.c))
LIBS_A := $(OUT)/libfaultline-store.a $(OUT)/libfaultline-model.a $(OUT)/libfaultline-core.a
BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(BPF_SRCS:bpf/%.bpf.c=$(OUT)/bpf/%.bpf.o)
SKELS := $(BPF_SRCS:bpf/%.bpf.c=$(OUT)/%.skel.h)
PROBE_SRCS := $(wildcard probes/*.c)
PROBE_OBJS := $(PROBE_SRCS:%.c=$(OUT)/%.o) $(OUT)/gen/metrics.pb-c.o $(OUT)/gen/remote.pb-c.o
CLI_SRCS := $(wildcard cli/*.c)
CLI_OBJS := $(CLI_SRCS:%.c=$(OUT)/%.o)
ALERTER_OBJS := $(OUT)/alerter/config.o $(OUT)/alerter/alert_view.o $(OUT)/alerter/receiver.o $(OUT)/alerter/route.o $(OUT)/alerter/inhibit.o $(OUT)/alerter/time_interval.o $(OUT)/alerter/evidence.o $(OUT)/alerter/url.o $(OUT)/alerter/payload.o $(OUT)/alerter_default_config.o
TEST_SRCS := $(wildcard tests/test_*.c)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(OUT)/tests/%)
TEST_HELPERS := $(OUT)/tests/helpers.o $(OUT)/tests/receiver.o $(OUT)/tests/cluster.o
FUZZ_SRCS := $(wildcard fuzz/fuzz_*.c)
FUZZ_REPLAY := $(FUZZ_SRCS:fuzz/%.c=$(OUT)/fuzz-replay/%)

SIM_OBJS := $(patsubst %.c,$(OUT)/%.o,$(wildcard sim/*.c))
# rules/ in layers, each a folder: lang (the expression language, rule
# files, templates, the evaluator), engine (history, alert state, rollups,
# baselines, fleet partials), shard (partitions, workers, the outbox), and
# ruletest (rule unit tests); the daemon (rules/*.c) sits on all of them.
# A layer may include only lib/ and the layers it is built on; the build
# enforces it as it does lib's strata ($(OUT)/strata/rules-LAYER), and
# scripts/check-layers.sh refuses include cycles between modules.
RULES_LAYERS := lang engine shard ruletest
RULES_LAYER_lang := lang
RULES_LAYER_engine := lang engine
RULES_LAYER_shard := lang engine shard
RULES_LAYER_ruletest := lang engine ruletest
LANG_SRCS := $(wildcard rules/lang/*.c)
ENGINE_SRCS := $(wildcard rules/engine/*.c)
SHARD_SRCS := $(wildcard rules/shard/*.c)
RULES_SRCS := $(foreach l,$(RULES_LAYERS),$(wildcard rules/$(l)/*.c)) \
	$(filter-out rules/main.c,$(wildcard rules/*.c))
RULES_OBJS := $(RULES_SRCS:%.c=$(OUT)/%.o)
# faultline-web: Prometheus' HTTP API over the tiers (rules/lang evaluates).
WEB_OBJS := $(OUT)/web/query.o $(OUT)/web/query_load.o $(OUT)/web/query_hot.o $(OUT)/web/prom_api.o $(OUT)/web/pages.o $(OUT)/web/float_text.o
BINS := $(OUT)/faultline-probe $(OUT)/faultline-rules $(OUT)/faultline-alerter $(OUT)/faultline \
	$(OUT)/faultline-web

.PHONY: all check-deps check-layers deps run demo test asan chaos fuzz bench install uninstall clean vmlinux deb
.DELETE_ON_ERROR:
.SECONDARY:

all: check-deps check-layers $(BINS) $(TEST_BINS)

# No include loops between modules (scripts/check-layers.sh says why).
check-layers:
	@scripts/check-layers.sh

# Building never installs anything: it checks and says what is missing.
# `make deps` (and make test, make run, make demo) install it, idempotently.
check-deps:
	@scripts/deps.sh --check >/dev/null 2>&1 || { scripts/deps.sh --check; \
		echo "make: packages are missing; run 'make deps' (or make test / make run, which install them)"; \
		exit 1; }

deps:
	@scripts/deps.sh --check 2>/dev/null || scripts/deps.sh

$(OUT)/%.o: %.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INCS) -MMD -MP -c $< -o $@

$(OUT)/%.o: %.cc | check-deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(INCS) -MMD -MP -c $< -o $@

# A stratum's include path: symlinks to itself and the strata below it.
STRATA := core model store
$(OUT)/strata/.made: Makefile
	@for s in $(STRATA); do mkdir -p $(OUT)/strata/$$s; done
	@ln -sfn $(CURDIR)/lib/core $(OUT)/strata/core/core
	@for s in core model; do ln -sfn $(CURDIR)/lib/$$s $(OUT)/strata/model/$$s; done
	@for s in core model store; do ln -sfn $(CURDIR)/lib/$$s $(OUT)/strata/store/$$s; done
	@$(foreach l,$(RULES_LAYERS),mkdir -p $(OUT)/strata/rules-$(l)/rules; \
		for s in core model store; do ln -sfn $(CURDIR)/lib/$$s $(OUT)/strata/rules-$(l)/$$s; done; \
		for r in $(RULES_LAYER_$(l)); do ln -sfn $(CURDIR)/rules/$$r $(OUT)/strata/rules-$(l)/rules/$$r; done;)
	@touch $@

$(OUT)/lib/%.o: lib/%.c | check-deps $(OUT)/strata/.made
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(OUT)/strata/$(firstword $(subst /, ,$*)) -I$(OUT)/gen \
		-MMD -MP -c $< -o $@

# A rules layer's objects: its strata path only; the daemon's: the tree's.
$(OUT)/rules/%.o: rules/%.c | check-deps $(OUT)/strata/.made
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(if $(findstring /,$*),-I$(OUT)/strata/rules-$(firstword $(subst /, ,$*)) \
		-I$(OUT)/gen,$(INCS)) -MMD -MP -c $< -o $@

$(OUT)/libfaultline-core.a: $(CORE_OBJS)
$(OUT)/libfaultline-model.a: $(MODEL_OBJS)
$(OUT)/libfaultline-store.a: $(STORE_OBJS)
$(LIBS_A):
	@rm -f $@
	$(AR) rcs $@ $^

# pprof's profile.proto, compiled with protoc-c (generated code gets its own
# warning flags: it is not ours to fix).
$(OUT)/gen/profile.pb-c.c $(OUT)/gen/profile.pb-c.h: proto/profile.proto | check-deps
	@mkdir -p $(OUT)/gen
	protoc-c --proto_path=proto --c_out=$(OUT)/gen $<

$(OUT)/gen/profile.pb-c.o: $(OUT)/gen/profile.pb-c.c
	$(CC) -O2 -g -std=gnu11 $(if $(filter 1,$(SAN)),-fsanitize=address$(,)undefined) -I$(OUT)/gen -c $< -o $@

$(MODEL_OBJS) $(STORE_OBJS) $(TEST_BINS): $(OUT)/gen/profile.pb-c.h

# Prometheus' protobuf exposition (native histograms on /metrics) and its
# remote write request, the same way.
$(OUT)/gen/%.pb-c.c $(OUT)/gen/%.pb-c.h: proto/%.proto | check-deps
	@mkdir -p $(OUT)/gen
	protoc-c --proto_path=proto --c_out=$(OUT)/gen $<

$(OUT)/gen/metrics.pb-c.o $(OUT)/gen/remote.pb-c.o: $(OUT)/gen/%.pb-c.o: $(OUT)/gen/%.pb-c.c
	$(CC) -O2 -g -std=gnu11 $(if $(filter 1,$(SAN)),-fsanitize=address$(,)undefined) -I$(OUT)/gen -c $< -o $@

$(PROBE_OBJS) $(TEST_BINS): $(OUT)/gen/metrics.pb-c.h $(OUT)/gen/remote.pb-c.h

# The embedded default probe config is etc/probe.yaml itself.
$(OUT)/probe_default_config.c: etc/probe.yaml scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh probe_default_config $< > $@

$(OUT)/probe_default_config.o: $(OUT)/probe_default_config.c
	$(CC) $(CFLAGS) -c $< -o $@

# The skeleton embeds the object in the probe and libbpf reads it at start:
# DWARF (90% of it) is dropped, BTF and its line info (.BTF.ext) stay.
$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) lib/model/hist_layout.h | check-deps
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(LLVM_STRIP) -g $@

$(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

# Probe sources include skeletons.
$(PROBE_OBJS): $(SKELS)

$(OUT)/faultline-probe: $(PROBE_OBJS) $(OUT)/probe_default_config.o $(LIBS_A)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(OUT)/faultline: $(CLI_OBJS) $(ALERTER_OBJS) $(RULES_OBJS) $(SIM_OBJS) $(LIBS_A)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# faultline-rules serves /metrics with the probe's event loop and server.
$(OUT)/faultline-rules: $(OUT)/rules/main.o $(RULES_OBJS) \
		$(LIBS_A)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(OUT)/alerter_default_config.c: etc/alerter.yaml scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh alerter_default_config $< > $@

$(OUT)/alerter_default_config.o: $(OUT)/alerter_default_config.c
	$(CC) $(CFLAGS) -c $< -o $@


$(OUT)/faultline-alerter: $(OUT)/alerter/main.o $(OUT)/alerter/stream.o $(OUT)/alerter/groups.o \
	$(OUT)/alerter/delivery.o $(OUT)/alerter/mute.o $(OUT)/alerter/api.o $(ALERTER_OBJS) \
		$(LIBS_A)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(OUT)/faultline-web: $(OUT)/web/main.o $(WEB_OBJS) $(RULES_OBJS) $(OUT)/cli/wear_report.o $(LIBS_A)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# Test binaries link the library and the probe's objects (minus main).
PROBE_LIB_OBJS := $(filter-out $(OUT)/probes/main.o,$(PROBE_OBJS)) $(OUT)/probe_default_config.o \
	$(ALERTER_OBJS) $(RULES_OBJS) $(SIM_OBJS) $(OUT)/cli/wear_report.o $(WEB_OBJS)
$(OUT)/tests/%: tests/%.c $(TEST_HELPERS) $(PROBE_LIB_OBJS) $(LIBS_A) $(SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INCS) $(LDFLAGS) $< $(TEST_HELPERS) $(PROBE_LIB_OBJS) $(LIBS_A) \
		$(LDLIBS) -lcriterion -o $@

# Every fuzz target built with gcc over the binaries' objects and a main that
# replays files (fuzz/replay_main.c): tests/run.sh runs fuzz/seeds/TARGET/*
# through each, so seeds and the inputs of past crashes stay regression tests.
$(OUT)/fuzz-replay/%: fuzz/%.c fuzz/replay_main.c $(PROBE_LIB_OBJS) $(LIBS_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INCS) $(LDFLAGS) $< fuzz/replay_main.c \
		$(PROBE_LIB_OBJS) $(LIBS_A) $(LDLIBS) -o $@

all: $(FUZZ_REPLAY)

# Test tools: programs the tests run to build real faults.
$(OUT)/tests/tools/slowfs: tests/tools/slowfs.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $$(pkg-config --cflags fuse3) $< $$(pkg-config --libs fuse3) -o $@

# Frame pointers and no inlining, so its function shows in CPU profiles.
$(OUT)/tests/tools/hotloop: tests/tools/hotloop.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -fno-omit-frame-pointer -fno-inline $< -o $@

all: $(OUT)/tests/tools/slowfs $(OUT)/tests/tools/hotloop

# The whole chain on this machine with real faults (root): see scripts/demo.sh.
# These install what is missing first, then build (in that order, also
# under -j: a sub-make each).
demo:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory all
	scripts/demo.sh $(OUT)

run:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory all
	scripts/run.sh $(OUT)

test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory all
	tests/run.sh $(OUT)

asan:
	$(MAKE) OUT=build-asan SAN=1 test

# The fault suite with minute-long faults (make test runs it with 6 s ones),
# then the restart and host cases it builds on.  CHAOS_SECONDS per fault.
CHAOS_SECONDS ?= 60
chaos: all
	FL_OUT=$(OUT) FL_CHAOS_SECONDS=$(CHAOS_SECONDS) $(OUT)/tests/test_chaos --jobs=1 --verbose
	FL_OUT=$(OUT) $(OUT)/tests/test_restarts --jobs=1
	FL_OUT=$(OUT) $(OUT)/tests/test_hosts --jobs=1

FUZZ_CFLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE -DFL_VERSION='"$(VERSION)"' -iquote . -Ilib -I$(OUT)/gen -I/usr/include/libnl3 \
	-fsanitize=fuzzer,address,undefined
fuzz: check-deps $(OUT)/alerter_default_config.c $(OUT)/probe_default_config.c $(OUT)/gen/profile.pb-c.c
	@mkdir -p $(OUT)/fuzz
	$(CLANG)++ -g -O1 -std=c++17 -iquote . -fsanitize=address,undefined -c web/float_text.cc \
		-o $(OUT)/fuzz/float_text.o
	@set -e; for f in $(FUZZ_SRCS); do \
		t=$$(basename $$f .c); \
		echo "fuzz: building $$t"; \
		extra=; case $$t in fuzz_alerter_config) extra="alerter/config.c alerter/alert_view.c alerter/receiver.c alerter/route.c alerter/inhibit.c alerter/time_interval.c alerter/evidence.c alerter/url.c alerter/payload.c $(OUT)/alerter_default_config.c";; \
		fuzz_rules|fuzz_chunk) extra="$(LANG_SRCS)";; \
		fuzz_ruletest) extra="$(LANG_SRCS) $(ENGINE_SRCS) $(wildcard rules/ruletest/*.c)";; \
		fuzz_alert) extra="$(LANG_SRCS) $(ENGINE_SRCS)";; \
		fuzz_scenario) extra="sim/scenario.c";; \
		fuzz_partials) extra="$(LANG_SRCS) $(ENGINE_SRCS) $(SHARD_SRCS)";; \
		fuzz_perfmap) extra="probes/perfmap.c";; \
		fuzz_proc_maps) extra="probes/proc_maps.c";; \
		fuzz_python) extra="probes/python.c";; \
		fuzz_kallsyms) extra="probes/kernel_syms.c";; \
		fuzz_unwind) extra="probes/unwind.c probes/proc_maps.c probes/unwind_table.c probes/unwind_cache.c probes/symbolize.c probes/build_id.c probes/perfmap.c probes/bpfmap.c probes/kernel_syms.c";; \
		fuzz_topology) extra="$(LANG_SRCS)";; \
		fuzz_http_args) extra="web/prom_api.c web/query.c web/query_load.c web/query_hot.c $(OUT)/fuzz/float_text.o $(LANG_SRCS) $(ENGINE_SRCS)";; \
		fuzz_probe_config) extra="probes/probe_config.c probes/prom.c $(OUT)/probe_default_config.c";; esac; \
		$(CLANG) $(FUZZ_CFLAGS) -I$(OUT) $$extra $$f $(LIB_SRCS) $(OUT)/gen/profile.pb-c.c $(LDLIBS) -o $(OUT)/fuzz/$$t; \
		mkdir -p $(OUT)/fuzz/corpus-$$t; \
		cp -n fuzz/seeds/$$t/* $(OUT)/fuzz/corpus-$$t/ 2>/dev/null || true; \
		case $$t in \
		fuzz_smartctl_json) cp -n $(SHARED)/testdata/smartctl/*.json \
			$(OUT)/fuzz/corpus-$$t/ 2>/dev/null || true ;; \
		fuzz_atasmart_blob) cp -n $(SHARED)/testdata/atasmart-blobs/*[!M] \
			$(OUT)/fuzz/corpus-$$t/ 2>/dev/null || true ;; \
		esac; \
		dict=; case $$t in \
		fuzz_config|fuzz_probe_config|fuzz_alerter_config|fuzz_topology|fuzz_scenario|fuzz_ruletest) \
			dict=-dict=fuzz/dicts/yaml.dict ;; \
		fuzz_rules) dict=-dict=fuzz/dicts/expr.dict ;; \
		fuzz_smartctl_json|fuzz_alert|fuzz_host_entry|fuzz_partials|fuzz_records) dict=-dict=fuzz/dicts/json.dict ;; \
		fuzz_cluster|fuzz_deploy|fuzz_wake) dict=-dict=fuzz/dicts/resp.dict ;; \
		esac; \
		echo "fuzz: running $$t for $(FUZZ_TIME) s $$dict"; \
		$(OUT)/fuzz/$$t -max_total_time=$(FUZZ_TIME) -rss_limit_mb=2048 $$dict \
			-artifact_prefix=$(OUT)/fuzz/$$t- \
			-print_final_stats=1 $(OUT)/fuzz/corpus-$$t > $(OUT)/fuzz/$$t.log 2>&1 || true; \
		tail -n 12 $(OUT)/fuzz/$$t.log; \
	done; \
	echo; echo "fuzz: $(FUZZ_TIME) s per target; crashes are in $(OUT)/fuzz/ (put the input in"; \
	echo "      fuzz/seeds/TARGET/ with the fix, so make test replays it)"; \
	printf '  %-22s %12s %9s %8s\n' target execs execs/s crashes; \
	for f in $(FUZZ_SRCS); do t=$$(basename $$f .c); \
		n=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(OUT)/fuzz/$$t.log | tail -n1); \
		printf '  %-22s %12s %9s %8s\n' $$t "$${n:-0}" "$$(( $${n:-0} / $(FUZZ_TIME) ))" \
			"$$(ls $(OUT)/fuzz/$$t-crash-* $(OUT)/fuzz/$$t-leak-* 2>/dev/null | wc -l)"; \
	done

$(OUT)/bench/fleet_fill: bench/fleet_fill.c $(LIBS_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INCS) $^ $(LDLIBS) -o $@

$(OUT)/bench/codec_cost: bench/codec_cost.c $(LIBS_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INCS) $^ $(LDLIBS) -o $@

# The probe's BPF objects, loaded alone: the floor under its start-up.
$(OUT)/bench/bpf_load_cost: bench/bpf_load_cost.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< -lbpf -o $@

bench: all $(OUT)/bench/fleet_fill $(OUT)/bench/codec_cost $(OUT)/bench/bpf_load_cost
	@scripts/deps.sh --bench --check 2>/dev/null || scripts/deps.sh --bench
	bench/run.sh $(OUT)

# DESTDIR for staging (packages), PREFIX for the binaries and runbooks,
# SYSCONFDIR for the configs: /etc when PREFIX is /usr, else PREFIX/etc, so
# `make install PREFIX=/tmp/x` writes nothing outside /tmp/x.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/faultline/runbooks \
		$(DESTDIR)$(SYSCONFDIR)/faultline/rules
	install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 etc/probe.yaml etc/alerter.yaml etc/topology.yaml \
		$(DESTDIR)$(SYSCONFDIR)/faultline/
	install -m 0644 etc/rules/*.yaml $(DESTDIR)$(SYSCONFDIR)/faultline/rules/
	install -m 0644 runbooks/*.md $(DESTDIR)$(PREFIX)/share/faultline/runbooks/
	install -d $(DESTDIR)$(PREFIX)/share/faultline/grafana $(DESTDIR)$(PREFIX)/share/faultline/examples
	install -m 0644 etc/grafana/*.json $(DESTDIR)$(PREFIX)/share/faultline/grafana/
	install -m 0644 etc/examples/*.yml $(DESTDIR)$(PREFIX)/share/faultline/examples/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 man/*.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	for c in faultline faultline-probe faultline-rules faultline-alerter faultline-web; do \
		install -m 0644 etc/bash-completion/faultline \
			$(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$c; \
	done
	install -d $(DESTDIR)$(PREFIX)/lib/sysusers.d
	install -m 0644 etc/sysusers.d/faultline.conf $(DESTDIR)$(PREFIX)/lib/sysusers.d/
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system
	for u in etc/systemd/*.service; do \
		sed -e 's|/usr/bin/faultline|$(PREFIX)/bin/faultline|' -e 's|/usr/share/faultline|$(PREFIX)/share/faultline|' $$u > \
			$(DESTDIR)$(PREFIX)/lib/systemd/system/$$(basename $$u); \
	done

# A Debian package (dpkg-deb; lintian-checked when lintian is installed).
deb: all
	scripts/deb.sh $(OUT) $(VERSION)

# Removes what install put there (configs an admin edited stay, with a note).
uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,$(notdir $(BINS)))
	rm -rf $(DESTDIR)$(PREFIX)/share/faultline
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/share/man/man1/,$(notdir $(wildcard man/*.1)))
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/share/man/man8/,$(notdir $(wildcard man/*.8)))
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/share/bash-completion/completions/,faultline \
		faultline-probe faultline-rules faultline-alerter faultline-web)
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/lib/systemd/system/,$(notdir $(wildcard etc/systemd/*.service)))
	rm -f $(DESTDIR)$(PREFIX)/lib/sysusers.d/faultline.conf
	@for f in probe.yaml alerter.yaml topology.yaml $(notdir $(wildcard etc/rules/*.yaml)); do \
		d=$(DESTDIR)$(SYSCONFDIR)/faultline; [ -f $$d/$$f ] || d=$$d/rules; \
		if [ -f $$d/$$f ] && { cmp -s $$d/$$f etc/$$f || cmp -s $$d/$$f etc/rules/$$f; }; then \
			rm -f $$d/$$f; \
		elif [ -f $$d/$$f ]; then echo "uninstall: $$d/$$f was edited; kept"; fi; \
	done
	@rmdir $(DESTDIR)$(SYSCONFDIR)/faultline/rules $(DESTDIR)$(SYSCONFDIR)/faultline 2>/dev/null || true

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > bpf/vmlinux.h

clean:
	rm -rf build build-asan

-include $(shell find $(OUT) -name '*.d' -type f -not -path '*/deb/*' 2>/dev/null)
