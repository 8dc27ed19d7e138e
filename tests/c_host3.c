/* A minimal FMI 3.0 co-simulation host in C, the counterpart of c_host.c (FMI 2.0): dlopen the
 * binary, fmi3InstantiateCoSimulation, initialise, then per step set the inputs, fmi3DoStep and
 * read the outputs; every row is printed as "t v1 v2 ..." with 17 significant digits, as
 * c_host.c prints them, so that the two hosts' outputs compare as text.
 *
 * usage: c_host3 BINARY RESOURCE_PATH TOKEN STEP NSTEPS NIN VR_IN... VALUE_IN... NOUT VR_OUT...
 * The inputs are held constant. Besides the rows, it checks what fmi3DoStep must write on every
 * return (Modelica Association, "Functional Mock-up Interface Specification 3.0", 2022, section
 * 4.2.1): no event, no termination, no early return, lastSuccessfulTime the end of the step.
 * Exit status: 0 ok, 2 usage, 3 load, 4 instantiate, 5 a call failed, 6 a wrong out-argument. */

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_args.h"

typedef void *Inst;
typedef void (*Log)(void *, int, const char *, const char *);
typedef Inst (*Instantiate)(const char *, const char *, const char *, bool, bool, bool, bool, const uint32_t *,
                            size_t, void *, Log, void *);
typedef int (*EnterInit)(Inst, bool, double, double, bool, double);
typedef int (*Call)(Inst);
typedef int (*SetF64)(Inst, const uint32_t *, size_t, const double *, size_t);
typedef int (*GetF64)(Inst, const uint32_t *, size_t, double *, size_t);
typedef int (*DoStep)(Inst, double, double, bool, bool *, bool *, bool *, double *);
typedef void (*Free)(Inst);

static void logger(void *env, int status, const char *category, const char *message)
{
    (void)env;
    fprintf(stderr, "[%d|%s] %s\n", status, category ? category : "", message);
}

int main(int argc, char **argv)
{
    static HostArgs a;
    if (!host_args(argc, argv, &a)) return 2;
    void *lib = load_binary(argv[1]);
    if (!lib) return 3;
    double y[256];

    NEED(instantiate, Instantiate, "fmi3InstantiateCoSimulation")
    NEED(enter, EnterInit, "fmi3EnterInitializationMode")
    NEED(exit_, Call, "fmi3ExitInitializationMode")
    NEED(setF64, SetF64, "fmi3SetFloat64")
    NEED(getF64, GetF64, "fmi3GetFloat64")
    NEED(doStep, DoStep, "fmi3DoStep")
    NEED(terminate, Call, "fmi3Terminate")
    NEED(freeInstance, Free, "fmi3FreeInstance")

    Inst c = instantiate("c_host3", argv[3], argv[2], false, false, false, false, NULL, 0, NULL, logger, NULL);
    if (!c) return 4;
    if (enter(c, false, 0.0, 0.0, false, 0.0) || setF64(c, a.vin, a.nin, a.uin, a.nin) || exit_(c)) return 5;
    double t = 0.0;
    for (int s = 0; s <= a.nsteps; s++) {
        if (getF64(c, a.vout, a.nout, y, a.nout)) return 5;
        print_row(t, y, a.nout);
        if (s == a.nsteps) break;
        bool event = true, stop = true, early = true;
        double last = -1.0;
        if (setF64(c, a.vin, a.nin, a.uin, a.nin) || doStep(c, t, a.h, true, &event, &stop, &early, &last)) return 5;
        if (event || stop || early || last != t + a.h) {
            fprintf(stderr, "fmi3DoStep wrote event %d, terminate %d, early return %d, last successful time %.17g "
                    "after a step from %.17g by %.17g\n", event, stop, early, last, t, a.h);
            return 6;
        }
        t = (s + 1) * a.h;
    }
    if (terminate(c)) return 5;
    freeInstance(c);
    dlclose(lib);
    return 0;
}
