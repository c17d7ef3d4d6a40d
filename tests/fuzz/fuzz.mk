# fuzz.mk: libFuzzer harnesses for the pure decoders (make fuzz) and the replay of their committed corpus (make fuzz-replay).

FUZZ_TARGETS := fuzz_exchange fuzz_cm_private fuzz_rc_pingpong fuzz_cli_number fuzz_kv_table fuzz_moe_counts
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_DIR := build/fuzz
FUZZ_REPLAY_DIR := build/fuzz-replay
FUZZ_CORPUS := tests/fuzz/corpus

# A harness links its decoder as the step's program does: the stage code of
# that step and of every step before it, common/ included, but no main.c.
FUZZ_SRC_fuzz_exchange = $(filter-out %/main.c,$(call step_src,03_cq_qp_rts))
FUZZ_SRC_fuzz_cm_private = $(filter-out %/main.c,$(call step_src,03_cq_qp_rts))
FUZZ_SRC_fuzz_rc_pingpong = $(filter-out %/main.c,$(call step_src,05_poll_destroy))
FUZZ_SRC_fuzz_cli_number = $(COMMON_SRC)
FUZZ_SRC_fuzz_kv_table = $(filter-out %/main.c,$(call step_src,08_kv_transfer))
FUZZ_SRC_fuzz_moe_counts = $(filter-out %/main.c,$(call step_src,09_moe))

FUZZ_CPPFLAGS = $(CPPFLAGS) $(sort $(call step_includes,05_poll_destroy) $(call step_includes,08_kv_transfer) $(call step_includes,09_moe))
FUZZ_SANITIZERS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# libclang-rt-dev follows the release's default clang: libclang-rt-14-dev on Debian 12, -19- on Debian 13.
FUZZ_PACKAGES := clang libclang-rt-dev

# Both build from the compiler and libibverbs-dev alone: deps checks only those.
fuzz fuzz-replay: DEPS_SET := build

.PHONY: fuzz-toolchain
fuzz-toolchain:
	@command -v $(FUZZ_CC) >/dev/null || { \
		echo "fuzz: no $(FUZZ_CC) here; on Debian 12 or 13 install it with: sudo apt-get install --no-install-recommends $(FUZZ_PACKAGES)" >&2; \
		exit 1; }
	@echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return !d && n; }' | \
		$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -x c -o /dev/null - 2>/dev/null || { \
		echo "fuzz: $(FUZZ_CC) cannot link -fsanitize=fuzzer: libFuzzer (libclang_rt.fuzzer-x86_64.a) is missing;" \
			"on Debian 12 or 13 install it with: sudo apt-get install --no-install-recommends $(FUZZ_PACKAGES)" >&2; \
		exit 1; }

$(FUZZ_DIR)/obj/%.o: %.c | deps fuzz-toolchain
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SANITIZERS) -c -o $@ $<

$(FUZZ_REPLAY_DIR)/obj/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(FUZZ_CPPFLAGS) $(CFLAGS) $(FUZZ_SANITIZERS) -c -o $@ $<

define fuzz_rules
$(FUZZ_DIR)/$(1): $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,tests/fuzz/$(1).c $(FUZZ_SRC_$(1)))
	$$(FUZZ_CC) -fsanitize=fuzzer $$(FUZZ_SANITIZERS) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
$(FUZZ_REPLAY_DIR)/$(1): $(patsubst %.c,$(FUZZ_REPLAY_DIR)/obj/%.o,tests/fuzz/$(1).c tests/fuzz/replay.c $(FUZZ_SRC_$(1)))
	$$(CC) $$(FUZZ_SANITIZERS) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_rules,$(t))))

-include $(shell find $(FUZZ_DIR)/obj $(FUZZ_REPLAY_DIR)/obj -name '*.d' 2>/dev/null)

# Each target starts from its committed corpus and keeps what it finds in
# build/fuzz/corpus/TARGET; libFuzzer's own output goes to build/fuzz/TARGET.log.
# The decoders' error lines go to /dev/null (-close_fd_mask=2), libFuzzer's and
# the sanitizers' reports do not.
.PHONY: fuzz
fuzz: $(addprefix $(FUZZ_DIR)/,$(FUZZ_TARGETS)) ## Fuzz the exchange decoder, the rdma_cm private-data decoder, the rc_pingpong line decoder, the option-number parser, step 08's block-table decoder and step 09's counts-matrix check with libFuzzer, FUZZ_SECONDS each (default 60; needs clang)
	@mkdir -p $(FUZZ_DIR)/crashes
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$t; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		$(FUZZ_DIR)/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -close_fd_mask=2 \
			-artifact_prefix=$(FUZZ_DIR)/crashes/$$t- $(FUZZ_DIR)/corpus/$$t $(FUZZ_CORPUS)/$$t \
			>$(FUZZ_DIR)/$$t.log 2>&1 || { \
			tail -n 40 $(FUZZ_DIR)/$$t.log >&2; \
			echo "fuzz: $$t crashed; the input is in $(FUZZ_DIR)/crashes/, the whole log in $(FUZZ_DIR)/$$t.log" >&2; \
			exit 1; }; \
		sed -nE "s/^#([0-9]+)[[:space:]]+DONE[[:space:]]+(cov: [0-9]+ ft: [0-9]+ corp: [^ ]+).*exec\/s: ([0-9]+).*/$$t: \1 runs, \2, \3 exec\/s, no crash/p" \
			$(FUZZ_DIR)/$$t.log; \
	done
	@echo "fuzz: to keep new inputs, merge them into the committed corpus:" \
		"$(FUZZ_DIR)/TARGET -merge=1 $(FUZZ_CORPUS)/TARGET $(FUZZ_DIR)/corpus/TARGET"

# Each target's stderr (the decoders' error lines, and on a crash the input's
# name and the sanitizer's report) goes to build/fuzz-replay/TARGET.log.
.PHONY: fuzz-replay
fuzz-replay: $(addprefix $(FUZZ_REPLAY_DIR)/,$(FUZZ_TARGETS)) ## Replay the committed fuzz corpus with ASan and UBSan (no clang, no RDMA; the suite runs it)
	@status=0; for t in $(FUZZ_TARGETS); do \
		$(FUZZ_REPLAY_DIR)/$$t $(FUZZ_CORPUS)/$$t 2>$(FUZZ_REPLAY_DIR)/$$t.log || { \
			status=1; \
			tail -n 40 $(FUZZ_REPLAY_DIR)/$$t.log >&2; \
			echo "fuzz-replay: $$t failed; its whole stderr is in $(FUZZ_REPLAY_DIR)/$$t.log" >&2; }; \
	done; exit $$status

.PHONY: fuzz-clean
clean: fuzz-clean
fuzz-clean:
	rm -rf $(FUZZ_DIR) $(FUZZ_REPLAY_DIR)
