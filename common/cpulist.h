/* CPU lists as people write them ("2", "0-3,8", "all"), for the client's
 * progress_cpus setting: where the progress thread may run. */
#ifndef RPFS_CPULIST_H
#define RPFS_CPULIST_H

/* Users define _GNU_SOURCE first (cpu_set_t). */
#include <sched.h>

/* Parse text into set: "all" sets every CPU the mask can hold (the kernel
 * keeps those the process may use); otherwise comma-separated CPU numbers
 * and ranges lo-hi (lo <= hi), each below CPU_SETSIZE. Returns 0, or
 * -EINVAL for anything else (an empty string included). */
int cpulist_parse(const char *text, cpu_set_t *set);

/* set as a list ("0-3,8"); "" when it is empty. Truncated to len. */
void cpulist_format(const cpu_set_t *set, char *buf, size_t len);

#endif
