/* SPDX-License-Identifier: MIT */
/* bench/peers/cyg_empty.c — -finstrument-functions hooks that return at once, in their own
 * shared library (called through the PLT, like perfgroup's runtime). */
__attribute__((visibility("default"), no_instrument_function)) void
__cyg_profile_func_enter(void *fn, void *site) { (void)fn, (void)site; }
__attribute__((visibility("default"), no_instrument_function)) void
__cyg_profile_func_exit(void *fn, void *site) { (void)fn, (void)site; }
