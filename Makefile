# Makefile: builds every step of rdma-steps and runs its demo and tests (GNU Make, non-recursive).

STEPS := $(sort $(notdir $(wildcard steps/[0-9][0-9]_*)))

BUILD ?= build
BIN := $(BUILD)/bin
OBJ := $(BUILD)/obj
VM_DIR := build/vm

CC ?= cc
PKG_CONFIG ?= pkg-config
# pkg-config runs when the first compile or link needs it, not while this file
# is parsed: on a fresh machine libibverbs-dev arrives only with 'deps', which
# runs before any compile.  Each value is computed once, then kept.
IBVERBS_CFLAGS = $(eval IBVERBS_CFLAGS := $(shell $(PKG_CONFIG) --cflags libibverbs))$(IBVERBS_CFLAGS)
IBVERBS_LIBS = $(eval IBVERBS_LIBS := $(shell $(PKG_CONFIG) --libs libibverbs))$(IBVERBS_LIBS)

CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wformat=2 -MMD -MP
CPPFLAGS += -Icommon $(IBVERBS_CFLAGS)
LDLIBS += $(IBVERBS_LIBS)

# gcov counters, unoptimised so that every line keeps its own count (make coverage).
ifeq ($(COVERAGE),1)
CFLAGS += -O0 --coverage
LDFLAGS += --coverage
endif

# A learner's copy starts with its functions emptied: the helpers they would call
# are unused until then, which is no error.
ifneq ($(EXERCISE),)
CFLAGS += -Wno-error=unused-function -Wno-error=unused-variable -Wno-error=unused-const-variable
endif

ifeq ($(SANITIZE),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=address,undefined
endif

# Step 06 uses the CUDA runtime when a toolkit is found (CUDA_HOME, /usr/local/cuda
# or nvcc's), linked statically so that the program starts without a driver;
# CUDA=0 builds it without.  Either way GPU memory is emulated when no GPU is usable.
ifneq ($(CUDA),0)
CUDA_HOME ?= $(firstword $(wildcard /usr/local/cuda) $(patsubst %/bin/nvcc,%,$(shell command -v nvcc 2>/dev/null)))
HAVE_CUDA := $(if $(CUDA_HOME),$(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h))
endif
ifneq ($(HAVE_CUDA),)
$(OBJ)/steps/06_gdr/%.o: CPPFLAGS += -DHAVE_CUDA -I$(CUDA_HOME)/include
$(BIN)/06_gdr: LDLIBS += $(CUDA_HOME)/lib64/libcudart_static.a -ldl -lpthread -lrt
CUDA_NOTE := with CUDA from $(CUDA_HOME) (runtime linked statically: it starts without a driver)
else
CUDA_NOTE := without CUDA (no toolkit in CUDA_HOME, /usr/local/cuda or nvcc's; or CUDA=0): GPU memory is emulated
endif

COMMON_SRC := $(sort $(wildcard common/*.c))

# A step's stage code is every .c in its directory but main.c.  A step links
# its own main.c, its own stage and the stages of the steps before it, so
# each stage's verbs code lives in exactly one place.
# make check: the step named by EXERCISE comes from the learner's copy in
# EXERCISE_DIR (make exercise writes it) instead of steps/.
EXERCISE_DIR ?= work
step_dir = $(if $(filter $(1),$(EXERCISE)),$(EXERCISE_DIR)/$(1),steps/$(1))
stage_src = $(filter-out %/main.c,$(wildcard $(call step_dir,$(1))/*.c))
# A step that builds on some earlier steps only names them in STAGES_<step>:
# step 07's ring runs on host memory and needs nothing of step 06's CUDA.
STAGES_07_allreduce := 01_open_pd 02_reg_mr 03_cq_qp_rts 04_post_wr 05_poll_destroy
steps_so_far :=
$(foreach s,$(STEPS),$(eval UPTO_$(s) := $(or $(STAGES_$(s)),$(steps_so_far)) $(s))$(eval steps_so_far += $(s)))
step_src = $(COMMON_SRC) $(foreach s,$(UPTO_$(1)),$(call stage_src,$(s))) $(call step_dir,$(1))/main.c
step_includes = $(foreach s,$(UPTO_$(1)),-I$(call step_dir,$(s)))

PROGRAMS := $(addprefix $(BIN)/,$(STEPS))

.PHONY: all
all: $(PROGRAMS) ## Build every step into build/bin/NN_name (the default)

define step_rules
$(BIN)/$(1): $(patsubst %.c,$(OBJ)/%.o,$(call step_src,$(1))) | $(BIN)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
	$(if $(filter 06_gdr,$(1)),@echo "06_gdr: built $$(CUDA_NOTE)")
$(OBJ)/$(call step_dir,$(1))/%.o: CPPFLAGS += $(call step_includes,$(1))
endef
$(foreach s,$(STEPS),$(eval $(call step_rules,$(s))))

# Nothing compiles before the build packages are there (or the apt-get line is printed).
$(OBJ)/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BIN):
	mkdir -p $@

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)

# Building alone needs the compiler and libibverbs-dev; the demo, the tests and
# the VM need the rest too.  Every target that runs a sub-make depends on deps,
# so that one apt-get runs at a time, even under -j.
BUILD_ONLY_GOALS := all sanitize nocuda coverage clean distclean help build/%
DEPS_SET := $(if $(filter-out $(BUILD_ONLY_GOALS),$(or $(MAKECMDGOALS),all)),all,build)

.PHONY: deps
deps: ## Install the Debian packages the build, demo and tests need (as root), or print the apt-get line
	@tests/deps.sh $(DEPS_SET)

.PHONY: nocuda
nocuda: deps ## Build 06_gdr without CUDA into build/nocuda/bin (the tests run both builds)
	@$(MAKE) --no-print-directory BUILD=build/nocuda CUDA=0 build/nocuda/bin/06_gdr

.PHONY: test
test: deps all nocuda ## Run the bats suite over soft-RoCE: natively if an RDMA device exists, else in the VM
	@tests/run.sh test $(TESTS)

.PHONY: test-faults
test-faults: deps all nocuda coverage ## Run every fault point of RDMA_STEPS_FAIL_AT in every step, then check that every out_* label ran (slow: about 5 min; .ci/run runs it)
	@rm -rf build/test-results/faults
	@RDMA_STEPS_RESULTS_DIR=build/test-results/faults RDMA_STEPS_BIN=build/coverage/bin RDMA_STEPS_GCOV=1 \
		tests/run.sh test tests/slow/faults.bats; status=$$?; \
		tests/label-coverage.sh build/coverage build/test-results/faults || status=1; exit $$status

.PHONY: soak
soak: deps all nocuda ## Run step 05 for SOAK_ITERS round trips (default 100000), busy-polled and event-driven: no failure, flat RSS, no leak (.ci/run runs it)
	@RDMA_STEPS_RESULTS_DIR=build/test-results/soak tests/run.sh test tests/slow/soak.bats

# memcheck runs in the VM, from this machine's own valgrind.
valgrind: DEPS_SET := valgrind
.PHONY: valgrind
valgrind: deps all nocuda ## Run every step under valgrind's memcheck over rxe: no error, no leak (tests/slow/valgrind.bats; .ci/run runs it)
	@RDMA_STEPS_RESULTS_DIR=build/test-results/valgrind tests/run.sh test tests/slow/valgrind.bats

.PHONY: test-lab
test-lab: deps all vm ## Check the lab in VMs of their own: the edit-rebuild-rerun loop and banner of make shell, its two nodes (NODES=2), and that every make exercise skeleton builds, fails its step's main test and names its TODO (tests/slow/; .ci/run runs it)
	@RDMA_STEPS_RESULTS_DIR=build/test-results/lab tests/run.sh test tests/slow/lab.bats tests/slow/exercises.bats

# torchrun comes with Debian's python3-torch (about 1 GB): installed for this target only.
test-allreduce: DEPS_SET := collective
.PHONY: test-allreduce
test-allreduce: deps all vm ## Step 07 at 8 MiB, the failures make test leaves out, and under mpirun, torchrun --no-python and srun's variables (tests/slow/allreduce.bats)
	@RDMA_STEPS_RESULTS_DIR=build/test-results/allreduce tests/run.sh test tests/slow/allreduce.bats

# The capture needs tcpdump and tshark (tshark's dissector decodes InfiniBand over UDP).
test-wire: DEPS_SET := wire
.PHONY: test-wire
test-wire: deps all vm ## Two VMs on one virtual wire: step 04's operations between them, captured and decoded; packets checked against what the programs printed (about 2 min; .ci/run runs it)
	@RDMA_STEPS_RESULTS_DIR=build/test-results/wire tests/run.sh test tests/slow/wire.bats

.PHONY: exercise
exercise: ## Write a learner's copy of step STEP=NN into work/NN_name, its verbs functions emptied with a TODO saying what belongs there
	@tests/exercise/make-exercise.sh "$(STEP)" $(EXERCISE_DIR)

.PHONY: check
check: deps ## Build step STEP=NN from the learner's copy in work/ and run that step's tests against it; names the first TODO left
	@tests/exercise/check.sh "$(STEP)" $(EXERCISE_DIR)

.PHONY: bench
bench: deps all ## Run step 05 beside perftest (BENCH_REPS times, default 15), count system calls, compare TCP and RDMA: table, build/bench/bench.json and bench.svg (about 17 min)
	@RDMA_STEPS_RESULTS_DIR=build/bench tests/run.sh bench && tests/bench/report.sh build/bench

.PHONY: test-bench
test-bench: deps all ## Run make bench's machinery twice on small sizes and check its table, JSON and SVG, and its statistics on made-up figures (tests/slow/bench.bats, about 60 s; .ci/run runs it)
	@RDMA_STEPS_RESULTS_DIR=build/test-results/bench tests/run.sh test tests/slow/bench.bats

.PHONY: coverage
coverage: deps ## Build every step with gcov counters into build/coverage/bin (test-faults runs it)
	@$(MAKE) --no-print-directory BUILD=build/coverage COVERAGE=1 all

.PHONY: demo
demo: deps all nocuda ## Run every command block of TUTORIAL.md in order, over soft-RoCE (natively or in the VM)
	@tests/run.sh demo

.PHONY: shell
shell: DEPS_SET := $(if $(filter 2,$(NODES)),wire,all)
shell: deps all nocuda ## A root shell in the soft-RoCE VM, with rxe0 up, to run TUTORIAL.md by hand; NODES=2: two VMs on one wire, side by side in tmux
	@tests/run.sh shell $(NODES)

.PHONY: vm
vm: deps ## Fetch Debian's kernel and build the test VM's initramfs under build/vm (done by test and demo)
	@tests/vm/prepare.sh $(VM_DIR)

.PHONY: sanitize
sanitize: deps ## Build every step with ASan and UBSan into build/sanitize/bin
	@$(MAKE) --no-print-directory BUILD=build/sanitize SANITIZE=1 all

.PHONY: test-sanitize
test-sanitize: deps all nocuda sanitize ## Run the bats suite against the sanitizer build
	@RDMA_STEPS_BIN=build/sanitize/bin tests/run.sh test $(TESTS)

include tests/fuzz/fuzz.mk

.PHONY: fresh-machine
fresh-machine: ## As root: run README's quick start in a minimal Debian 12 root, first time (about 5 min)
	@tests/fresh-machine.sh

.PHONY: lint
lint: deps ## Check the shell scripts with shellcheck
	shellcheck -x .ci/run tests/*.sh tests/bench/*.sh tests/exercise/*.sh tests/vm/*.sh tests/vm/initramfs-init tests/wire/*.sh

.PHONY: diagrams
diagrams: deps ## Re-render the SVGs in diagrams/ from their .dot sources (needs graphviz)
	@for dot in diagrams/*.dot; do \
		svg=$${dot%.dot}.svg; \
		dot -Tsvg -o "$$svg.tmp" "$$dot" && mv "$$svg.tmp" "$$svg" || { rm -f "$$svg.tmp"; exit 1; }; \
		echo "diagrams: $$svg"; \
	done

.PHONY: tutorial-diffs
tutorial-diffs: ## Regenerate the code TUTORIAL.md quotes from the step sources: each "what changed" diff and "The verbs code"
	@tests/tutorial-diffs.sh

.PHONY: clean
clean: ## Remove compiled programs and objects (keeps the VM's kernel cache)
	rm -rf build/bin build/obj build/sanitize build/nocuda build/coverage build/test-results

.PHONY: distclean
distclean: ## Remove everything built, the VM's kernel cache included
	rm -rf build

.PHONY: help
help: ## List the targets
	@echo "Targets (variables: TESTS=tests/NN_x.bats to run some tests, RDMA_TEST_MODE=native|vm):"
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  \1\t\2/' | expand -t 18
