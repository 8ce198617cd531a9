/* SPDX-License-Identifier: MIT */
/* bench/emptyhooks.c — hooks that return at once, in their own shared library like the
 * runtime: the baseline "(a) switch off" is compared with. */
#include <stdint.h>
struct perfgroup_site;
__attribute__((visibility("default"))) uint64_t empty_enter(struct perfgroup_site *s) { (void)s; return 0; }
__attribute__((visibility("default"))) void empty_exit(struct perfgroup_site *s, uint64_t t) { (void)s, (void)t; }
