/* SPDX-License-Identifier: MIT */
/* sysh.h: included through -isystem, so its functions are "from a system header". */
static inline int sys_helper(int x) { return x * 7; }
