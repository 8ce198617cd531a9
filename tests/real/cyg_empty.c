/* SPDX-License-Identifier: MIT */
/* tests/real/cyg_empty.c — -finstrument-functions hooks that return at once, in a shared
 * library as perfgroup's runtime is: the "-finstrument-functions" baseline of the real-project
 * benchmarks (bench/real_projects.py). Never compiled with -finstrument-functions itself. */
__attribute__((visibility("default"), no_instrument_function))
void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)fn, (void)site;
}

__attribute__((visibility("default"), no_instrument_function))
void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn, (void)site;
}
