/* A minimal FMI 2.0 co-simulation host in C, as Dymola, OpenModelica or Simulink load an FMU:
 * dlopen the binary, instantiate, initialise, then per step set the inputs, doStep and read
 * the outputs; every row is printed as "t v1 v2 ..." with 17 significant digits.
 *
 * usage: c_host [-t] BINARY RESOURCE_URI GUID STEP NSTEPS NIN VR_IN... VALUE_IN... NOUT VR_OUT...
 * The inputs are held constant. With -t nothing is printed per row; the CPU time of the steps
 * after the first (get outputs, set inputs, doStep; the first step loads the compiled kernels)
 * is printed as "elapsed SECONDS STEPS" (benchmarks/fmu_overhead.py).
 * Exit status: 0 ok, 2 usage, 3 load, 4 instantiate, 5 a call failed. */

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmi2_host.h"
#include "host_args.h"


static void logger(void *env, const char *name, int status, const char *category, const char *message, ...)
{
    (void)env;
    fprintf(stderr, "[%s|%d|%s] %s\n", name, status, category ? category : "", message);
}

typedef Comp (*Instantiate)(const char *, int, const char *, const char *, const Callbacks *, int, int);
typedef int (*Setup)(Comp, int, double, double, int, double);
typedef int (*Call)(Comp);
typedef int (*SetReal)(Comp, const unsigned *, size_t, const double *);
typedef int (*GetReal)(Comp, const unsigned *, size_t, double *);
typedef int (*DoStep)(Comp, double, double, int);
typedef void (*Free)(Comp);

int main(int argc, char **argv)
{
    int timing = argc > 1 && strcmp(argv[1], "-t") == 0;
    if (timing) argv++, argc--;
    static HostArgs a;
    if (!host_args(argc, argv, &a)) return 2;
    void *lib = load_binary(argv[1]);
    if (!lib) return 3;
    double y[256];

    NEED(instantiate, Instantiate, "fmi2Instantiate")
    NEED(setup, Setup, "fmi2SetupExperiment")
    NEED(enter, Call, "fmi2EnterInitializationMode")
    NEED(exit_, Call, "fmi2ExitInitializationMode")
    NEED(setReal, SetReal, "fmi2SetReal")
    NEED(getReal, GetReal, "fmi2GetReal")
    NEED(doStep, DoStep, "fmi2DoStep")
    NEED(terminate, Call, "fmi2Terminate")
    NEED(freeInstance, Free, "fmi2FreeInstance")

    Callbacks cb = {logger, calloc, free, NULL, NULL};
    Comp c = instantiate("c_host", 1, argv[3], argv[2], &cb, 0, 0);
    if (!c) return 4;
    if (setup(c, 0, 0.0, 0.0, 0, 0.0) || enter(c) || setReal(c, a.vin, a.nin, a.uin) || exit_(c)) return 5;
    double t = 0.0;
    struct timespec t0, t1;
    for (int s = 0; s <= a.nsteps; s++) {
        if (s == 1) clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
        if (getReal(c, a.vout, a.nout, y)) return 5;
        if (!timing) print_row(t, y, a.nout);
        if (s == a.nsteps) break;
        if (setReal(c, a.vin, a.nin, a.uin) || doStep(c, t, a.h, 1)) return 5;
        t = (s + 1) * a.h;
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    if (timing && a.nsteps > 1)
        printf("elapsed %.9f %d\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
               a.nsteps - 1);
    if (terminate(c)) return 5;
    freeInstance(c);
    dlclose(lib);
    return 0;
}
