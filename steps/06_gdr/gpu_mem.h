/* gpu_mem.h: GPU memory for step 06: real (CUDA runtime) where a GPU and driver exist, emulated otherwise. */
#ifndef RDMA_STEPS_GPU_MEM_H
#define RDMA_STEPS_GPU_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_COPIES 4

/* The extra copies one side made on one path, counted where each copy happens. */
struct copy_count {
	int n;
	const char *what[MAX_COPIES];
	size_t bytes;
};

void copy_count_add(struct copy_count *c, const char *what, size_t bytes);

struct gpu {
	bool emulated;		/* no CUDA device: a host buffer stands in for GPU memory */
	char why[160];		/* why emulated, or which device is used */
	int device;
};

/* Finds a CUDA device; without one (no toolkit at build time, no driver, no GPU) emulates. */
void gpu_open(struct gpu *g);

/* Allocates LEN bytes of (real or emulated) GPU memory; returns NULL after reporting. */
void *gpu_alloc(struct gpu *g, size_t len);
void gpu_free(struct gpu *g, void *dev_ptr);

/* The copies the TCP and RDMA paths need, each counted in C. */
int gpu_to_host(struct gpu *g, void *host, const void *dev_ptr, size_t len, struct copy_count *c);
int host_to_gpu(struct gpu *g, void *dev_ptr, const void *host, size_t len, struct copy_count *c);

/* Set-up and verification, not part of any transfer and not counted. */
int gpu_fill_pattern(struct gpu *g, void *dev_ptr, size_t len, uint8_t seed);
bool gpu_check_pattern(struct gpu *g, const void *dev_ptr, size_t len, uint8_t seed);

/* A DMA-BUF file descriptor for [base, base+len) of GPU memory, or -1 with the reason in WHY. */
int gpu_dmabuf_fd(struct gpu *g, void *base, size_t len, char *why, size_t why_len);

/* The alignment a DMA-BUF range must have. */
#define GPU_PAGE_SIZE ((size_t)65536)

#endif
