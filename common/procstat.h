/* procstat.h: the process's own figures, as the kernel keeps them in /proc/self/status (memory) and /proc/self/io (system calls). */
#ifndef RDMA_STEPS_PROCSTAT_H
#define RDMA_STEPS_PROCSTAT_H

/* The "FIELD: N kB" line of /proc/self/status (VmPin, VmRSS, ...), in kB; -1 if absent. */
long proc_status_kb(const char *field);

/*
 * The "FIELD: N" line of /proc/self/io: syscr and syscw count the read and
 * write system calls the process has made (write, writev, pwrite, ...); -1
 * if absent (a kernel without task I/O accounting).
 */
long proc_io_count(const char *field);

#endif
