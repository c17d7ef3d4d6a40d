#!/usr/bin/env bats
# soak.bats: step 05 for SOAK_ITERS round trips (default 100,000), busy-polled and event-driven ('make soak').
# Slow: 'make test' runs no soak; .ci/run runs this one.

setup() {
	load ../lib/test_helper
	load ../lib/soak
	SOAK_ITERS=${SOAK_ITERS:-100000}
	# A long run outlives the suite's per-program limit.
	STEP_TIMEOUT=${SOAK_TIMEOUT:-1200}
}

@test "soak: SOAK_ITERS round trips (default 100,000), busy polling: no completion fails, RSS stays flat, nothing leaks" {
	soak_run "${SOAK_ITERS:-100000}" busy
}

@test "soak: SOAK_ITERS round trips (default 100,000), event-driven: no completion fails, RSS stays flat, nothing leaks" {
	soak_run "${SOAK_ITERS:-100000}" events
}
