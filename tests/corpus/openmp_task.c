/* SPDX-License-Identifier: MIT */
/* openmp_task: a `task`'s body, a `taskloop`'s and a host `teams` construct's are outlined too
 * (GCC: spawn._omp_fn.N run by GOMP_task / GOMP_taskloop, league._omp_fn.N by GOMP_teams_reg;
 * clang: a task entry handed to __kmpc_omp_task_alloc, an outlined body to __kmpc_fork_teams). Both plugins charge
 * them to the enclosing function: one pair per task run, one per team, on the thread that runs
 * it. A team of one thread and a league of one team keep every pair on main, in one order
 * whatever the runtime defers: each task's pair (3 tasks, then a taskloop of 2) nests in the
 * parallel region's, which nests in spawn's own. */
/* perfgroup-cflags: -fopenmp */
#include <perfgroup.h>
#include <stdio.h>

PERF_GROUP("tasks") long spawn(int n)
{
    long s = 0;
#pragma omp parallel num_threads(1) shared(s)
#pragma omp single
    {
        for (int i = 0; i < n; i++) {
#pragma omp task shared(s) firstprivate(i)
            {
#pragma omp atomic
                s += i;
            }
        }
#pragma omp taskwait
#pragma omp taskloop num_tasks(2) shared(s)
        for (int i = 0; i < 4; i++) {
#pragma omp atomic
            s += i;
        }
    }
    return s;
}

PERF_GROUP("league") long league(void)
{
    long s = 0;
#pragma omp teams num_teams(1) reduction(+ : s)
    s += 1;
    return s;
}

int main(void)
{
    long a = spawn(3), b = league();
    printf("%ld %ld\n", a, b);
    return a == 9 && b == 1 ? 0 : 1;
}
