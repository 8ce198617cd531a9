/* SPDX-License-Identifier: MIT */
/* probe.h: preprocessed with -E; the output shows what the preprocessor knows. */
PG_MACRO=__PERFGROUP__ PG_HAS_ATTR=__has_attribute(perf_group)
