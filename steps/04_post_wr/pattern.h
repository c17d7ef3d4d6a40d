/* pattern.h: stage 4's data check: fill a buffer with a seeded pattern, and check or count the bytes that hold it. */
#ifndef RDMA_STEPS_PATTERN_H
#define RDMA_STEPS_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a READ's initiator fills its buffer with first; it differs from the target's seed 0 in every byte. */
#define READ_POISON_SEED 0x80

/*
 * Byte i of the pattern for SEED is (SEED + 7i + i/256) mod 256.  The i/256
 * term keeps the pattern from repeating every 256 bytes, so a block that
 * landed at the wrong offset fails the check too.
 */
void fill_pattern(void *buf, size_t len, uint8_t seed);

/* Byte I of the pattern for SEED: where a byte that failed the check belongs. */
uint8_t pattern_byte_at(size_t i, uint8_t seed);

/* Whether all LEN bytes hold the pattern for SEED; the first byte that does not is named. */
bool check_pattern(const void *buf, size_t len, uint8_t seed);

/* How many of bytes FROM to TO-1 of BUF no longer hold the pattern for SEED. */
size_t count_pattern_changes(const void *buf, size_t from, size_t to, uint8_t seed);

#endif
