/* gpu_mem.c: GPU memory for step 06: real (CUDA runtime) where a GPU and driver exist, emulated otherwise. */
#include "gpu_mem.h"
#include "pattern.h"
#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

void copy_count_add(struct copy_count *c, const char *what, size_t bytes)
{
	if (c->n < MAX_COPIES)
		c->what[c->n] = what;
	c->n++;
	c->bytes += bytes;
}

#ifdef HAVE_CUDA
static bool cuda_failed(const char *call, cudaError_t rc)
{
	if (rc == cudaSuccess)
		return false;
	report_error("%s failed: %s (CUDA error %d)", call, cudaGetErrorString(rc), (int)rc);
	return true;
}
#endif

void gpu_open(struct gpu *g)
{
	*g = (struct gpu){ .emulated = true };
#ifdef HAVE_CUDA
	int count = 0;
	cudaError_t rc = cudaGetDeviceCount(&count);
	struct cudaDeviceProp prop;

	if (rc != cudaSuccess) {
		snprintf(g->why, sizeof(g->why), "cudaGetDeviceCount: %s (CUDA error %d)",
			 cudaGetErrorString(rc), (int)rc);
		return;
	}
	if (count == 0) {
		snprintf(g->why, sizeof(g->why), "the CUDA driver sees no GPU");
		return;
	}
	if (cudaSetDevice(0) != cudaSuccess || cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
		snprintf(g->why, sizeof(g->why), "CUDA device 0 cannot be used");
		return;
	}
	g->emulated = false;
	snprintf(g->why, sizeof(g->why), "CUDA device 0: %.120s", prop.name);
#else
	snprintf(g->why, sizeof(g->why), "this build has no CUDA: no toolkit at build time, or CUDA=0");
#endif
}

void *gpu_alloc(struct gpu *g, size_t len)
{
	void *p = NULL;

	if (g->emulated) {
		/* A separate host buffer: only the emulated copies and the NIC touch it. */
		if (posix_memalign(&p, GPU_PAGE_SIZE, len)) {
			report_verb_error("posix_memalign (emulated GPU memory)", ENOMEM);
			return NULL;
		}
		memset(p, 0, len);
		return p;
	}
#ifdef HAVE_CUDA
	if (cuda_failed("cudaMalloc", cudaMalloc(&p, len)))
		return NULL;
#endif
	return p;
}

void gpu_free(struct gpu *g, void *dev_ptr)
{
	if (!dev_ptr)
		return;
	if (g->emulated) {
		free(dev_ptr);
		return;
	}
#ifdef HAVE_CUDA
	cuda_failed("cudaFree", cudaFree(dev_ptr));
#endif
}

/* One copy between "GPU" and host memory: cudaMemcpy, or memcpy in emulation. */
static int copy(struct gpu *g, void *dst, const void *src, size_t len, bool to_gpu)
{
	if (g->emulated) {
		memcpy(dst, src, len);
		return 0;
	}
#ifdef HAVE_CUDA
	if (cuda_failed("cudaMemcpy", cudaMemcpy(dst, src, len, to_gpu ? cudaMemcpyHostToDevice
									 : cudaMemcpyDeviceToHost)))
		return -1;
	/*
	 * From pageable host memory, cudaMemcpy may return once the bytes are
	 * staged, before they land in GPU memory.  CUDA's own later work would
	 * be ordered after the copy; the NIC is not, so wait for the copy.
	 */
	return to_gpu && cuda_failed("cudaDeviceSynchronize", cudaDeviceSynchronize()) ? -1 : 0;
#else
	(void)to_gpu;
	report_error("real GPU memory needs a build with CUDA");
	return -1;
#endif
}

int gpu_to_host(struct gpu *g, void *host, const void *dev_ptr, size_t len, struct copy_count *c)
{
	if (copy(g, host, dev_ptr, len, false))
		return -1;
	copy_count_add(c, g->emulated ? "GPU->host (emulated cudaMemcpy)" : "GPU->host (cudaMemcpy)", len);
	return 0;
}

int host_to_gpu(struct gpu *g, void *dev_ptr, const void *host, size_t len, struct copy_count *c)
{
	if (copy(g, dev_ptr, host, len, true))
		return -1;
	copy_count_add(c, g->emulated ? "host->GPU (emulated cudaMemcpy)" : "host->GPU (cudaMemcpy)", len);
	return 0;
}

int gpu_fill_pattern(struct gpu *g, void *dev_ptr, size_t len, uint8_t seed)
{
	void *tmp;
	int rc;

	if (g->emulated) {
		fill_pattern(dev_ptr, len, seed);
		return 0;
	}
	tmp = malloc(len);
	if (!tmp) {
		report_verb_error("malloc", ENOMEM);
		return -1;
	}
	fill_pattern(tmp, len, seed);
	rc = copy(g, dev_ptr, tmp, len, true);
	free(tmp);
	return rc;
}

bool gpu_check_pattern(struct gpu *g, const void *dev_ptr, size_t len, uint8_t seed)
{
	void *tmp;
	bool ok;

	if (g->emulated)
		return check_pattern(dev_ptr, len, seed);
	tmp = malloc(len);
	if (!tmp) {
		report_verb_error("malloc", ENOMEM);
		return false;
	}
	ok = !copy(g, tmp, dev_ptr, len, false) && check_pattern(tmp, len, seed);
	free(tmp);
	return ok;
}

int gpu_dmabuf_fd(struct gpu *g, void *base, size_t len, char *why, size_t why_len)
{
#ifdef HAVE_CUDA
	typedef CUresult (*get_handle_fn)(void *, CUdeviceptr, size_t, CUmemRangeHandleType,
					  unsigned long long);
	enum cudaDriverEntryPointQueryResult found;
	get_handle_fn get_handle = NULL;
	CUresult rc;
	int fd = -1;

	if (g->emulated) {
		snprintf(why, why_len, "emulated GPU memory has no DMA-BUF");
		return -1;
	}
	/* Through the runtime's driver entry point: no link-time dependency on libcuda. */
#if CUDART_VERSION >= 12050
	if (cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", (void **)&get_handle,
					     11070, cudaEnableDefault, &found) != cudaSuccess ||
#else
	if (cudaGetDriverEntryPoint("cuMemGetHandleForAddressRange", (void **)&get_handle,
				    cudaEnableDefault, &found) != cudaSuccess ||
#endif
	    found != cudaDriverEntryPointSuccess || !get_handle) {
		snprintf(why, why_len, "this driver has no cuMemGetHandleForAddressRange");
		return -1;
	}
	rc = get_handle(&fd, (CUdeviceptr)(uintptr_t)base, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (rc != CUDA_SUCCESS) {
		snprintf(why, why_len, "cuMemGetHandleForAddressRange failed (CUresult %d): the "
			 "driver or kernel has no DMA-BUF export", (int)rc);
		return -1;
	}
	return fd;
#else
	(void)g;
	(void)base;
	(void)len;
	snprintf(why, why_len, "built without CUDA");
	return -1;
#endif
}
