/* SPDX-License-Identifier: MIT */
/* comdat.h: functions every unit that uses them emits (a COMDAT group each), for comdat.cc and
 * comdat_b.cxx. */
inline int twice(int x) { return 2 * x; }
template <int N> int scale(int x) { return N * x; }
int from_b(int x);
