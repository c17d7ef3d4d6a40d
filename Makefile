# Makefile: builds every step of rdma-steps and runs its demo and tests (GNU Make, non-recursive).

STEPS := $(sort $(notdir $(wildcard steps/[0-9][0-9]_*)))

BUILD ?= build
BIN := $(BUILD)/bin
OBJ := $(BUILD)/obj
# RDMA_VM_KERNEL=SUITE: the VM boots that Debian suite's kernel (tests/vm/kernel-choice.bash).
VM_DIR := build/vm$(if $(RDMA_VM_KERNEL),/$(RDMA_VM_KERNEL))

CC ?= cc
PKG_CONFIG ?= pkg-config
# pkg-config runs when the first compile or link needs it, not while this file
# is parsed: on a fresh machine libibverbs-dev arrives only with 'deps', which
# runs before any compile.  Each value is computed once, then kept.
IBVERBS_CFLAGS = $(eval IBVERBS_CFLAGS := $(shell $(PKG_CONFIG) --cflags libibverbs))$(IBVERBS_CFLAGS)
IBVERBS_LIBS = $(eval IBVERBS_LIBS := $(shell $(PKG_CONFIG) --libs libibverbs))$(IBVERBS_LIBS)
RDMACM_LIBS = $(eval RDMACM_LIBS := $(shell $(PKG_CONFIG) --libs librdmacm))$(RDMACM_LIBS)

# Whether the installed verbs.h has FLUSH (rdma-core 45 and later: IBV_WR_FLUSH,
# ibv_wr_flush, IBV_ACCESS_FLUSH_*).  IBV_WR_FLUSH is an enum, which the
# preprocessor cannot see, so one compile test decides, when the first compile
# needs it (after 'deps'), and step 04's -o flush is built only where it passes.
VERBS_FLUSH = $(eval VERBS_FLUSH := $(shell printf '\043include <infiniband/verbs.h>\nint probe = IBV_WR_FLUSH;\n' | \
	$(CC) $(IBVERBS_CFLAGS) -x c -fsyntax-only - 2>/dev/null && echo -DHAVE_IBV_WR_FLUSH))$(VERBS_FLUSH)

CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wformat=2 -MMD -MP
CPPFLAGS += -Icommon $(IBVERBS_CFLAGS) $(VERBS_FLUSH)
LDLIBS += $(RDMACM_LIBS) $(IBVERBS_LIBS)

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
# The job runtime (runtime/) is a stage folder too, named "runtime" in the lists.
step_dir = $(if $(filter runtime,$(1)),runtime,$(if $(filter $(1),$(EXERCISE)),$(EXERCISE_DIR)/$(1),steps/$(1)))
stage_src = $(filter-out %/main.c,$(wildcard $(call step_dir,$(1))/*.c))
# A step that builds on some earlier steps only names them in STAGES_<step>:
# step 06 calls nothing of step 05's, and step 07's ring runs on host memory and
# needs nothing of step 06's CUDA.  A step that launches ranks names the job
# runtime (runtime/: launchers, rendezvous, control channel, the pair exchange),
# which stands on stages 1 to 3 and below every such step.
STAGES_06_gdr := 01_open_pd 02_reg_mr 03_cq_qp_rts 04_post_wr
STAGES_07_allreduce := 01_open_pd 02_reg_mr 03_cq_qp_rts 04_post_wr 05_poll_destroy runtime
STAGES_08_kv_transfer := 01_open_pd 02_reg_mr 03_cq_qp_rts 04_post_wr
STAGES_09_moe := 01_open_pd 02_reg_mr 03_cq_qp_rts 04_post_wr 05_poll_destroy runtime
STAGES_10_weight_sync := 01_open_pd 02_reg_mr 03_cq_qp_rts 04_post_wr 05_poll_destroy runtime
STAGES_11_lossy := 01_open_pd 02_reg_mr 03_cq_qp_rts 04_post_wr 05_poll_destroy
steps_so_far :=
$(foreach s,$(STEPS),$(eval UPTO_$(s) := $(or $(STAGES_$(s)),$(steps_so_far)) $(s))$(eval steps_so_far += $(s)))
step_src = $(COMMON_SRC) $(foreach s,$(UPTO_$(1)),$(call stage_src,$(s))) $(call step_dir,$(1))/main.c
step_includes = $(foreach s,$(UPTO_$(1)),-I$(call step_dir,$(s)))

PROGRAMS := $(addprefix $(BIN)/,$(STEPS))
ZEROCOPY := $(BUILD)/tools/zerocopy

# Step 07 as a library too, for make train's DDP hook (ctypes): the program's own
# stage objects, all but its main.c, compiled again with -fPIC, and the API in
# steps/07_allreduce/train/ring_comm.c.  One copy of the ring's code, two builds.
LIB_RING := $(BUILD)/lib/libring_comm.so
PIC := $(BUILD)/pic
ring_comm_src := $(filter-out %/main.c,$(call step_src,07_allreduce)) steps/07_allreduce/train/ring_comm.c

# Step 10 as a library too, for make serve's job (ctypes), built the same way from its own
# stage objects (in build/pic10: other -I than step 07's) and steps/10_weight_sync/serve/weight_comm.c.
LIB_WEIGHTS := $(BUILD)/lib/libweight_comm.so
PIC10 := $(BUILD)/pic10
weight_comm_src := $(filter-out %/main.c,$(call step_src,10_weight_sync)) steps/10_weight_sync/serve/weight_comm.c

.PHONY: all
all: $(PROGRAMS) $(LIB_RING) $(LIB_WEIGHTS) $(ZEROCOPY) ## Build every step into build/bin/NN_name, the libraries of steps 07 and 10 into build/lib and the tests' TCP zero-copy program into build/tools (the default)

define step_rules
$(BIN)/$(1): $(patsubst %.c,$(OBJ)/%.o,$(call step_src,$(1))) | $(BIN)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
	$(if $(filter 06_gdr,$(1)),@echo "06_gdr: built $$(CUDA_NOTE)")
$(OBJ)/$(call step_dir,$(1))/%.o: CPPFLAGS += $(call step_includes,$(1))
endef
$(foreach s,$(STEPS),$(eval $(call step_rules,$(s))))
# The runtime compiles once, against the stages below it.
RUNTIME_STAGES := 01_open_pd 02_reg_mr 03_cq_qp_rts
$(OBJ)/runtime/%.o: CPPFLAGS += $(foreach s,$(RUNTIME_STAGES),-Isteps/$(s)) -Iruntime

# Nothing compiles before the build packages are there (or the apt-get line is printed).
$(OBJ)/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BIN):
	mkdir -p $@

# The TCP program of make test-zerocopy and make bench (tests/bench/zerocopy.c): send() against
# MSG_ZEROCOPY, beside step 05's RDMA.  It links common/ and no step: it has no verbs.
$(ZEROCOPY): $(patsubst %.c,$(OBJ)/%.o,tests/bench/zerocopy.c $(COMMON_SRC))
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# A step's library (LIB) from SOURCES, compiled with -fPIC into their own folder
# (DIR) with the -I of STEP: the rules of steps 07's and 10's.
define pic_library_rules # LIB DIR SOURCES STEP
$(1): $(patsubst %.c,$(2)/%.o,$(3))
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) -shared -o $$@ $$^ $$(LDLIBS)
$(2)/%.o: CPPFLAGS += $(call step_includes,$(4))
$(2)/%.o: %.c | deps
	@mkdir -p $$(@D)
	$$(CC) $$(CPPFLAGS) $$(CFLAGS) -fPIC -fvisibility=hidden -c -o $$@ $$<
endef
$(eval $(call pic_library_rules,$(LIB_RING),$(PIC),$(ring_comm_src),07_allreduce))
$(eval $(call pic_library_rules,$(LIB_WEIGHTS),$(PIC10),$(weight_comm_src),10_weight_sync))

-include $(shell find $(OBJ) $(PIC) $(PIC10) -name '*.d' 2>/dev/null)

# Building alone needs the compiler, libibverbs-dev and librdmacm-dev; the demo, the tests and
# the VM need the rest too.  Every target that runs a sub-make depends on deps,
# so that one apt-get runs at a time, even under -j.
BUILD_ONLY_GOALS := all sanitize nocuda coverage clean distclean help build/%
DEPS_SET := $(if $(filter-out $(BUILD_ONLY_GOALS),$(or $(MAKECMDGOALS),all)),all,build)

.PHONY: deps
deps: ## Install the Debian packages the build, demo and tests need (as root), or print the apt-get line
	@tests/tools/deps.sh $(DEPS_SET)

.PHONY: nocuda
nocuda: deps ## Build 06_gdr without CUDA into build/nocuda/bin (the tests run both builds)
	@$(MAKE) --no-print-directory BUILD=build/nocuda CUDA=0 build/nocuda/bin/06_gdr

.PHONY: test
test: deps all nocuda ## Run the bats suite over soft-RoCE: natively if an RDMA device exists, else in the VM
	@tests/tools/run.sh test $(TESTS)

# The slow checks: too slow for make test, each a target of its own that .ci/run
# runs.  A check runs its bats files through tests/tools/run.sh (in the VM, or natively)
# and leaves its results in build/test-results/NAME/; 'make slow-checks' lists the
# names.  Adding one is one line here:
#   $(eval $(call slow_check,NAME,PACKAGES,BUILT FIRST,BATS FILES))
# PACKAGES is a set of tests/tools/deps.sh's; BUILT FIRST, the targets it needs.  A
# check that needs settings, or a step after its tests, says so in slow_env_NAME
# or slow_then_NAME beside its line.  'make help' describes each check with the
# header line of its first bats file, or with slow_help_NAME where that is set.
SLOW_RESULTS := build/test-results
SLOW_CHECKS :=
define slow_check
SLOW_CHECKS += $(1)
slow_files_$(1) := $(4)
$(1): DEPS_SET := $(2)
.PHONY: $(1)
$(1): deps $(3)
	@rm -rf $(SLOW_RESULTS)/$(1)
	@$$(slow_env_$(1)) tests/tools/run.sh --results $(SLOW_RESULTS)/$(1) test $(4); status=$$$$?; \
		$$(if $$(slow_then_$(1)),$$(slow_then_$(1)) || status=1;) exit $$$$status
endef

$(eval $(call slow_check,test-faults,all,all nocuda coverage,tests/slow/faults.bats))
slow_env_test-faults := RDMA_STEPS_BIN=build/coverage/bin RDMA_STEPS_GCOV=1
slow_then_test-faults := tests/tools/label-coverage.sh build/coverage $(SLOW_RESULTS)/test-faults
$(eval $(call slow_check,soak,all,all nocuda,tests/slow/soak.bats))
$(eval $(call slow_check,valgrind,valgrind,all nocuda,tests/slow/valgrind.bats))
$(eval $(call slow_check,test-lab,all,all vm,tests/slow/lab.bats tests/slow/exercises.bats))
# make shell NODES=N's kernel, which its tests boot (make shell alone boots the default).
slow_env_test-lab = LAB_NODES_KERNEL=$(NODES_KERNEL)
# The kernel of the node checks' VM: Linux 7.x, whose rxe works per namespace (from 7.1).  NODES_KERNEL= (empty):
# the host's own (6.1), on QEMU's hub (CONTRIBUTING.md, "Nodes as network namespaces").
NODES_KERNEL ?= trixie-backports
$(eval $(call slow_check,test-wire,wire,all vm,tests/slow/wire.bats))
# Its two nodes as network namespaces in one VM booting Linux 7.x, as make test-nodes's (RDMA_VM_HUB=1: two VMs on QEMU's hub).
slow_env_test-wire := RDMA_VM_KERNEL=$(NODES_KERNEL)
$(eval $(call slow_check,test-lossy,wire,all vm,tests/slow/lossy.bats))
# Loss needs a wire: two nodes as namespaces in one VM booting Linux 7.x, netem on each node's eth0 (tests/vm/netem.sh).
slow_env_test-lossy := RDMA_VM_KERNEL=$(NODES_KERNEL)
$(eval $(call slow_check,test-zerocopy,all,all vm,tests/slow/zerocopy.bats))
# Namespaces need rxe per namespace (Linux 7.1 and later), as make test-wire's; its hub VMs boot the same kernel.
slow_env_test-zerocopy := RDMA_VM_KERNEL=$(NODES_KERNEL)
$(eval $(call slow_check,test-kv,all,all vm,tests/slow/kv.bats))
$(eval $(call slow_check,test-moe,all,all vm,tests/slow/moe.bats))
$(eval $(call slow_check,test-weights,all,all vm,tests/slow/weights.bats))
$(eval $(call slow_check,test-bench,bench,all,tests/slow/bench.bats))
$(eval $(call slow_check,test-allreduce,collective,all vm,tests/slow/allreduce.bats))
$(eval $(call slow_check,test-nodes,nodes,all vm,tests/slow/nodes.bats))
# Nodes as network namespaces in one VM booting Linux 7.x (CONTRIBUTING.md, "The test VM"); RDMA_VM_HUB=1: one VM a node on QEMU's hub.
slow_env_test-nodes := RDMA_VM_KERNEL=$(NODES_KERNEL)
$(eval $(call slow_check,test-nodes8,nodes,all vm,tests/slow/nodes8.bats))
slow_env_test-nodes8 := RDMA_VM_KERNEL=$(NODES_KERNEL)
slow_help_test-nodes8 := step 07 and step 09 with 8 ranks on 8 nodes, network namespaces of one VM booting Linux 7.x: every rank's result, node 1's capture against the ring's schedule and step 09's layout (about 3 min).
$(eval $(call slow_check,test-train,collective,all vm,tests/slow/train.bats tests/slow/serve.bats))
slow_env_test-train := RDMA_VM_MEM=4096
$(eval $(call slow_check,test-render,browser,,tests/slow/render.bats))
# The device tests of make test again, in a VM booting the other kernel (CONTRIBUTING.md, "The guest kernel").
$(eval $(call slow_check,test-kernel,all,all nocuda,$(filter-out tests/00_%,$(wildcard tests/[0-9][0-9]_*.bats))))
slow_env_test-kernel := RDMA_VM_KERNEL=$(or $(OTHER_KERNEL),trixie-backports)
slow_help_test-kernel := the device tests of make test in a VM booting the kernel that is not the default (OTHER_KERNEL, default trixie-backports: Linux 7.x), each answer rxe changed asserted for that kernel (about 8 min).

.PHONY: slow-checks
slow-checks: ## List the slow checks, one name a line (.ci/run runs each)
	@printf '%s\n' $(SLOW_CHECKS)

.PHONY: flake-hunt
flake-hunt: deps all nocuda ## Run the suite ROUNDS times (default 10; TESTS=... for some files) in one VM beside HOGS busy loops (default 1): each test's failed rounds, in build/flake-hunt/report.txt (about 5 min a round)
	@HOGS=$(or $(HOGS),1) tests/tools/flake-hunt.sh $(or $(ROUNDS),10) $(TESTS)

.PHONY: exercise
exercise: ## Write a learner's copy of step STEP=NN into work/NN_name, its verbs functions emptied with a TODO saying what belongs there
	@tests/exercise/make-exercise.sh "$(STEP)" $(EXERCISE_DIR)

.PHONY: check
check: deps ## Build step STEP=NN from the learner's copy in work/ and run that step's tests against it; names the first TODO left
	@tests/exercise/check.sh "$(STEP)" $(EXERCISE_DIR)

.PHONY: bench
bench: DEPS_SET := bench
bench: deps all ## Run step 05, and step 08's KV transfer, beside perftest (BENCH_REPS times, default 15; BENCH_ONLY=kv: step 08 and UCX alone), count system calls, count instructions per message, compare TCP and RDMA: table, build/bench/bench.json and bench.svg (about 23 min); then bench-nodes
	@RDMA_VM_TIMEOUT=$${RDMA_VM_TIMEOUT:-3000} tests/tools/run.sh --results build/bench bench && tests/bench/report.sh build/bench && \
		{ [ "$${BENCH_ONLY:-}" = kv ] || $(MAKE) --no-print-directory bench-nodes; }

.PHONY: bench-nodes
bench-nodes: DEPS_SET := nodes
bench-nodes: deps all vm ## Steps 07, 09 and 10 across 2, 3 and 4 VMs: busbw against size beside ib_write_bw on every ring link at once, Gloo, Open MPI and the ring's model; step 09's dispatch and combine against its model, ib_write_bw on every pair at once and TCP; step 10's push, gather and TCP each round beside ib_write_bw's model: build/bench/nodes/nodes.txt and nodes.svg (make bench runs it last; about 15 min)
	@tests/bench/nodes/bench.sh build/bench/nodes

.PHONY: train
train: DEPS_SET := collective
train: deps all vm ## Train a small model under torchrun (TRAIN_RANKS=4) with DDP's gradients summed by step 07's ring, beside Gloo's: losses, agreement, accuracy, time per step (about 5 min in the VM)
	@RDMA_VM_MEM=$${RDMA_VM_MEM:-4096} tests/tools/run.sh --results build/train train

.PHONY: serve
serve: DEPS_SET := collective
serve: deps all vm ## Train a small Llama-shaped model on 2 trainer ranks and sync it after every round with step 10 into a replica of --tp 2, whose tensor-parallel forward is checked against the trainer's (SERVE_RANKS=4; about 5 min in the VM)
	@RDMA_VM_MEM=$${RDMA_VM_MEM:-4096} tests/tools/run.sh --results build/serve serve

.PHONY: coverage
coverage: deps ## Build every step with gcov counters into build/coverage/bin (test-faults runs it)
	@$(MAKE) --no-print-directory BUILD=build/coverage COVERAGE=1 all

.PHONY: demo
demo: deps all nocuda ## Run every command block of the book, chapter by chapter in book/chapters.txt order, over soft-RoCE (natively or in the VM)
	@tests/tools/run.sh demo

.PHONY: shell
shell: DEPS_SET := $(if $(filter 2 3 4,$(NODES)),wire,all)
shell: deps all nocuda ## A root shell in the soft-RoCE VM, with rxe0 up, to run the book's commands by hand; NODES=2 to 4: that many nodes on one wire, network namespaces of one VM booting Linux 7.x, side by side in tmux
	@$(if $(filter 2 3 4,$(NODES)),RDMA_VM_KERNEL=$${RDMA_VM_KERNEL-$(NODES_KERNEL)}) tests/tools/run.sh shell $(NODES)

.PHONY: vm
vm: deps ## Fetch Debian's kernel and build the test VM's initramfs under build/vm (done by test and demo)
	@tests/vm/prepare.sh $(VM_DIR)

.PHONY: sanitize
sanitize: deps ## Build every step with ASan and UBSan into build/sanitize/bin
	@$(MAKE) --no-print-directory BUILD=build/sanitize SANITIZE=1 all

.PHONY: test-sanitize
test-sanitize: deps all nocuda sanitize ## Run the bats suite against the sanitizer build
	@RDMA_STEPS_BIN=build/sanitize/bin tests/tools/run.sh test $(TESTS)

include tests/fuzz/fuzz.mk

# The Debian releases make fresh-machine checks: FRESH_RELEASES=trixie for one only.
FRESH_RELEASES ?= bookworm trixie

.PHONY: fresh-machine
fresh-machine: ## As root: run README's quick start in minimal Debian 12 and 13 roots, first time (FRESH_RELEASES=trixie: one)
	@FRESH_RELEASES='$(FRESH_RELEASES)' tests/tools/fresh-machine.sh

.PHONY: lint
lint: deps ## Check the shell scripts with shellcheck
	shellcheck -x .ci/run tests/tools/*.sh tests/bench/*.sh tests/bench/nodes/*.sh tests/exercise/*.sh tests/vm/*.sh tests/vm/initramfs-init tests/wire/*.sh tests/nodes/*.sh tests/lossy/*.sh tests/zerocopy/*.sh steps/07_allreduce/train/*.sh steps/10_weight_sync/serve/*.sh

.PHONY: diagrams
diagrams: deps ## Re-render the SVGs in diagrams/ from their .dot sources, English and Chinese (needs graphviz and fonts-wqy-microhei)
	@for dot in diagrams/*.dot; do \
		svg=$${dot%.dot}.svg; \
		dot -Tsvg -o "$$svg.tmp" "$$dot" && mv "$$svg.tmp" "$$svg" || { rm -f "$$svg.tmp"; exit 1; }; \
		echo "diagrams: $$svg"; \
	done

.PHONY: tutorial-diffs
tutorial-diffs: ## Regenerate the book's generated parts, both languages: each step chapter's "what changed" diff and "The verbs code", and every chapter's links to the chapters beside it
	@tests/tools/tutorial-diffs.sh

.PHONY: clean
clean: ## Remove compiled programs and objects (keeps the VM's kernel cache)
	rm -rf build/bin build/tools build/obj build/lib build/pic build/sanitize build/nocuda build/coverage build/test-results

.PHONY: distclean
distclean: ## Remove everything built, the VM's kernel cache included
	rm -rf build

.PHONY: help
help: ## List the targets
	@echo "Targets (variables: TESTS=tests/NN_x.bats to run some tests, RDMA_TEST_MODE=native|vm):"
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  \1\t\2/' | expand -t 18
	@echo "Slow checks (results in $(SLOW_RESULTS)/NAME/; .ci/run runs them all):"
	@$(foreach c,$(SLOW_CHECKS),printf '  %s\t%s\n' $(c) "$(or $(slow_help_$(c)),$$(sed -n '2s/^# [^:]*: //p' $(firstword $(slow_files_$(c)))))" | expand -t 18;)
