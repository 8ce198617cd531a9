/* SPDX-License-Identifier: MIT */
/* openmp: the body of a `#pragma omp parallel` runs on every thread of the team as an outlined
 * function the compiler made (GCC: work._omp_fn.0, clang: .omp_outlined.). Both plugins charge
 * it to the enclosing function: one work pair per thread that runs the region, on the worker
 * as on the thread that forked it (there nested in its own pair). The worker is named by a
 * first, uninstrumented region (the team's threads are kept for the next one). */
/* perfgroup-cflags: -fopenmp */
#include <perfgroup.h>
#include <stdio.h>

/* Declared here, not by <omp.h>: only the one installed libomp-N-dev ships clang's omp.h. */
int omp_get_thread_num(void);

static void name_threads(void)
{
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1)
            perfgroup_thread_name("worker");
    }
}

PERF_GROUP("par") long work(int n)
{
    long s = 0;
#pragma omp parallel for reduction(+ : s) num_threads(2) schedule(static)
    for (int i = 0; i < n; i++)
        s += i;
    return s;
}

int main(void)
{
    name_threads();
    printf("%ld\n", work(1000));
    return 0;
}
