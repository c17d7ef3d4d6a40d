/* procstat.h: the process's own figures, as the kernel keeps them in /proc/self/status (memory), /proc/self/io (system calls) and /proc/self/smaps (a mapping's flags), and which pages of a range are present (mincore). */
#ifndef RDMA_STEPS_PROCSTAT_H
#define RDMA_STEPS_PROCSTAT_H

#include <stddef.h>

/* The "FIELD: N kB" line of /proc/self/status (VmPin, VmRSS, ...), in kB; -1 if absent. */
long proc_status_kb(const char *field);

/*
 * The "FIELD: N" line of /proc/self/io: syscr and syscw count the read and
 * write system calls the process has made (write, writev, pwrite, ...); -1
 * if absent (a kernel without task I/O accounting).
 */
long proc_io_count(const char *field);

/*
 * Whether the mapping that holds ADDR carries FLAG among its VmFlags in
 * /proc/self/smaps (two letters: "dc" is VM_DONTCOPY, what MADV_DONTFORK
 * sets): 1 or 0; -1 if no mapping holds ADDR or smaps cannot be read.
 */
int proc_vma_has_flag(const void *addr, const char *flag);

/*
 * How many of the pages of the LEN bytes at ADDR (page-aligned) are present
 * in memory, as mincore(2) reports them: a page of an anonymous mapping
 * that nothing has touched yet is not; -1 if mincore fails.
 */
long resident_pages(void *addr, size_t len);

#endif
