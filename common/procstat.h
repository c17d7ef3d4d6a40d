/* procstat.h: the process's own memory figures, as the kernel keeps them in /proc/self/status. */
#ifndef RDMA_STEPS_PROCSTAT_H
#define RDMA_STEPS_PROCSTAT_H

/* The "FIELD: N kB" line of /proc/self/status (VmPin, VmRSS, ...), in kB; -1 if absent. */
long proc_status_kb(const char *field);

#endif
